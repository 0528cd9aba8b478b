-- Stored proofs, for verification (store/proofs.go).

-- name: StoredProofs :many
-- $1: every proof; else those of the request ids in $2.
SELECT p.request_id, p.proof, p.public_witness, k.vk, p.proofs, p.public_witnesses
  FROM cuzk.proofs p JOIN cuzk.circuit_keys k ON k.circuit = p.circuit AND k.version = p.key_version
 WHERE $1 OR p.request_id = ANY($2) ORDER BY p.created_at;
