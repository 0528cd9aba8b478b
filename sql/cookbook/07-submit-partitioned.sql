-- as a submitter
\set inputs `cat c2-1239.json`
SELECT cuzk.submit_proof(request_id => 'c2-1239', circuit => 'merkle-poseidon2-d8-c2',
                         inputs => :'inputs'::jsonb);                -- the request's id
SELECT partitions FROM cuzk.proof_requests WHERE request_id = 'c2-1239';  -- 3
