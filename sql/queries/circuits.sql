-- Circuits and their key versions (store/circuits.go).

-- name: RegisterCircuit :exec
INSERT INTO cuzk.circuits (name, constraints, public_inputs, secret_inputs, wires, vk, pk_digest, source,
                           mem_estimate_bytes, max_inputs_bytes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (name) DO UPDATE SET constraints = EXCLUDED.constraints, public_inputs = EXCLUDED.public_inputs,
    secret_inputs = EXCLUDED.secret_inputs, wires = EXCLUDED.wires, vk = EXCLUDED.vk, pk_digest = EXCLUDED.pk_digest,
    source = EXCLUDED.source, mem_estimate_bytes = EXCLUDED.mem_estimate_bytes,
    max_inputs_bytes = EXCLUDED.max_inputs_bytes, updated_at = now();

-- name: CurrentKey :one
SELECT key_version, vk FROM cuzk.circuits WHERE name = $1;

-- name: KeyVersionByDigest :one
SELECT version FROM cuzk.circuit_keys WHERE circuit = $1 AND vk_digest = $2;

-- name: CircuitSizes :many
SELECT name, constraints, coalesce(mem_estimate_bytes, 0) FROM cuzk.circuits;

-- name: CircuitNames :many
SELECT name FROM cuzk.circuits ORDER BY name;

-- name: PKDigest :one
SELECT pk_digest FROM cuzk.circuits WHERE name = $1;
