-- The device phases (h2d, msm_g1, msm_g2) join the timing history, in pipeline order.
CREATE OR REPLACE VIEW cuzk.attempt_phases AS
SELECT a.request_id, a.circuit, a.attempt, a.outcome, a.backend, a.device, a.worker,
       a.batch_size, a.finished_at, p.ord, p.phase, p.ms
  FROM cuzk.proof_attempts a
 CROSS JOIN LATERAL (VALUES
        (1, 'queue', a.queue_ms), (2, 'batch_wait', a.batch_wait_ms), (3, 'mem_wait', a.mem_wait_ms),
        (4, 'srs', a.srs_ms), (5, 'synth', a.synth_ms), (6, 'prove_wait', a.prove_wait_ms),
        (7, 'prove', a.prove_ms), (8, 'h2d', a.h2d_ms), (9, 'ntt', a.ntt_ms), (10, 'msm', a.msm_ms),
        (11, 'msm_g1', a.msm_g1_ms), (12, 'msm_g2', a.msm_g2_ms),
        (13, 'verify', a.verify_ms), (14, 'persist', a.persist_ms), (15, 'total', a.total_ms)
       ) AS p(ord, phase, ms)
 WHERE p.ms IS NOT NULL;
