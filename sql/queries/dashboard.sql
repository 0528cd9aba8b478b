-- The dashboard's queries (store/dashboard.go). They only read, but for
-- FillAttemptHours, which keeps the hourly aggregates that the long windows read current.
-- Windows and buckets are in seconds.

-- name: Now :one
SELECT now();

-- name: RequestStates :many
SELECT state, count(*) FROM cuzk.proof_status GROUP BY state;

-- name: FirstFinished :one
SELECT min(finished_at) FROM cuzk.proof_attempts
 WHERE outcome IN ('succeeded', 'failed', 'retryable', 'interrupted')
   AND finished_at >= now() - make_interval(secs => $1);

-- name: PhaseStats :many
-- From each circuit's latest $2 succeeded attempts of the window: bounded however long
-- the window. The VALUES list is every phase of package phase: (name, ord, column).
SELECT r.circuit, p.phase, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY p.ms),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY p.ms), avg(p.ms)
  FROM cuzk.circuits c
 CROSS JOIN LATERAL (SELECT * FROM cuzk.proof_attempts a
                      WHERE a.circuit = c.name AND a.outcome = 'succeeded'
                        AND a.finished_at >= now() - make_interval(secs => $1)
                      ORDER BY a.finished_at DESC LIMIT $2) r
 CROSS JOIN LATERAL (VALUES
        ('queue', 1, r.queue_ms), ('batch_wait', 2, r.batch_wait_ms), ('mem_wait', 3, r.mem_wait_ms),
        ('srs', 4, r.srs_ms), ('synth', 5, r.synth_ms), ('prove_wait', 6, r.prove_wait_ms),
        ('prove', 7, r.prove_ms), ('h2d', 8, r.h2d_ms), ('ntt', 9, r.ntt_ms), ('msm', 10, r.msm_ms),
        ('msm_g1', 11, r.msm_g1_ms), ('msm_g2', 12, r.msm_g2_ms), ('verify', 13, r.verify_ms),
        ('persist', 14, r.persist_ms), ('total', 15, r.total_ms)
       ) AS p(phase, ord, ms)
 WHERE p.ms IS NOT NULL
 GROUP BY r.circuit, p.phase;

-- name: AttemptCounts :many
SELECT c.name, c.constraints,
       count(a.*) FILTER (WHERE a.outcome = 'succeeded'),
       count(a.*) FILTER (WHERE a.outcome IN ('failed', 'retryable', 'interrupted'))
  FROM cuzk.circuits c
  LEFT JOIN cuzk.proof_attempts a ON a.circuit = c.name AND a.finished_at >= now() - make_interval(secs => $1)
 GROUP BY c.name, c.constraints;

-- name: PeriodTimings :many
-- Straight from the attempt rows: every phase's mean (one pass, no sort, in the order
-- of package phase) and p50/p95 of the total only.
SELECT circuit, date_bin(make_interval(secs => $1), finished_at, timestamptz '2000-01-01'), count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms), percentile_cont(0.95) WITHIN GROUP (ORDER BY total_ms),
       avg(queue_ms), avg(batch_wait_ms), avg(mem_wait_ms), avg(srs_ms), avg(synth_ms), avg(prove_wait_ms),
       avg(prove_ms), avg(h2d_ms), avg(ntt_ms), avg(msm_ms), avg(msm_g1_ms), avg(msm_g2_ms), avg(verify_ms),
       avg(persist_ms), avg(total_ms)
  FROM cuzk.proof_attempts
 WHERE outcome = 'succeeded' AND total_ms IS NOT NULL AND finished_at >= now() - make_interval(secs => $2)
 GROUP BY 1, 2;

-- name: PeriodFailures :many
SELECT circuit, date_bin(make_interval(secs => $1), finished_at, timestamptz '2000-01-01'), count(*)
  FROM cuzk.proof_attempts
 WHERE outcome IN ('failed', 'retryable', 'interrupted') AND finished_at >= now() - make_interval(secs => $2)
 GROUP BY 1, 2;

-- name: GPUUtilization :many
-- From each circuit's latest $3 attempts of the window, as PhaseStats.
SELECT c.name, date_bin(make_interval(secs => $1), t.finished_at, timestamptz '2000-01-01'), avg(t.util), count(*)
  FROM cuzk.circuits c
 CROSS JOIN LATERAL (SELECT a.finished_at, (a.telemetry->>'gpu_util_pct')::float8 AS util
                       FROM cuzk.proof_attempts a
                      WHERE a.circuit = c.name AND a.finished_at >= now() - make_interval(secs => $2)
                      ORDER BY a.finished_at DESC LIMIT $3) t
 WHERE t.util IS NOT NULL
 GROUP BY 1, 2;

-- name: RecentFailures :many
-- The latest $1 requests among the latest $2 failed attempts.
WITH recent AS (
    SELECT request_id, max(coalesce(finished_at, started_at)) AS failed_at
      FROM (SELECT request_id, finished_at, started_at FROM cuzk.proof_attempts
             WHERE outcome IN ('failed', 'retryable', 'interrupted')
             ORDER BY coalesce(finished_at, started_at) DESC LIMIT $2) f
     GROUP BY request_id
     ORDER BY failed_at DESC LIMIT $1)
SELECT r.request_id, l.circuit, coalesce(p.state, ''), l.outcome, coalesce(l.error, ''), l.worker, n.attempts, n.last_at
  FROM recent r
 CROSS JOIN LATERAL (SELECT a.circuit, a.outcome, a.error, a.worker FROM cuzk.proof_attempts a
                      WHERE a.request_id = r.request_id AND a.outcome IN ('failed', 'retryable', 'interrupted')
                      ORDER BY a.attempt DESC LIMIT 1) l
 CROSS JOIN LATERAL (SELECT count(*) AS attempts, max(coalesce(a.finished_at, a.started_at)) AS last_at
                       FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id) n
  LEFT JOIN cuzk.proof_requests p ON p.request_id = r.request_id
 ORDER BY r.failed_at DESC;

-- name: LiveWorkers :many
SELECT w.worker, w.backend, w.devices, w.config, w.started_at, w.last_seen_at,
       (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.worker = w.worker AND a.outcome = 'running')
  FROM cuzk.workers w
 WHERE w.stopped_at IS NULL AND w.last_seen_at >= now() - make_interval(secs => $1)
 ORDER BY w.worker;

-- name: LatestTelemetry :many
SELECT DISTINCT ON (device) device, worker, telemetry
  FROM cuzk.proof_attempts
 WHERE telemetry IS NOT NULL AND device IS NOT NULL AND finished_at >= now() - make_interval(secs => $1)
 ORDER BY device, finished_at DESC;

-- name: FillAttemptHours :one
SELECT cuzk.fill_attempt_hours(now() - make_interval(secs => $1));

-- name: FilledHours :one
SELECT filled_from, filled_until FROM cuzk.attempt_hours_mark;

-- name: HourStats :many
SELECT circuit, date_bin(make_interval(secs => $1), hour, timestamptz '2000-01-01'),
       succeeded, failed, timed, sums, counts, hist_b, hist_n
  FROM cuzk.attempt_hours WHERE hour >= $2 AND hour < $3;

-- name: AttemptStats :many
SELECT * FROM cuzk.attempt_stats($1, $2, make_interval(secs => $3));
