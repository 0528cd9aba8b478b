-- River's own tables, read (and claimed from) where River's API has no call for it, and
-- the queue's maintenance functions (store/queue.go).

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

-- name: ClaimJobsExcept :many
-- River's fetch (the JobGetAvailable of riverpgxv5 v0.51: due, available jobs of queue
-- $1 by priority, locked as running for River client $2, attempted_by kept to its last
-- $4 entries), of at most $3 jobs, at $5 (NULL: now()), of kinds $7 (NULL: any), leaving
-- out the jobs $6.
WITH locked AS (
    SELECT id FROM public.river_job
     WHERE state = 'available' AND queue = $1
       AND ($7::text[] IS NULL OR kind = ANY($7::text[]))
       AND scheduled_at <= coalesce($5::timestamptz, now())
       AND id <> ALL(coalesce($6::bigint[], '{}'))
     ORDER BY priority, scheduled_at, id
     LIMIT $3
       FOR UPDATE SKIP LOCKED)
UPDATE public.river_job j
   SET state = 'running', attempt = j.attempt + 1,
       attempted_at = coalesce($5::timestamptz, now()),
       attempted_by = array_append(
           CASE WHEN array_length(j.attempted_by, 1) >= $4::int
                THEN j.attempted_by[array_length(j.attempted_by, 1) + 2 - $4::int:]
                ELSE j.attempted_by END,
           $2::text)
  FROM locked
 WHERE j.id = locked.id
RETURNING j.id;
