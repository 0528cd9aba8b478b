-- Hourly rollup of attempt timings, so the dashboard's long windows read a few rows
-- per circuit and hour instead of every attempt (a month of a busy fleet is millions).
-- cuzk.attempt_stats aggregates attempts finished in [lo, hi) by circuit and period;
-- cuzk.attempt_hours keeps its hourly result for closed hours, filled on demand by
-- cuzk.fill_attempt_hours. Means are exact (sums and counts per phase); the total's
-- percentiles come from a histogram with 16 buckets per doubling (within ~2.2%).

CREATE FUNCTION cuzk.attempt_stats(lo timestamptz, hi timestamptz, period interval)
RETURNS TABLE (circuit text, period_start timestamptz, succeeded bigint, failed bigint, timed bigint,
               sums double precision[], counts bigint[], hist_b smallint[], hist_n bigint[])
LANGUAGE sql STABLE AS $$
    WITH a AS (
        SELECT * FROM cuzk.proof_attempts
         WHERE finished_at >= lo AND finished_at < hi
           AND outcome IN ('succeeded', 'failed', 'retryable', 'interrupted')
    ), g AS (
        SELECT a.circuit, date_bin(period, a.finished_at, timestamptz '2000-01-01') AS p,
               count(*) FILTER (WHERE outcome = 'succeeded') AS succeeded,
               count(*) FILTER (WHERE outcome <> 'succeeded') AS failed,
               count(*) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL) AS timed,
               ARRAY[coalesce(sum(queue_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(batch_wait_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(mem_wait_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(srs_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(synth_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(prove_wait_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(prove_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(h2d_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(ntt_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(msm_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(msm_g1_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(msm_g2_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(verify_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(persist_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0),
               coalesce(sum(total_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL), 0)]::double precision[] AS sums,
               ARRAY[count(queue_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(batch_wait_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(mem_wait_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(srs_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(synth_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(prove_wait_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(prove_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(h2d_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(ntt_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(msm_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(msm_g1_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(msm_g2_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(verify_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(persist_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL),
               count(total_ms) FILTER (WHERE outcome = 'succeeded' AND total_ms IS NOT NULL)]::bigint[] AS counts
          FROM a GROUP BY 1, 2
    ), h AS (
        SELECT circuit, p, array_agg(b ORDER BY b) AS hist_b, array_agg(n ORDER BY b) AS hist_n
          FROM (SELECT a.circuit, date_bin(period, a.finished_at, timestamptz '2000-01-01') AS p,
                       least(399, greatest(0, floor(16 * ln(greatest(a.total_ms, 1)) / ln(2))))::smallint AS b,
                       count(*) AS n
                  FROM a WHERE outcome = 'succeeded' AND total_ms IS NOT NULL GROUP BY 1, 2, 3) x
         GROUP BY 1, 2
    )
    SELECT g.circuit, g.p, g.succeeded, g.failed, g.timed, g.sums, g.counts,
           coalesce(h.hist_b, '{}'), coalesce(h.hist_n, '{}')
      FROM g LEFT JOIN h USING (circuit, p)
$$;
COMMENT ON FUNCTION cuzk.attempt_stats(timestamptz, timestamptz, interval) IS
    'Attempts finished in [lo, hi) by circuit and period (date_bin from 2000-01-01): counts, per-phase sums and counts of successes with a total (phases in attempt_phases order), and a histogram of total_ms (bucket b covers [2^(b/16), 2^((b+1)/16)) ms).';

CREATE TABLE cuzk.attempt_hours (
    circuit   text NOT NULL,
    hour      timestamptz NOT NULL,
    succeeded bigint NOT NULL,
    failed    bigint NOT NULL,
    timed     bigint NOT NULL,
    sums      double precision[] NOT NULL,
    counts    bigint[] NOT NULL,
    hist_b    smallint[] NOT NULL,
    hist_n    bigint[] NOT NULL,
    PRIMARY KEY (circuit, hour)
);
COMMENT ON TABLE cuzk.attempt_hours IS
    'cuzk.attempt_stats by hour for closed hours between attempt_hours_mark.filled_from and filled_until (see cuzk.fill_attempt_hours).';

-- The filled span; one row.
CREATE TABLE cuzk.attempt_hours_mark (
    one          boolean PRIMARY KEY DEFAULT true CHECK (one),
    filled_from  timestamptz NOT NULL,
    filled_until timestamptz NOT NULL
);

-- Fills attempt_hours from since's hour to the last closed hour and returns
-- filled_until: hours before it are in the table. An hour counts as closed 10 minutes
-- after it ends (a finished attempt is written within moments of its finished_at), and
-- the last filled hour is computed again on each call, for stragglers.
CREATE FUNCTION cuzk.fill_attempt_hours(since timestamptz) RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
    lim  timestamptz := date_bin('1 hour', now() - interval '10 minutes', timestamptz '2000-01-01');
    lo   timestamptz := date_bin('1 hour', since, timestamptz '2000-01-01');
    m    cuzk.attempt_hours_mark;
BEGIN
    IF lo > lim THEN
        lo := lim;
    END IF;
    INSERT INTO cuzk.attempt_hours_mark (filled_from, filled_until) VALUES (lim, lim) ON CONFLICT DO NOTHING;
    SELECT * INTO m FROM cuzk.attempt_hours_mark FOR UPDATE;  -- one filler at a time
    IF lo < m.filled_from THEN
        PERFORM cuzk.roll_hours(lo, m.filled_from);
        m.filled_from := lo;
    END IF;
    IF lim > m.filled_until - interval '1 hour' THEN
        PERFORM cuzk.roll_hours(greatest(m.filled_from, m.filled_until - interval '1 hour'), lim);
        m.filled_until := greatest(m.filled_until, lim);
    END IF;
    UPDATE cuzk.attempt_hours_mark SET filled_from = m.filled_from, filled_until = m.filled_until;
    RETURN m.filled_until;
END $$;

CREATE FUNCTION cuzk.roll_hours(lo timestamptz, hi timestamptz) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO cuzk.attempt_hours
    SELECT * FROM cuzk.attempt_stats(lo, hi, interval '1 hour')
    ON CONFLICT (circuit, hour) DO UPDATE
       SET succeeded = EXCLUDED.succeeded, failed = EXCLUDED.failed, timed = EXCLUDED.timed,
           sums = EXCLUDED.sums, counts = EXCLUDED.counts, hist_b = EXCLUDED.hist_b, hist_n = EXCLUDED.hist_n
$$;

GRANT SELECT ON cuzk.attempt_hours, cuzk.attempt_hours_mark TO cuzk_submitter, cuzk_worker;
GRANT INSERT, UPDATE ON cuzk.attempt_hours, cuzk.attempt_hours_mark TO cuzk_worker;
