-- Regression watch: benchmark runs stored beside worker attempts, and a per-phase
-- comparison of two sets of them (builds, configurations, time windows, bench runs)
-- that flags phases slower beyond a threshold with confidence.
--
--   SELECT * FROM cuzk.compare_timings('build:v1.4.0..build:v1.5.0');
--   SELECT * FROM cuzk.compare_timings('config', '1a2b3c', 'config', '4d5e6f', threshold_pct => 10);
--   SELECT circuit, phase, change_pct FROM cuzk.compare_timings('-14 days/-7 days..-7 days/now') WHERE flagged;
--
-- The interval here is the order-statistic one (see cuzk.log_median_se); `cuzk timings
-- --compare` bootstraps by default and gives the same numbers as SQL with --method orderstat.

-- One row per timed proof of `cuzk bench --record`: the attempt columns a benchmark can
-- fill, so benchmark and worker timings go through the same comparison.
CREATE TABLE cuzk.bench_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bench_id    bigint NOT NULL,                -- one invocation of cuzk bench --record
    arm         text   NOT NULL DEFAULT '' CHECK (arm IN ('', 'A', 'B')),  -- --ab arms
    run         int    NOT NULL,
    label       text   NOT NULL DEFAULT '',     -- the arm's flags, for people
    circuit     text   NOT NULL,
    worker      text   NOT NULL,                -- host/pid
    build       text,
    config_hash text,
    config      jsonb,
    backend     text,
    device      text,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    synth_ms    double precision,
    prove_ms    double precision,
    ntt_ms      double precision,
    msm_ms      double precision,
    msm_g1_ms   double precision,
    msm_g2_ms   double precision,
    h2d_ms      double precision,
    verify_ms   double precision,
    total_ms    double precision,
    UNIQUE (bench_id, arm, run)
);
CREATE SEQUENCE cuzk.bench_id_seq;
CREATE INDEX bench_runs_build_idx ON cuzk.bench_runs (build, circuit);
CREATE INDEX bench_runs_config_idx ON cuzk.bench_runs (config_hash, circuit);
CREATE INDEX bench_runs_finished_idx ON cuzk.bench_runs (finished_at);

-- Every phase of every succeeded attempt and benchmark run, with what produced it.
-- ord is the pipeline order; source keeps worker and bench timings apart.
CREATE VIEW cuzk.phase_samples AS
SELECT 'worker'::text AS source, a.circuit, a.build, a.config_hash, a.finished_at,
       NULL::bigint AS bench_id, NULL::text AS arm, p.ord, p.phase, p.ms
  FROM cuzk.proof_attempts a
 CROSS JOIN LATERAL (VALUES
        (1, 'queue', a.queue_ms), (2, 'batch_wait', a.batch_wait_ms), (3, 'mem_wait', a.mem_wait_ms),
        (4, 'srs', a.srs_ms), (5, 'synth', a.synth_ms), (6, 'prove_wait', a.prove_wait_ms),
        (7, 'prove', a.prove_ms), (8, 'h2d', a.h2d_ms), (9, 'ntt', a.ntt_ms), (10, 'msm', a.msm_ms),
        (11, 'msm_g1', a.msm_g1_ms), (12, 'msm_g2', a.msm_g2_ms), (13, 'verify', a.verify_ms),
        (14, 'persist', a.persist_ms), (15, 'total', a.total_ms)
       ) AS p(ord, phase, ms)
 WHERE a.outcome = 'succeeded' AND p.ms IS NOT NULL
UNION ALL
SELECT 'bench', b.circuit, b.build, b.config_hash, b.finished_at, b.bench_id, b.arm, p.ord, p.phase, p.ms
  FROM cuzk.bench_runs b
 CROSS JOIN LATERAL (VALUES
        (5, 'synth', b.synth_ms), (7, 'prove', b.prove_ms), (8, 'h2d', b.h2d_ms), (9, 'ntt', b.ntt_ms),
        (10, 'msm', b.msm_ms), (11, 'msm_g1', b.msm_g1_ms), (12, 'msm_g2', b.msm_g2_ms),
        (13, 'verify', b.verify_ms), (15, 'total', b.total_ms)
       ) AS p(ord, phase, ms)
 WHERE p.ms IS NOT NULL;

-- norm_quantile is the standard normal quantile (Acklam's rational approximation,
-- relative error below 1.2e-9).
CREATE FUNCTION cuzk.norm_quantile(p double precision) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    q double precision;
    r double precision;
