-- Submitters read only their own requests: a request's row, its proof and its attempts
-- (with their worker, device and configuration) are visible to the login that
-- submitted it (proof_requests.submitted_by, 014) and to those that act on every
-- request (cuzk.acts_for_all: cuzk_operator, cuzk_worker, the schema owner). Timings
-- stay readable to every submitter as aggregates and samples per circuit and period,
-- which name no request, worker or submitter.
--
-- 1. Tables. Row-level security on proof_requests, proofs and proof_attempts: a
--    submitter's policy admits its own rows (proofs and attempts through their
--    request: a probe of proof_requests' request_id key, or one hashed scan for a
--    whole listing); cuzk_worker's admits all. The owner is not subject to them, so the SECURITY DEFINER functions
--    (submit, retry, cancel, admission, repair) see every row as before. Row-level
--    security also hides these tables' planner statistics (pg_stats) from submitters.
-- 2. Views run with their owner's rights, past row-level security: proof_status and
--    attempt_phases filter the same way themselves, as security barriers, so that no
--    function in a caller's WHERE sees another's rows before the filter.
-- 3. Timings. timing_history (and timing_hourly, timing_daily) reads phase_samples,
--    which carries no request_id, worker or device, instead of attempt_phases, so that
--    it stays the fleet's; so do the build and config hash lookups of
--    compare_timings. Its one-request groups (a bucket small enough) say how long some
--    proof of a circuit took, not whose.
-- 4. A request recorded before 014 may name a role instead of its login (a plain INSERT
--    after SET ROLE recorded the role; submit_proof before 010, the owner): only
--    those that read every request read it until the owner sets its login in
--    submitted_by.

ALTER TABLE cuzk.proof_requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE cuzk.proofs ENABLE ROW LEVEL SECURITY;
ALTER TABLE cuzk.proof_attempts ENABLE ROW LEVEL SECURITY;

-- (SELECT cuzk.acts_for_all()) is computed once per query, not per row.
CREATE POLICY own_requests ON cuzk.proof_requests FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all()) OR submitted_by = session_user);
CREATE POLICY submit_own ON cuzk.proof_requests FOR INSERT TO cuzk_submitter
    WITH CHECK (submitted_by = session_user);
CREATE POLICY own_proofs ON cuzk.proofs FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all())
           OR EXISTS (SELECT 1 FROM cuzk.proof_requests r
                       WHERE r.request_id = proofs.request_id AND r.submitted_by = session_user));
CREATE POLICY own_attempts ON cuzk.proof_attempts FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all())
           OR EXISTS (SELECT 1 FROM cuzk.proof_requests r
                       WHERE r.request_id = proof_attempts.request_id AND r.submitted_by = session_user));

CREATE POLICY worker_all ON cuzk.proof_requests TO cuzk_worker USING (true) WITH CHECK (true);
CREATE POLICY worker_all ON cuzk.proofs TO cuzk_worker USING (true) WITH CHECK (true);
CREATE POLICY worker_all ON cuzk.proof_attempts TO cuzk_worker USING (true) WITH CHECK (true);

CREATE OR REPLACE VIEW cuzk.proof_status WITH (security_barrier) AS
SELECT r.request_id, r.circuit, r.state, r.attempts, r.last_error, r.priority,
       r.created_at, r.updated_at, r.finished_at, r.submitted_by
  FROM cuzk.proof_requests r
 WHERE (SELECT cuzk.acts_for_all()) OR r.submitted_by = session_user;
COMMENT ON VIEW cuzk.proof_status IS
    'One row per request the login may read: its own (any, for cuzk_operator, cuzk_worker and the owner).';

CREATE OR REPLACE VIEW cuzk.attempt_phases WITH (security_barrier) AS
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
 WHERE p.ms IS NOT NULL
   AND ((SELECT cuzk.acts_for_all())
        OR EXISTS (SELECT 1 FROM cuzk.proof_requests r
                    WHERE r.request_id = a.request_id AND r.submitted_by = session_user));
COMMENT ON VIEW cuzk.attempt_phases IS
    'Every timed phase of every attempt the login may read: of its own requests (any, for cuzk_operator, cuzk_worker and the owner).';

CREATE OR REPLACE FUNCTION cuzk.timing_history(bucket interval DEFAULT '1 hour',
                                               since timestamptz DEFAULT now() - interval '7 days',
                                               for_circuit text DEFAULT NULL)
RETURNS TABLE (circuit text, period timestamptz, phase text, n bigint,
               p50_ms double precision, p95_ms double precision, mean_ms double precision)
LANGUAGE sql STABLE AS $$
    SELECT a.circuit, date_bin(bucket, a.finished_at, timestamptz '2000-01-01') AS period, a.phase,
           count(*),
           round((percentile_cont(0.5) WITHIN GROUP (ORDER BY a.ms))::numeric, 3)::double precision,
           round((percentile_cont(0.95) WITHIN GROUP (ORDER BY a.ms))::numeric, 3)::double precision,
           round(avg(a.ms)::numeric, 3)::double precision
      FROM cuzk.phase_samples a
     WHERE a.source = 'worker' AND a.finished_at >= since
       AND (for_circuit IS NULL OR a.circuit = for_circuit)
     GROUP BY a.circuit, 2, a.phase, a.ord
     ORDER BY a.circuit, 2, a.ord
$$;

ALTER FUNCTION cuzk.phase_builds(text) SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp;
ALTER FUNCTION cuzk.phase_configs(text) SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp;
