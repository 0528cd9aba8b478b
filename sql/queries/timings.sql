-- Timing history and the samples that comparisons read (store/timings.go).

-- name: TimingHistory :many
-- $3: one circuit, or '' for every one.
SELECT circuit, period, phase, n, p50_ms, p95_ms, mean_ms
  FROM cuzk.timing_history($1::interval, now() - $2::interval, nullif($3, ''));

-- name: ResolveSelector :one
SELECT description FROM cuzk.resolve_selector($1);

-- name: SelectorSamples :many
SELECT source, circuit, phase, ms FROM cuzk.timing_samples($1);

-- name: RecentBuilds :many
-- Distinct builds by a skip scan of proof_attempts_build_finished_idx, then each one's
-- newest success: a handful of index probes, not a table scan.
WITH RECURSIVE b(build) AS (
    SELECT min(build) FROM cuzk.proof_attempts WHERE outcome = 'succeeded' AND build IS NOT NULL
    UNION ALL
    SELECT (SELECT min(a.build) FROM cuzk.proof_attempts a
             WHERE a.outcome = 'succeeded' AND a.build > b.build)
      FROM b WHERE b.build IS NOT NULL)
SELECT build FROM b WHERE build IS NOT NULL
 ORDER BY (SELECT max(a.finished_at) FROM cuzk.proof_attempts a
            WHERE a.outcome = 'succeeded' AND a.build = b.build) DESC
 LIMIT $1;

-- name: BuildSamples :many
-- Every phase column, in the order of package phase.
SELECT circuit, queue_ms, batch_wait_ms, mem_wait_ms, srs_ms, synth_ms, prove_wait_ms, prove_ms, h2d_ms, ntt_ms,
       msm_ms, msm_g1_ms, msm_g2_ms, verify_ms, persist_ms, total_ms
  FROM cuzk.proof_attempts
 WHERE outcome = 'succeeded' AND build = $1
 ORDER BY finished_at DESC LIMIT $2;

-- name: NextBenchID :one
SELECT nextval('cuzk.bench_id_seq');
