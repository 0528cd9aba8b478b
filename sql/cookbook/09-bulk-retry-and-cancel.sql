-- as the operator
-- retry everything of one circuit that failed in the last hour
SELECT request_id, cuzk.retry_proof(request_id) FROM cuzk.proof_status
 WHERE state = 'failed' AND circuit = 'merkle-poseidon2-d8-c2' AND finished_at > now() - interval '1 hour';  -- sector-1238
-- cancel whatever of a circuit has not started yet
SELECT request_id, cuzk.cancel_proof(request_id) FROM cuzk.proof_status
 WHERE state = 'queued' AND circuit = 'merkle-poseidon2-d8-c2';  -- sector-1238, true
