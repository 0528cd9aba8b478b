-- as a submitter
SELECT r.state, r.partitions, (SELECT count(*) FROM cuzk.partition_proofs p WHERE p.request_id = r.request_id) AS proven
  FROM cuzk.proof_requests r WHERE r.request_id = 'c2-1239';  -- succeeded, 3, 3
-- the proofs in partition order (from 0), with the vk that verifies them
SELECT u.n - 1 AS partition, u.part_proof, u.part_public, k.vk
  FROM cuzk.proofs p
  JOIN cuzk.circuit_keys k ON k.circuit = p.circuit AND k.version = p.key_version
 CROSS JOIN unnest(p.proofs, p.public_witnesses) WITH ORDINALITY AS u(part_proof, part_public, n)
 WHERE p.request_id = 'c2-1239' ORDER BY u.n;
-- each partition's phase times, per attempt: the attempt's own columns are their sums
SELECT attempt, partition, outcome, synth_ms, prove_ms, verify_ms, total_ms
  FROM cuzk.partition_attempts WHERE request_id = 'c2-1239' ORDER BY attempt, partition;  -- 3 rows, succeeded
-- when each partition's synthesis and proving began (each lasts synth_ms / prove_ms):
-- the seconds the device proved none of the request's partitions, from its first proof's start
SELECT extract(epoch FROM max(upper(r)) - min(lower(r)) - sum(upper(r) - lower(r))) AS idle_s
  FROM (SELECT unnest(range_agg(tstzrange(prove_started_at, prove_started_at + prove_ms * interval '1 ms'))) AS r
          FROM cuzk.partition_attempts WHERE request_id = 'c2-1239' AND attempt = 1) busy;
