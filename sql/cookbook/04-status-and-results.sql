-- as a submitter
SELECT state, attempts, last_error FROM cuzk.proof_status WHERE request_id = 'sector-1234';  -- succeeded, 1
SELECT state, last_error FROM cuzk.proof_status WHERE request_id = 'sector-1238';  -- failed: ... is not satisfied
SELECT proof, public_witness FROM cuzk.proofs WHERE request_id = 'sector-1234';
SELECT * FROM cuzk.proof_attempts WHERE request_id = 'sector-1234' ORDER BY attempt;
SELECT vk FROM cuzk.circuits WHERE name = 'merkle-poseidon2-d8-c2';  -- the current key
-- a proof with the vk that verifies it (its own key version, current or not)
SELECT p.proof, p.public_witness, k.vk FROM cuzk.proofs p
  JOIN cuzk.circuit_keys k ON k.circuit = p.circuit AND k.version = p.key_version
 WHERE p.request_id = 'sector-1234';
