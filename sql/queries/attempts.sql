-- Attempts: claiming a request for an attempt and recording how it ended (store/attempts.go).

-- name: ClaimWithoutFlushWait :exec
-- The claim need not wait for its WAL flush: River's fetch, which commits
-- synchronously, already made the job running.
SET LOCAL synchronous_commit = off;

-- name: LockRequestForAttempt :one
SELECT id, request_id, circuit, inputs::text, witness, partitions, priority, max_attempts, attempts, state, created_at
  FROM cuzk.proof_requests WHERE request_id = $1 FOR UPDATE;

-- name: NextAttemptNumber :one
SELECT coalesce(max(attempt), 0) + 1 FROM cuzk.proof_attempts WHERE request_id = $1;

-- name: InterruptRunningAttempts :exec
UPDATE cuzk.proof_attempts
   SET outcome = 'interrupted', finished_at = now(),
       error = coalesce(error, 'worker stopped during the attempt (rescued)')
 WHERE request_id = $1 AND outcome = 'running';

-- name: MarkRequestRunning :exec
UPDATE cuzk.proof_requests SET state = 'running', attempts = $2, updated_at = now()
 WHERE id = $1;

-- name: InsertAttempt :one
-- queue_ms is measured by the database's clock, from the time the job was queued ($9).
INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, job_id, worker, build, config_hash, config,
                                 started_at, queue_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
        now(), greatest(0, extract(epoch FROM now() - $9::timestamptz) * 1000))
RETURNING queue_ms;

-- name: FinishAttempt :exec
-- Every phase column but queue_ms, in the order of package phase ($14 on).
UPDATE cuzk.proof_attempts SET
    outcome = $3, error = $4, backend = $5, device = $6, batch_id = $7, batch_size = $8,
    mem_reserved_bytes = $9, synth_started_at = $10, prove_started_at = $11,
    finished_at = coalesce($12, now()), telemetry = $13,
    batch_wait_ms = $14, mem_wait_ms = $15, srs_ms = $16, synth_ms = $17, prove_wait_ms = $18,
    prove_ms = $19, h2d_ms = $20, ntt_ms = $21, msm_ms = $22, msm_g1_ms = $23, msm_g2_ms = $24,
    verify_ms = $25, persist_ms = $26, total_ms = $27
 WHERE request_id = $1 AND attempt = $2;
