-- River's own tables, read where River's API has no call for it, and the queue's
-- maintenance functions (store/queue.go).

-- name: CancelRequested :one
SELECT metadata ? 'cancel_attempted_at', state = 'running'
  FROM public.river_job WHERE id = $1 AND queue = $2;

-- name: QueuePaused :one
SELECT paused_at IS NOT NULL FROM public.river_queue WHERE name = $1;

-- name: QueueJobs :one
-- One row; the partial sums keep it to one index scan of river_job's (state, queue, ...) index.
SELECT count(*) FILTER (WHERE state = 'available'),
       count(*) FILTER (WHERE state = 'running'),
       count(*) FILTER (WHERE state = 'scheduled'),
       count(*) FILTER (WHERE state = 'retryable'),
       count(*) FILTER (WHERE state = 'pending')
  FROM public.river_job
 WHERE queue = $1 AND state IN ('available', 'running', 'scheduled', 'retryable', 'pending');

-- name: RepairJobs :many
SELECT request_id, job_id, action FROM cuzk.repair_jobs();

-- name: AdmitWaiting :one
SELECT cuzk.admit_waiting();

-- name: ScrubEndedInputs :one
SELECT cuzk.scrub_ended_inputs($1);