BEGIN
    IF p <= 0 OR p >= 1 THEN
        RAISE EXCEPTION 'norm_quantile(%): p must be in (0, 1)', p USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p < 0.02425 OR p > 1 - 0.02425 THEN
        q := sqrt(-2 * ln(least(p, 1 - p)));
        r := (((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e+00) * q
                 - 2.549732539343734e+00) * q + 4.374664141464968e+00) * q + 2.938163982698783e+00)
             / ((((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e+00) * q
                 + 3.754408661907416e+00) * q + 1);
        RETURN CASE WHEN p < 0.5 THEN r ELSE -r END;
    END IF;
    q := p - 0.5;
    r := q * q;
    RETURN (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r - 2.759285104469687e+02) * r
              + 1.383577518672690e+02) * r - 3.066479806614716e+01) * r + 2.506628277459239e+00) * q
         / (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r - 1.556989798598866e+02) * r
              + 6.680131188771972e+01) * r - 1.328068155288572e+01) * r + 1);
END $$;

-- log_median_se is the standard error of the log of a sample's median (McKean–Schrader):
-- the width of the distribution-free order-statistic interval of the median, over 2z.
-- x is sorted ascending; values under 0.001 ms count as 0.001 so logs stay finite.
-- floor(v + 0.5), not round(): round(float8) rounds half to even, and package regress
-- must pick the same order statistics.
CREATE FUNCTION cuzk.log_median_se(x double precision[], z double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT (ln(greatest(x[n - c + 1], 0.001)) - ln(greatest(x[c], 0.001))) / (2 * z)
      FROM (SELECT cardinality(x) AS n) s
     CROSS JOIN LATERAL (SELECT greatest(1, least(s.n, floor((s.n + 1) / 2.0 - z * sqrt(s.n) / 2 + 0.5)::int)) AS c) o
$$;

-- resolve_selector turns what a caller wrote into one exact set of timings:
--   build   a build string, its version, or a prefix (4+ characters) of its revision
--   config  a prefix (4+ characters) of a config hash
--   window  FROM/TO, each a timestamp ('2026-11-01', '2026-11-01 12:00+00', 'now') or an
--           interval from now ('-7 days', '-36h'); attempts finished in [FROM, TO)
--   bench   a bench run id, with /A or /B for an arm of `cuzk bench --ab`
--   auto    (or NULL) whichever kind matches: a value with '/' is a window, else a build,
--           config hash or bench id; it must match exactly one kind
-- A value that matches nothing, or more than one build or hash, is an error that says so.
CREATE FUNCTION cuzk.resolve_selector(kind text, value text,
                                      OUT sel_kind text, OUT sel_value text,
                                      OUT sel_from timestamptz, OUT sel_to timestamptz,
                                      OUT sel_bench bigint, OUT sel_arm text, OUT description text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k text := lower(coalesce(nullif(btrim(kind), ''), 'auto'));
    v text := btrim(coalesce(value, ''));
    m text[];
    found text[];
    kinds text[] := '{}';
BEGIN
    IF v = '' THEN
        RAISE EXCEPTION 'empty % selector', k USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF k = 'auto' THEN
        IF v ~ '/' AND v !~ '^\d+/[AB]$' THEN
            k := 'window';
        ELSE
            IF EXISTS (SELECT 1 FROM cuzk.phase_builds(v)) THEN kinds := kinds || 'build'::text; END IF;
            IF v ~* '^[0-9a-f]{4,}$' AND EXISTS (SELECT 1 FROM cuzk.phase_configs(v)) THEN kinds := kinds || 'config'::text; END IF;
            IF v ~ '^\d+(/[AB])?$' AND EXISTS (SELECT 1 FROM cuzk.bench_runs b WHERE b.bench_id = split_part(v, '/', 1)::bigint) THEN
                kinds := kinds || 'bench'::text;
            END IF;
            IF cardinality(kinds) = 0 THEN
                RAISE EXCEPTION 'no build, config hash or bench run matches "%"', v
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'write build:V, config:HASH, bench:ID or a window FROM/TO';
            ELSIF cardinality(kinds) > 1 THEN
                RAISE EXCEPTION '"%" is ambiguous: it matches a % ', v, array_to_string(kinds, ' and a ')
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'prefix it: ' || (SELECT string_agg(x || ':' || v, ' or ') FROM unnest(kinds) x);
            END IF;
            k := kinds[1];
        END IF;
    END IF;

    sel_kind := k;
    CASE k
    WHEN 'build' THEN
        SELECT array_agg(b ORDER BY b) INTO found FROM cuzk.phase_builds(v) b;
        IF found IS NULL THEN
            RAISE EXCEPTION 'no timings of a build matching "%"', v USING ERRCODE = 'invalid_parameter_value';
        ELSIF v = ANY (found) THEN
            sel_value := v;
        ELSIF cardinality(found) > 1 THEN
            RAISE EXCEPTION 'build "%" is ambiguous: % builds match', v, cardinality(found)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'give one exactly: ' || array_to_string(found[1:5], ', ');
        ELSE
            sel_value := found[1];
        END IF;
        description := 'build ' || sel_value;
    WHEN 'config' THEN
        IF v !~* '^[0-9a-f]{4,}$' THEN
            RAISE EXCEPTION 'config "%": want 4 or more hex digits of a config hash', v USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT array_agg(h ORDER BY h) INTO found FROM cuzk.phase_configs(v) h;
        IF found IS NULL THEN
            RAISE EXCEPTION 'no timings of a config hash starting with "%"', v USING ERRCODE = 'invalid_parameter_value';
        ELSIF cardinality(found) > 1 THEN
            RAISE EXCEPTION 'config "%" is ambiguous: % hashes match', v, cardinality(found)
                USING ERRCODE = 'invalid_parameter_value', HINT = 'give more digits: ' || array_to_string(found[1:5], ', ');
        END IF;
        sel_value := found[1];
        description := 'config ' || sel_value || coalesce(' ' || (
            SELECT c::text FROM (SELECT a.config AS c FROM cuzk.proof_attempts a WHERE a.config_hash = sel_value AND a.config IS NOT NULL
                                 UNION ALL
                                 SELECT b.config FROM cuzk.bench_runs b WHERE b.config_hash = sel_value AND b.config IS NOT NULL) x LIMIT 1), '');
    WHEN 'window' THEN
        m := string_to_array(v, '/');
        IF cardinality(m) <> 2 THEN
            RAISE EXCEPTION 'window "%": want FROM/TO', v USING ERRCODE = 'invalid_parameter_value';
        END IF;
        sel_from := cuzk.window_bound(m[1]);
        sel_to := cuzk.window_bound(m[2]);
        IF sel_from >= sel_to THEN
            RAISE EXCEPTION 'window "%": % is not before %', v, sel_from, sel_to USING ERRCODE = 'invalid_parameter_value';
        END IF;
        sel_value := v;
        description := 'window ' || sel_from || ' .. ' || sel_to;
    WHEN 'bench' THEN
        m := regexp_match(v, '^(\d+)(?:/([AB]))?$');
        IF m IS NULL THEN
            RAISE EXCEPTION 'bench "%": want a bench run id, optionally with /A or /B', v USING ERRCODE = 'invalid_parameter_value';
        END IF;
        sel_bench := m[1]::bigint;
        SELECT array_agg(DISTINCT b.arm ORDER BY b.arm) INTO found FROM cuzk.bench_runs b WHERE b.bench_id = sel_bench;
        IF found IS NULL THEN
            RAISE EXCEPTION 'no bench run %', sel_bench USING ERRCODE = 'invalid_parameter_value';
        END IF;
        sel_arm := coalesce(m[2], '');
        IF NOT sel_arm = ANY (found) THEN
            RAISE EXCEPTION 'bench run % has %', sel_bench,
                CASE WHEN found = '{""}' THEN 'no arms' ELSE 'arms ' || array_to_string(found, ' and ') END
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = CASE WHEN found = '{""}' THEN 'write bench:' || sel_bench ELSE 'write bench:' || sel_bench || '/A or bench:' || sel_bench || '/B' END;
        END IF;
        sel_value := v;
        description := 'bench ' || v || coalesce(' (' || (SELECT nullif(b.label, '') FROM cuzk.bench_runs b
                                                           WHERE b.bench_id = sel_bench AND b.arm = sel_arm LIMIT 1) || ')', '');
    ELSE
        RAISE EXCEPTION 'unknown selector kind "%"', kind
            USING ERRCODE = 'invalid_parameter_value', HINT = 'build, config, window, bench or auto';
    END CASE;
END $$;

-- The builds and config hashes that have timings and match a selector value.
CREATE FUNCTION cuzk.phase_builds(v text) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT build FROM (SELECT build FROM cuzk.proof_attempts WHERE outcome = 'succeeded'
                       UNION SELECT build FROM cuzk.bench_runs) b
     WHERE build = v OR split_part(build, ' ', 1) = v
        OR (length(v) >= 4 AND starts_with(split_part(build, ' ', 2), v))
$$;

CREATE FUNCTION cuzk.phase_configs(v text) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT config_hash FROM (SELECT config_hash FROM cuzk.proof_attempts WHERE outcome = 'succeeded'
                             UNION SELECT config_hash FROM cuzk.bench_runs) c
     WHERE length(v) >= 4 AND starts_with(config_hash, lower(v))
$$;

-- window_bound reads one end of a window: a timestamp, or an interval from now.
CREATE FUNCTION cuzk.window_bound(s text) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF btrim(s) ~ '^[-+]' THEN
        RETURN now() + btrim(s)::interval;
    END IF;
    RETURN btrim(s)::timestamptz;
EXCEPTION WHEN data_exception THEN
    RAISE EXCEPTION 'window bound "%": want a timestamp or an interval like -7 days', s
        USING ERRCODE = 'invalid_parameter_value';
END $$;

-- resolve_selector for 'kind:value' or a bare value (kind auto).
CREATE FUNCTION cuzk.resolve_selector(selector text,
                                      OUT sel_kind text, OUT sel_value text,
                                      OUT sel_from timestamptz, OUT sel_to timestamptz,
                                      OUT sel_bench bigint, OUT sel_arm text, OUT description text)
LANGUAGE sql STABLE AS $$
    SELECT r.* FROM (SELECT regexp_match(btrim(selector), '^(build|config|window|bench|auto):(.*)$', 'i') AS m) s
     CROSS JOIN LATERAL cuzk.resolve_selector(coalesce(s.m[1], 'auto'), coalesce(s.m[2], selector)) r
$$;

-- timing_samples: every phase timing a selector stands for.
CREATE FUNCTION cuzk.timing_samples(selector text)
RETURNS TABLE (source text, circuit text, phase text, ord int, ms double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    s record;
BEGIN
    SELECT * INTO s FROM cuzk.resolve_selector(selector);
    CASE s.sel_kind
    WHEN 'build' THEN
        RETURN QUERY SELECT p.source, p.circuit, p.phase, p.ord, p.ms FROM cuzk.phase_samples p WHERE p.build = s.sel_value;
    WHEN 'config' THEN
        RETURN QUERY SELECT p.source, p.circuit, p.phase, p.ord, p.ms FROM cuzk.phase_samples p WHERE p.config_hash = s.sel_value;
    WHEN 'window' THEN
        RETURN QUERY SELECT p.source, p.circuit, p.phase, p.ord, p.ms FROM cuzk.phase_samples p
                      WHERE p.finished_at >= s.sel_from AND p.finished_at < s.sel_to;
    WHEN 'bench' THEN
        RETURN QUERY SELECT p.source, p.circuit, p.phase, p.ord, p.ms FROM cuzk.phase_samples p
                      WHERE p.bench_id = s.sel_bench AND p.arm = s.sel_arm;
    END CASE;
END $$;

-- One row of a comparison (see compare_timings).
CREATE TYPE cuzk.timing_comparison AS (
    source      text,   -- worker | bench
    circuit     text,
    phase       text,
    n_a         int,
    n_b         int,
    median_a_ms double precision,
    median_b_ms double precision,
    p95_a_ms    double precision,
    p95_b_ms    double precision,
    change_pct  double precision,  -- median B / median A - 1, in %
    ci_low_pct  double precision,
    ci_high_pct double precision,
    flagged     boolean,           -- slower beyond the threshold with confidence
    faster      boolean,           -- faster beyond the threshold with confidence
    note        text               -- why a series was not compared
);

-- compare_timings: per source, circuit and phase present on either side, n, median and
-- p95 of each side, the change of the median in % (B over A) with a `confidence`
-- interval, and flagged when the interval's lower bound is above threshold_pct (B is
-- slower by more than the threshold, with confidence). faster is the mirror image.
-- Series with fewer than min_n samples on a side are listed with a note, not compared.
-- The interval: log(median B / median A) ± z·sqrt(se_a² + se_b²), se from log_median_se.
CREATE FUNCTION cuzk.compare_timings(a_selector text, b_selector text,
                                     threshold_pct double precision DEFAULT 5,
                                     confidence double precision DEFAULT 0.95,
                                     min_n int DEFAULT 10, for_circuit text DEFAULT NULL)
RETURNS SETOF cuzk.timing_comparison
LANGUAGE plpgsql STABLE AS $$
DECLARE
    z double precision;
BEGIN
    IF threshold_pct IS NULL OR threshold_pct < 0 THEN
        RAISE EXCEPTION 'threshold_pct %: must be at least 0', threshold_pct USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF confidence IS NULL OR NOT (confidence > 0.5 AND confidence < 1) THEN
        RAISE EXCEPTION 'confidence %: must be between 0.5 and 1', confidence USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF min_n IS NULL OR min_n < 2 THEN
        RAISE EXCEPTION 'min_n %: must be at least 2', min_n USING ERRCODE = 'invalid_parameter_value';
    END IF;
    z := cuzk.norm_quantile(1 - (1 - confidence) / 2);
    RETURN QUERY
    WITH side AS (
        SELECT 'a' AS side, t.* FROM cuzk.timing_samples(a_selector) t
        UNION ALL
        SELECT 'b', t.* FROM cuzk.timing_samples(b_selector) t
    ), agg AS (
        SELECT s.side, s.source, s.circuit, s.phase, s.ord, count(*)::int AS n,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY s.ms) AS med,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY s.ms) AS p95,
               cuzk.log_median_se(array_agg(s.ms ORDER BY s.ms), z) AS se
          FROM side s
         WHERE for_circuit IS NULL OR s.circuit = for_circuit
         GROUP BY s.side, s.source, s.circuit, s.phase, s.ord
    ), j AS (
        SELECT coalesce(a.source, b.source) AS source, coalesce(a.circuit, b.circuit) AS circuit,
               coalesce(a.phase, b.phase) AS phase, coalesce(a.ord, b.ord) AS ord,
               coalesce(a.n, 0) AS n_a, coalesce(b.n, 0) AS n_b, a.med AS med_a, b.med AS med_b,
               a.p95 AS p95_a, b.p95 AS p95_b, a.se AS se_a, b.se AS se_b,
               coalesce(a.n, 0) >= min_n AND coalesce(b.n, 0) >= min_n AS ok
          FROM (SELECT * FROM agg WHERE agg.side = 'a') a
          FULL JOIN (SELECT * FROM agg WHERE agg.side = 'b') b
            ON a.source = b.source AND a.circuit = b.circuit AND a.phase = b.phase
    ), c AS (
        SELECT j.*,
               CASE WHEN j.ok THEN ln(greatest(j.med_b, 0.001) / greatest(j.med_a, 0.001)) END AS d,
               CASE WHEN j.ok THEN z * sqrt(j.se_a * j.se_a + j.se_b * j.se_b) END AS half
          FROM j
    )
    SELECT c.source, c.circuit, c.phase, c.n_a, c.n_b, c.med_a, c.med_b, c.p95_a, c.p95_b,
           CASE WHEN c.ok THEN (exp(c.d) - 1) * 100 END,
           (exp(c.d - c.half) - 1) * 100,
           (exp(c.d + c.half) - 1) * 100,
           coalesce((exp(c.d - c.half) - 1) * 100 > threshold_pct, false),
           coalesce(c.d + c.half < -ln(1 + threshold_pct / 100), false),
           CASE WHEN NOT c.ok THEN format('too few samples (need %s on each side)', min_n) END
      FROM c
     ORDER BY c.source, c.circuit, c.ord;
