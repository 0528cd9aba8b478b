-- Proof requests: submitting, following, retrying and cancelling them (store/requests.go).

-- name: FailOrphanedRequests :many
-- Requests whose River job was discarded while they still looked alive.
UPDATE cuzk.proof_requests r
   SET state = 'failed', finished_at = now(), updated_at = now(),
       last_error = 'no attempts left: the worker of the last attempt stopped without finishing it'
  FROM public.river_job j
 WHERE j.id = r.job_id AND j.state = 'discarded' AND r.state IN ('queued', 'running')
RETURNING r.request_id;

-- name: InterruptOrphanedAttempts :exec
UPDATE cuzk.proof_attempts
   SET outcome = 'interrupted', finished_at = now(),
       error = coalesce(error, 'worker stopped during the attempt (no attempts left)')
 WHERE request_id = ANY($1) AND outcome = 'running';

-- name: QueuedCircuits :many
SELECT r.circuit FROM cuzk.proof_requests r JOIN cuzk.circuits c ON c.name = r.circuit
 WHERE r.state = 'queued'
 GROUP BY r.circuit ORDER BY min(r.priority), min(r.created_at);

-- name: Submit :one
-- NULL priority or max_attempts: the defaults of cuzk.submit_proof's signature.
SELECT cuzk.submit_proof(request_id => $1, circuit => $2, inputs => $3::jsonb, witness => $4,
                         priority => coalesce($5::int, 2), max_attempts => coalesce($6::int, 5));

-- name: RequestState :one
SELECT state, last_error FROM cuzk.proof_status WHERE request_id = $1;

-- name: Statuses :many
-- $1: the request ids (all when empty); $2: the state ('' for any); $3: how many.
SELECT request_id, circuit, state, attempts, coalesce(last_error, ''), created_at, finished_at
  FROM cuzk.proof_status
 WHERE (coalesce(cardinality($1::text[]), 0) = 0 OR request_id = ANY($1))
   AND ($2 = '' OR state = $2)
 ORDER BY created_at DESC LIMIT $3;

-- name: FailedSince :many
SELECT request_id FROM cuzk.proof_status
 WHERE state = 'failed' AND finished_at >= now() - $1::interval ORDER BY finished_at;

-- name: Retry :one
SELECT cuzk.retry_proof($1);

-- name: Cancel :one
-- The function's own change is not visible to this statement's view of the state.
SELECT cuzk.cancel_proof($1), coalesce((SELECT state FROM cuzk.proof_status WHERE request_id = $1), '');

-- name: RequestCounts :one
SELECT count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'cancelled')),
       count(*) FILTER (WHERE state = 'failed')
  FROM cuzk.proof_status;
