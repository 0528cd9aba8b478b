-- Partitioned requests: their partitions' proofs and attempt rows (store/partitions.go).

-- name: DonePartitions :many
-- Only proofs made with the circuit's current key count as done.
SELECT p.partition FROM cuzk.partition_proofs p
  JOIN cuzk.proof_requests r ON r.request_id = p.request_id
  JOIN cuzk.circuits c ON c.name = r.circuit
 WHERE p.request_id = $1 AND p.key_version = c.key_version;

-- name: RecordPartition :exec
-- Every phase column but queue_ms, in the order of package phase ($10 on); NULL for a
-- phase the partition never reached.
INSERT INTO cuzk.partition_attempts (request_id, attempt, partition, outcome, error, started_at, finished_at,
                                     synth_started_at, prove_started_at,
                                     batch_wait_ms, mem_wait_ms, srs_ms, synth_ms, prove_wait_ms, prove_ms, h2d_ms,
                                     ntt_ms, msm_ms, msm_g1_ms, msm_g2_ms, verify_ms, persist_ms, total_ms)
VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, now()), $8, $9,
        $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
ON CONFLICT DO NOTHING;

-- name: StorePartitionProof :exec
-- A proof made with an earlier key is replaced; one made with the same key stays.
INSERT INTO cuzk.partition_proofs (request_id, partition, proof, public_witness, key_version, attempt, worker, backend)
VALUES ($1, $2, $3, $4, coalesce($5, (SELECT key_version FROM cuzk.circuits WHERE name = $6)), $7, $8, $9)
ON CONFLICT (request_id, partition) DO UPDATE
   SET proof = EXCLUDED.proof, public_witness = EXCLUDED.public_witness, key_version = EXCLUDED.key_version,
       attempt = EXCLUDED.attempt, worker = EXCLUDED.worker, backend = EXCLUDED.backend, created_at = now()
 WHERE cuzk.partition_proofs.key_version <> EXCLUDED.key_version;

-- name: CountPartitionProofs :one
SELECT count(*), count(DISTINCT key_version) FROM cuzk.partition_proofs WHERE request_id = $1;

-- name: InsertPartitionedProof :exec
-- Each proof and public witness in the concatenations is preceded by its length
-- (int4send: 4 bytes, big-endian), so a reader needs no knowledge of gnark's sizes.
INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend, key_version,
                         partitions, proofs, public_witnesses)
SELECT $1, $2, string_agg(int4send(length(proof)) || proof, ''::bytea ORDER BY partition),
       string_agg(int4send(length(public_witness)) || public_witness, ''::bytea ORDER BY partition),
       $3, $4, coalesce(nullif($5, ''), max(backend)), min(key_version), count(*), array_agg(proof ORDER BY partition),
       array_agg(public_witness ORDER BY partition)
  FROM cuzk.partition_proofs WHERE request_id = $1
ON CONFLICT (request_id) DO NOTHING;