END $$;

-- compare_timings with each side as kind and value, e.g. ('build', 'v1.4.0', 'build', 'v1.5.0').
CREATE FUNCTION cuzk.compare_timings(a_kind text, a_value text, b_kind text, b_value text,
                                     threshold_pct double precision DEFAULT 5,
                                     confidence double precision DEFAULT 0.95,
                                     min_n int DEFAULT 10, for_circuit text DEFAULT NULL)
RETURNS SETOF cuzk.timing_comparison
LANGUAGE sql STABLE AS $$
    SELECT * FROM cuzk.compare_timings(coalesce(nullif(a_kind, ''), 'auto') || ':' || a_value,
                                       coalesce(nullif(b_kind, ''), 'auto') || ':' || b_value,
                                       threshold_pct, confidence, min_n, for_circuit)
$$;

-- compare_timings with one spec 'A..B', as `cuzk timings --compare A..B` takes it.
CREATE FUNCTION cuzk.compare_timings(spec text,
                                     threshold_pct double precision DEFAULT 5,
                                     confidence double precision DEFAULT 0.95,
                                     min_n int DEFAULT 10, for_circuit text DEFAULT NULL)
RETURNS SETOF cuzk.timing_comparison
LANGUAGE plpgsql STABLE AS $$
DECLARE
    parts text[] := string_to_array(spec, '..');
BEGIN
    IF cardinality(parts) <> 2 THEN
        RAISE EXCEPTION 'compare "%": want A..B with ".." once', spec USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY SELECT * FROM cuzk.compare_timings(parts[1], parts[2], threshold_pct, confidence, min_n, for_circuit);
END $$;

GRANT SELECT ON cuzk.bench_runs, cuzk.phase_samples TO cuzk_submitter, cuzk_worker;
GRANT INSERT ON cuzk.bench_runs TO cuzk_worker;
GRANT USAGE ON SEQUENCE cuzk.bench_id_seq TO cuzk_worker;
