-- Storing a proof and moving its request on (store/completion.go).

-- name: LockRequestState :one
SELECT state FROM cuzk.proof_requests WHERE request_id = $1 FOR UPDATE;

-- name: StoredProofOrigin :one
SELECT attempt, worker FROM cuzk.proofs WHERE request_id = $1;

-- name: MarkRequestSucceeded :exec
-- $2: scrub the private inputs.
UPDATE cuzk.proof_requests
   SET state = 'succeeded', last_error = NULL, finished_at = now(), updated_at = now(),
       inputs = CASE WHEN $2 THEN NULL ELSE inputs END,
       witness = CASE WHEN $2 THEN NULL ELSE witness END,
       inputs_scrubbed_at = CASE WHEN $2 THEN now() ELSE inputs_scrubbed_at END
 WHERE request_id = $1;

-- name: InsertProof :exec
INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend, key_version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (request_id) DO NOTHING;

-- name: SetRequestOutcome :exec
-- A cancelled request stays cancelled; an attempt a later one superseded changes nothing.
UPDATE cuzk.proof_requests r
   SET state = $2, last_error = $3, updated_at = now(),
       finished_at = CASE WHEN $2 = 'failed' THEN now() ELSE NULL END
 WHERE r.request_id = $1 AND r.state = 'running'
   AND NOT EXISTS (SELECT 1 FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id AND a.attempt > $4);

-- name: DiscardJob :exec
UPDATE public.river_job
   SET state = 'discarded', finalized_at = now(),
       errors = array_append(errors, jsonb_build_object('at', $3::timestamptz, 'attempt', $2::int, 'error', $4::text, 'trace', ''))
 WHERE id = $1 AND state = 'running' AND attempt = $2;

-- name: HandBack :exec
UPDATE cuzk.proof_requests r
   SET state = 'queued', attempts = greatest(r.attempts - 1, 0), last_error = $3, updated_at = now()
 WHERE r.request_id = $1 AND r.state = 'running'
   AND NOT EXISTS (SELECT 1 FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id AND a.attempt > $2);
