-- as a submitter
\set inputs `cat sector-1234.json`
SELECT cuzk.submit_proof(request_id => 'sector-1234', circuit => 'merkle-poseidon2-d8-c2',
                         inputs => :'inputs'::jsonb, priority => 2);           -- the request's id
-- again: the same circuit and inputs return the same id and enqueue nothing (other
-- inputs or another circuit under an existing request_id are an error)
SELECT cuzk.submit_proof(request_id => 'sector-1234', circuit => 'merkle-poseidon2-d8-c2',
                         inputs => :'inputs'::jsonb, priority => 2);           -- the same id
-- or a plain insert: a trigger enqueues the River job and wakes the workers
\set inputs `cat sector-1235.json`
INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
     VALUES ('sector-1235', 'merkle-poseidon2-d8-c2', :'inputs');
-- inputs that do not satisfy the circuit (another leaf's challenge): this request fails
\set inputs `cat sector-1234.json`
SELECT cuzk.submit_proof(request_id => 'sector-1238', circuit => 'merkle-poseidon2-d8-c2',
                         inputs => :'inputs'::jsonb || '{"Challenges.0": "7"}');
