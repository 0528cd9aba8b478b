-- Schema cuzk as PostgreSQL 15 reports it after every migration in migrations/cuzk.
-- Generated: do not edit. Regenerate with: go test ./migrations/ -run TestSchemaSnapshot -update

-- Name: cuzk; Type: SCHEMA; Schema: -; Owner: -

CREATE SCHEMA cuzk;

-- Name: timing_comparison; Type: TYPE; Schema: cuzk; Owner: -

CREATE TYPE cuzk.timing_comparison AS (
	source text,
	circuit text,
	phase text,
	n_a integer,
	n_b integer,
	median_a_ms double precision,
	median_b_ms double precision,
	p95_a_ms double precision,
	p95_b_ms double precision,
	change_pct double precision,
	ci_low_pct double precision,
	ci_high_pct double precision,
	flagged boolean,
	faster boolean,
	note text
);

-- Name: acts_for_all(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.acts_for_all() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
    SELECT cuzk.holds('cuzk_operator') OR cuzk.holds('cuzk_worker')
$$;

-- Name: admit(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.admit(who text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    PERFORM cuzk.lock_submitter(who);
    RETURN cuzk.admit_locked(who);
END $$;

-- Name: admit_into(text, integer, integer); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.admit_into(who text, p integer, room integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    n    int;
    lone boolean;
BEGIN
    IF room <= 0 THEN
        RETURN 0;  -- at least one partition is available: no request goes alone
    END IF;
    lone := NOT EXISTS (SELECT 1 FROM cuzk.proof_requests r
                         WHERE r.submitted_by = who AND r.priority = p AND r.state = 'queued' AND r.job_id IS NOT NULL
                           AND (SELECT j.state FROM public.river_job j WHERE j.id = r.job_id) = 'available');
    WITH w AS (
        SELECT r.id, r.request_id, r.circuit, r.max_attempts, r.priority, r.updated_at, r.partitions
          FROM cuzk.proof_requests r
         WHERE r.submitted_by = who AND r.priority = p AND r.state = 'queued' AND r.job_id IS NULL
         ORDER BY r.id LIMIT room FOR UPDATE SKIP LOCKED
    ), s AS (
        SELECT w.*, sum(w.partitions) OVER (ORDER BY w.id) AS upto, row_number() OVER (ORDER BY w.id) AS k FROM w
    ), pick AS (
        SELECT s.* FROM s WHERE s.upto <= room OR (s.k = 1 AND lone)
    ), j AS (
        INSERT INTO public.river_job (args, kind, max_attempts, priority, queue, state, scheduled_at, metadata)
        SELECT jsonb_build_object('request_id', pick.request_id, 'circuit', pick.circuit),
               'cuzk_prove', pick.max_attempts, pick.priority, cuzk.job_queue(pick.priority), 'available', now(),
               jsonb_build_object('queued_at', pick.updated_at)
          FROM pick ORDER BY pick.id
        RETURNING id, args->>'request_id' AS request_id
    ), u AS (
        UPDATE cuzk.proof_requests r SET job_id = j.id, updated_at = now()
          FROM j WHERE r.request_id = j.request_id
        RETURNING 1
    )
    SELECT count(*) INTO n FROM u;
    IF n > 0 THEN
        PERFORM pg_notify('public.river_insert', json_build_object('queue', cuzk.job_queue(p))::text);
    END IF;
    RETURN n;
END $$;

-- Name: admit_locked(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.admit_locked(who text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    total int := 0;
BEGIN
    FOR p IN 1..4 LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM cuzk.proof_requests w
                                   WHERE w.submitted_by = who AND w.priority = p AND w.state = 'queued' AND w.job_id IS NULL);
        total := total + cuzk.admit_into(who, p, cuzk.admit_room(who, p));
    END LOOP;
    RETURN total;
END $$;

-- Name: admit_room(text, integer); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.admit_room(who text, p integer) RETURNS integer
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
    SELECT coalesce((SELECT s.value::int FROM cuzk.settings s WHERE s.name = 'admitted_per_submitter'), 64)
           - coalesce((SELECT sum(r.partitions) FROM cuzk.proof_requests r
                        WHERE r.submitted_by = who AND r.priority = p AND r.state = 'queued' AND r.job_id IS NOT NULL
                          AND (SELECT j.state FROM public.river_job j WHERE j.id = r.job_id) = 'available'), 0)::int
$$;

-- Name: admit_waiting(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.admit_waiting() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    who   text;
    total int := 0;
BEGIN
    FOR who IN SELECT s.name FROM cuzk.submitters s
                WHERE EXISTS (SELECT 1 FROM cuzk.proof_requests r
                               WHERE r.submitted_by = s.name AND r.state = 'queued' AND r.job_id IS NULL)
                ORDER BY 1 LOOP
        PERFORM 1 FROM cuzk.submitters s WHERE s.name = who FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        total := total + cuzk.admit_locked(who);
    END LOOP;
    RETURN total;
END $$;

-- Name: attempt_stats(timestamp with time zone, timestamp with time zone, interval); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.attempt_stats(lo timestamp with time zone, hi timestamp with time zone, period interval) RETURNS TABLE(circuit text, period_start timestamp with time zone, succeeded bigint, failed bigint, timed bigint, sums double precision[], counts bigint[], hist_b smallint[], hist_n bigint[])
    LANGUAGE sql STABLE
    AS $$
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

-- Name: FUNCTION attempt_stats(lo timestamp with time zone, hi timestamp with time zone, period interval); Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON FUNCTION cuzk.attempt_stats(lo timestamp with time zone, hi timestamp with time zone, period interval) IS 'Attempts finished in [lo, hi) by circuit and period (date_bin from 2000-01-01): counts, per-phase sums and counts of successes with a total (phases in attempt_phases order), and a histogram of total_ms (bucket b covers [2^(b/16), 2^((b+1)/16)) ms).';

-- Name: cancel_proof(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.cancel_proof(request_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    r cuzk.proof_requests;
    q text;
BEGIN
    r := cuzk.own_request(cancel_proof.request_id, 'cancel');
    IF r.state NOT IN ('queued', 'running') THEN
        RETURN false;
    END IF;
    UPDATE cuzk.proof_requests p SET state = 'cancelled', finished_at = now(), updated_at = now(),
           last_error = 'cancelled by role ' || session_user
     WHERE p.id = r.id;
    IF r.job_id IS NOT NULL THEN
        UPDATE public.river_job j SET
            state = CASE WHEN j.state = 'running' THEN j.state ELSE 'cancelled' END,
            finalized_at = CASE WHEN j.state = 'running' THEN j.finalized_at ELSE now() END,
            metadata = jsonb_set(j.metadata, '{cancel_attempted_at}', to_jsonb(now()), true)
         WHERE j.id = r.job_id AND j.finalized_at IS NULL
           AND j.state NOT IN ('cancelled', 'completed', 'discarded');
        SELECT j.queue INTO q FROM public.river_job j WHERE j.id = r.job_id;
        PERFORM pg_notify('public.river_control',
                          json_build_object('action', 'cancel', 'job_id', r.job_id,
                                            'queue', coalesce(q, cuzk.job_queue(r.priority)))::text);
    END IF;
    RETURN true;
END $$;

-- Name: FUNCTION cancel_proof(request_id text); Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON FUNCTION cuzk.cancel_proof(request_id text) IS 'Cancels a queued or running request of the caller''s (any, for cuzk_operator; last_error: cancelled by role <session user>) and returns true; returns false, changing nothing, when it had already succeeded, failed or been cancelled.';

-- Name: circuits_key_version(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.circuits_key_version() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    v int;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.vk = OLD.vk AND NEW.key_version IS NOT DISTINCT FROM OLD.key_version THEN
        RETURN NEW;
    END IF;
    SELECT k.version INTO v FROM cuzk.circuit_keys k
     WHERE k.circuit = NEW.name AND k.vk_digest = encode(sha256(NEW.vk), 'hex');
    IF v IS NULL THEN
        SELECT coalesce(max(k.version), 0) + 1 INTO v FROM cuzk.circuit_keys k WHERE k.circuit = NEW.name;
        INSERT INTO cuzk.circuit_keys (circuit, version, vk, pk_digest) VALUES (NEW.name, v, NEW.vk, NEW.pk_digest);
    END IF;
    NEW.key_version := v;
    RETURN NEW;
END $$;

-- Name: compare_timings(text, double precision, double precision, integer, text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.compare_timings(spec text, threshold_pct double precision DEFAULT 5, confidence double precision DEFAULT 0.95, min_n integer DEFAULT 10, for_circuit text DEFAULT NULL::text) RETURNS SETOF cuzk.timing_comparison
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    parts text[] := string_to_array(spec, '..');
BEGIN
    IF cardinality(parts) <> 2 THEN
        RAISE EXCEPTION 'compare "%": want A..B with ".." once', spec USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY SELECT * FROM cuzk.compare_timings(parts[1], parts[2], threshold_pct, confidence, min_n, for_circuit);
END $$;

-- Name: compare_timings(text, text, double precision, double precision, integer, text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.compare_timings(a_selector text, b_selector text, threshold_pct double precision DEFAULT 5, confidence double precision DEFAULT 0.95, min_n integer DEFAULT 10, for_circuit text DEFAULT NULL::text) RETURNS SETOF cuzk.timing_comparison
    LANGUAGE plpgsql STABLE
    AS $$
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

-- Name: compare_timings(text, text, text, text, double precision, double precision, integer, text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.compare_timings(a_kind text, a_value text, b_kind text, b_value text, threshold_pct double precision DEFAULT 5, confidence double precision DEFAULT 0.95, min_n integer DEFAULT 10, for_circuit text DEFAULT NULL::text) RETURNS SETOF cuzk.timing_comparison
    LANGUAGE sql STABLE
    AS $$
    SELECT * FROM cuzk.compare_timings(coalesce(nullif(a_kind, ''), 'auto') || ':' || a_value,
                                       coalesce(nullif(b_kind, ''), 'auto') || ':' || b_value,
                                       threshold_pct, confidence, min_n, for_circuit)
$$;

-- Name: enqueue(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.enqueue(req_id text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    r   cuzk.proof_requests;
    jid bigint;
BEGIN
    SELECT * INTO STRICT r FROM cuzk.proof_requests WHERE request_id = req_id;
    INSERT INTO public.river_job (args, kind, max_attempts, priority, queue, state, scheduled_at, metadata)
    VALUES (jsonb_build_object('request_id', r.request_id, 'circuit', r.circuit),
            'cuzk_prove', r.max_attempts, r.priority, cuzk.job_queue(r.priority), 'available', now(), '{}')
    RETURNING id INTO jid;
    UPDATE cuzk.proof_requests SET job_id = jid, updated_at = now() WHERE id = r.id;
    PERFORM pg_notify('public.river_insert', json_build_object('queue', cuzk.job_queue(r.priority))::text);
    RETURN jid;
END $$;

-- Name: fill_attempt_hours(timestamp with time zone); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.fill_attempt_hours(since timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql
    AS $$
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

-- Name: holds(name); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.holds(role name) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
    SELECT pg_has_role(session_user, role, 'MEMBER')
        OR pg_has_role(session_user, (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'cuzk'), 'MEMBER')
$$;

-- Name: job_queue(integer); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.job_queue(priority integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
    SELECT CASE WHEN priority = 1 THEN 'cuzk_urgent' ELSE 'cuzk' END
$$;

-- Name: FUNCTION job_queue(priority integer); Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON FUNCTION cuzk.job_queue(priority integer) IS 'The River queue of the job of a request of this priority: cuzk_urgent for 1 (urgent), cuzk for the others.';

-- Name: submitters; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.submitters (
    name text NOT NULL,
    max_queued bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT submitters_max_queued_check CHECK ((max_queued >= 0))
);

-- Name: TABLE submitters; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON TABLE cuzk.submitters IS 'One row per submitting login (created at its first request, or by an operator ahead of it); its row lock serializes the admission of its requests to River.';

-- Name: COLUMN submitters.max_queued; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.submitters.max_queued IS 'Most queued requests the submitter may have; an insert over it is refused. NULL: no limit.';

-- Name: lock_submitter(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.lock_submitter(who text) RETURNS cuzk.submitters
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    s cuzk.submitters;
BEGIN
    INSERT INTO cuzk.submitters (name) VALUES (who) ON CONFLICT DO NOTHING;
    SELECT * INTO STRICT s FROM cuzk.submitters WHERE name = who FOR UPDATE;
    RETURN s;
END $$;

-- Name: log_median_se(double precision[], double precision); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.log_median_se(x double precision[], z double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT (ln(greatest(x[n - c + 1], 0.001)) - ln(greatest(x[c], 0.001))) / (2 * z)
      FROM (SELECT cardinality(x) AS n) s
     CROSS JOIN LATERAL (SELECT greatest(1, least(s.n, floor((s.n + 1) / 2.0 - z * sqrt(s.n) / 2 + 0.5)::int)) AS c) o
$$;

-- Name: norm_quantile(double precision); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.norm_quantile(p double precision) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
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

-- Name: proof_requests; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.proof_requests (
    id bigint NOT NULL,
    request_id text NOT NULL,
    circuit text NOT NULL,
    inputs jsonb,
    witness bytea,
    priority integer DEFAULT 2 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    state text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    job_id bigint,
    submitted_by text DEFAULT CURRENT_USER NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    inputs_scrubbed_at timestamp with time zone,
    payload_digest bytea,
    partitions integer DEFAULT 1 NOT NULL,
    CONSTRAINT proof_requests_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
    CONSTRAINT proof_requests_one_input CHECK (((inputs_scrubbed_at IS NOT NULL) OR ((inputs IS NULL) <> (witness IS NULL)))),
    CONSTRAINT proof_requests_partitions_check CHECK ((partitions >= 1)),
    CONSTRAINT proof_requests_priority_check CHECK (((priority >= 1) AND (priority <= 4))),
    CONSTRAINT proof_requests_request_id_check CHECK (((request_id <> ''::text) AND (length(request_id) <= 256))),
    CONSTRAINT proof_requests_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
);
ALTER TABLE ONLY cuzk.proof_requests ALTER COLUMN request_id SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_requests ALTER COLUMN inputs SET COMPRESSION lz4;
ALTER TABLE ONLY cuzk.proof_requests ALTER COLUMN witness SET COMPRESSION lz4;
ALTER TABLE ONLY cuzk.proof_requests ALTER COLUMN last_error SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_requests ALTER COLUMN submitted_by SET STATISTICS 0;

-- Name: COLUMN proof_requests.attempts; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_requests.attempts IS 'Attempts that used up max_attempts, as River counts them: a hand-back at worker shutdown is not counted, so this can be lower than the highest attempt number in proof_attempts.';

-- Name: COLUMN proof_requests.payload_digest; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_requests.payload_digest IS 'sha256 of the inputs as JSON text (jsonb''s canonical form) or of the witness, set at insert; submit_proof compares a resubmission with it. NULL for requests scrubbed before it existed.';

-- Name: COLUMN proof_requests.partitions; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_requests.partitions IS 'Number of partitions: the length of an inputs array, else 1. Set at insert.';

-- Name: own_request(text, text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.own_request(req_id text, verb text) RETURNS cuzk.proof_requests
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    r cuzk.proof_requests;
BEGIN
    SELECT * INTO r FROM cuzk.proof_requests p WHERE p.request_id = req_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown request "%"', req_id USING ERRCODE = 'no_data_found';
    END IF;
    IF r.submitted_by IS DISTINCT FROM session_user AND NOT cuzk.acts_for_all() THEN
        RAISE EXCEPTION 'request "%" was submitted by another role: role "%" may % only its own requests', req_id, session_user, verb
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'members of cuzk_operator act on every request';
    END IF;
    RETURN r;
END $$;

-- Name: phase_builds(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.phase_builds(v text) RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
    SELECT build FROM (SELECT build FROM cuzk.proof_attempts WHERE outcome = 'succeeded'
                       UNION SELECT build FROM cuzk.bench_runs) b
     WHERE build = v OR split_part(build, ' ', 1) = v
        OR (length(v) >= 4 AND starts_with(split_part(build, ' ', 2), v))
$$;

-- Name: phase_configs(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.phase_configs(v text) RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
    SELECT config_hash FROM (SELECT config_hash FROM cuzk.proof_attempts WHERE outcome = 'succeeded'
                             UNION SELECT config_hash FROM cuzk.bench_runs) c
     WHERE length(v) >= 4 AND starts_with(config_hash, lower(v))
$$;

-- Name: proof_requests_admit(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_admit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    who text := session_user;
    s   cuzk.submitters;
    n   bigint;
BEGIN
    -- Every row this statement inserted waits (queued, no job): none waiting, none
    -- inserted (an INSERT … SELECT of no rows), and the login is left alone.
    IF NOT EXISTS (SELECT 1 FROM cuzk.proof_requests w
                    WHERE w.submitted_by = who AND w.state = 'queued' AND w.job_id IS NULL) THEN
        RETURN NULL;
    END IF;
    s := cuzk.lock_submitter(who);
    IF s.max_queued IS NOT NULL THEN
        SELECT count(*) INTO n FROM (
            SELECT 1 FROM cuzk.proof_requests r
             WHERE r.submitted_by = who AND r.priority BETWEEN 1 AND 4 AND r.state = 'queued' AND r.job_id IS NULL
             LIMIT s.max_queued + 1) q;
        n := n + (SELECT count(*) FROM cuzk.proof_requests r
                   WHERE r.submitted_by = who AND r.priority BETWEEN 1 AND 4 AND r.state = 'queued' AND r.job_id IS NOT NULL);
        IF n > s.max_queued THEN
            RAISE EXCEPTION 'role "%" may have at most % queued requests: this insert would exceed it', who, s.max_queued
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'wait for queued requests to finish, or ask an operator to raise cuzk.submitters.max_queued';
        END IF;
    END IF;
    PERFORM cuzk.admit_locked(who);
    RETURN NULL;
END $$;

-- Name: proof_requests_b_partitions(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_b_partitions() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $_$
DECLARE
    lim  int;
    n    int;
    bad  int;
BEGIN
    NEW.partitions := 1;
    IF NEW.inputs IS NULL OR jsonb_typeof(NEW.inputs) <> 'array' THEN
        RETURN NEW;
    END IF;
    n := jsonb_array_length(NEW.inputs);
    lim := coalesce((SELECT s.value::int FROM cuzk.settings s WHERE s.name = 'max_partitions'), 64);
    IF n = 0 OR n > lim THEN
        RAISE EXCEPTION 'request "%": inputs has % partitions, not 1 to %', left(NEW.request_id, 256), n, lim
            USING ERRCODE = 'check_violation', COLUMN = 'inputs',
                  HINT = 'a partitioned request''s inputs is a JSON array of one inputs object per partition; cuzk.settings max_partitions is the limit';
    END IF;
    -- jsonpath reads the elements' types in place; only a refusal looks for which.
    IF jsonb_path_exists(NEW.inputs, '$[*] ? (@.type() != "object")') THEN
        SELECT min(e.i) - 1 INTO bad FROM jsonb_array_elements(NEW.inputs) WITH ORDINALITY AS e(v, i)
         WHERE jsonb_typeof(e.v) <> 'object';
        RAISE EXCEPTION 'request "%": partition % of the inputs array is a JSON %, not an object', left(NEW.request_id, 256), bad,
                        jsonb_typeof(NEW.inputs -> bad)
            USING ERRCODE = 'check_violation', COLUMN = 'inputs',
                  HINT = 'each element holds one partition''s inputs: {"X": "3", "Path.0": "0x1f"}';
    END IF;
    NEW.partitions := n;
    RETURN NEW;
END $_$;

-- Name: proof_requests_check(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_check() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    c       cuzk.circuits;
    cap     bigint;
    lim     bigint;
    why     text;
    hint    text;
    payload bytea;
    what    text := 'inputs';
    part    text := '';
    size    bigint;
    longest int;
    texts   text[] := '{}';
    t       text;
    len     bigint;
BEGIN
    IF NEW.request_id = '' OR length(NEW.request_id) > 256 THEN
        RAISE EXCEPTION 'request_id must be 1 to 256 characters, not %', length(NEW.request_id)
            USING ERRCODE = 'check_violation', COLUMN = 'request_id';
    END IF;
    IF NEW.priority NOT BETWEEN 1 AND 4 THEN
        RAISE EXCEPTION 'request "%": priority must be 1 (most urgent) to 4, not %', left(NEW.request_id, 256), NEW.priority
            USING ERRCODE = 'check_violation', COLUMN = 'priority',
                  HINT = 'the default is 2; workers claim priority 1 first';
    END IF;
    IF NEW.max_attempts NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'request "%": max_attempts must be 1 to 100, not %', left(NEW.request_id, 256), NEW.max_attempts
            USING ERRCODE = 'check_violation', COLUMN = 'max_attempts',
                  HINT = 'the default is 5';
    END IF;
    SELECT * INTO c FROM cuzk.circuits WHERE name = NEW.circuit;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown circuit "%"', left(NEW.circuit, 256)
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'known circuits: ' || coalesce((SELECT string_agg(name, ', ' ORDER BY name) FROM cuzk.circuits), 'none (run cuzk setup)');
    END IF;
    IF (NEW.inputs IS NULL) = (NEW.witness IS NULL) THEN
        RAISE EXCEPTION 'request "%": give exactly one of inputs (jsonb) or witness (bytea)', left(NEW.request_id, 256)
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.inputs IS NOT NULL AND jsonb_typeof(NEW.inputs) NOT IN ('object', 'array') THEN
        RAISE EXCEPTION 'request "%": inputs must be a JSON object (or an array of them, one per partition), not a JSON %',
                        left(NEW.request_id, 256), jsonb_typeof(NEW.inputs)
            USING ERRCODE = 'check_violation', COLUMN = 'inputs',
                  HINT = 'keys are the circuit''s variable names, values decimal or 0x-hex strings: {"X": "3", "Path.0": "0x1f"}';
    END IF;
    IF NEW.witness IS NOT NULL THEN
        payload := NEW.witness;
        what := 'witness';
        lim := c.max_witness_bytes;
        hint := 'a full-witness binary of this circuit is 12 bytes plus 32 per input variable';
    ELSIF NEW.partitions > 1 THEN
        -- One conversion of each element gives both the longest and the whole text
        -- ('[', the elements joined by ', ', then ']' is jsonb's text of an array). A
        -- loop by index keeps the order without sorting megabytes.
        FOR k IN 0 .. NEW.partitions - 1 LOOP
            t := (NEW.inputs -> k)::text;
            texts := texts || t;
            len := octet_length(convert_to(t, 'UTF8'));
            IF size IS NULL OR len > size THEN
                size := len;
                longest := k;
            END IF;
        END LOOP;
        payload := convert_to('[' || array_to_string(texts, ', ') || ']', 'UTF8');
        lim := c.max_inputs_bytes;
        hint := 'no valid inputs of this circuit are longer: each input variable once, its value at most 78 digits';
    ELSE
        payload := convert_to(NEW.inputs::text, 'UTF8');
        lim := c.max_inputs_bytes;
        hint := 'no valid inputs of this circuit are longer: each input variable once, its value at most 78 digits';
    END IF;
    IF lim IS NOT NULL THEN
        why := format('for circuit "%s" (derived from its %s input variables)', c.name, c.public_inputs + c.secret_inputs);
        hint := hint || '; cuzk.settings max_request_bytes can set a lower limit';
    ELSE
        lim := 67108864;
        why := format('for circuit "%s" (the default: the circuit''s own limit is not recorded)', c.name);
        hint := 'cuzk setup for the circuit again (or setup --import with its files) records its own limit';
    END IF;
    cap := (SELECT s.value::bigint FROM cuzk.settings s WHERE s.name = 'max_request_bytes');
    IF cap < lim THEN
        lim := cap;
        why := 'set by cuzk.settings max_request_bytes';
        hint := 'the owner changes the limit with UPDATE cuzk.settings SET value = … WHERE name = ''max_request_bytes'' (NULL: each circuit''s own)';
    END IF;
    IF NEW.partitions > 1 THEN
        -- Each partition within the limit of one request: the longest element decides.
        part := format(' (partition %s)', longest);
    ELSE
        size := octet_length(payload);
    END IF;
    IF size > lim THEN
        RAISE EXCEPTION 'request "%": % of % bytes % the %-byte limit %', left(NEW.request_id, 256), what || part, size,
                        CASE what WHEN 'inputs' THEN 'exceed' ELSE 'exceeds' END, lim, why
            USING ERRCODE = 'program_limit_exceeded', COLUMN = what, HINT = hint;
    END IF;
    NEW.payload_digest := sha256(payload);
    NEW.state := 'queued';
    NEW.attempts := 0;
    RETURN NEW;
END $$;

-- Name: proof_requests_owner_moved(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_owner_moved() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    UPDATE cuzk.proofs SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    UPDATE cuzk.proof_attempts SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    UPDATE cuzk.partition_proofs SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    UPDATE cuzk.partition_attempts SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    RETURN NULL;
END $$;

-- Name: proof_requests_priority(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_priority() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    IF NEW.job_id IS NOT NULL THEN
        UPDATE public.river_job j SET queue = cuzk.job_queue(NEW.priority), priority = NEW.priority
         WHERE j.id = NEW.job_id AND j.state IN ('available', 'scheduled', 'retryable', 'pending');
        IF FOUND THEN
            PERFORM pg_notify('public.river_insert', json_build_object('queue', cuzk.job_queue(NEW.priority))::text);
        END IF;
    END IF;
    IF NEW.state = 'queued' AND cuzk.try_lock_submitter(NEW.submitted_by) THEN
        PERFORM cuzk.admit_locked(NEW.submitted_by);
    END IF;
    RETURN NULL;
END $$;

-- Name: proof_requests_readmit(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_readmit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    IF NOT cuzk.try_lock_submitter(NEW.submitted_by) THEN
        RETURN NULL;  -- the holder is the submitter or an admission: admit_waiting catches up
    END IF;
    IF OLD.state = 'queued' AND OLD.job_id IS NOT NULL AND NOT (NEW.state = 'queued' AND NEW.job_id IS NULL)
       AND (SELECT j.state FROM public.river_job j WHERE j.id = OLD.job_id) IN ('available', 'running') THEN
        IF cuzk.admit_into(NEW.submitted_by, OLD.priority, OLD.partitions) > 0
           OR NOT EXISTS (SELECT 1 FROM cuzk.proof_requests w
                           WHERE w.submitted_by = NEW.submitted_by AND w.priority = OLD.priority
                             AND w.state = 'queued' AND w.job_id IS NULL) THEN
            RETURN NULL;
        END IF;
    END IF;
    PERFORM cuzk.admit_locked(NEW.submitted_by);
    RETURN NULL;
END $$;

-- Name: proof_requests_shape(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_shape() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    IF NEW.inputs IS NULL OR jsonb_typeof(NEW.inputs) = 'object'
       OR (jsonb_typeof(NEW.inputs) = 'array' AND jsonb_array_length(NEW.inputs) = NEW.partitions) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'request "%": inputs must be a JSON object, or an array of partitions objects (%)',
                    left(NEW.request_id, 256), NEW.partitions
        USING ERRCODE = 'check_violation', COLUMN = 'inputs', CONSTRAINT = 'proof_requests_inputs_shape';
END $$;

-- Name: proof_requests_tenant(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proof_requests_tenant() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    col  text;
    hint text;
BEGIN
    IF NEW.request_id IS NULL THEN
        RAISE EXCEPTION 'request_id must not be NULL' USING ERRCODE = 'not_null_violation', COLUMN = 'request_id';
    END IF;
    col := CASE WHEN NEW.circuit IS NULL THEN 'circuit'
                WHEN NEW.priority IS NULL THEN 'priority'
                WHEN NEW.max_attempts IS NULL THEN 'max_attempts' END;
    IF col IS NOT NULL THEN
        hint := CASE col WHEN 'circuit' THEN 'name a circuit of cuzk.circuits'
                         WHEN 'priority' THEN 'leave it out for the default, 2; 1 (urgent) to 4'
                         ELSE 'leave it out for the default, 5; 1 to 100' END;
        RAISE EXCEPTION 'request "%": % must not be NULL', left(NEW.request_id, 256), col
            USING ERRCODE = 'not_null_violation', COLUMN = col, HINT = hint;
    END IF;
    IF NEW.priority = 1 AND NOT cuzk.holds('cuzk_urgent') THEN
        RAISE EXCEPTION 'request "%": priority 1 (urgent) is for roles granted cuzk_urgent, which role "%" is not',
                        left(NEW.request_id, 256), session_user
            USING ERRCODE = 'insufficient_privilege', COLUMN = 'priority',
                  HINT = 'submit at priority 2 to 4, or ask an operator for GRANT cuzk_urgent';
    END IF;
    NEW.submitted_by := session_user;
    NEW.job_id := NULL;
    RETURN NEW;
END $$;

-- Name: proofs_key_version(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.proofs_key_version() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    IF NEW.key_version IS NULL THEN
        SELECT c.key_version INTO NEW.key_version FROM cuzk.circuits c WHERE c.name = NEW.circuit;
    END IF;
    RETURN NEW;
END $$;

-- Name: repair_jobs(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.repair_jobs() RETURNS TABLE(request_id text, job_id bigint, action text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    RETURN QUERY
    WITH bad AS (
        SELECT r.id, r.job_id, j.state AS job_state
          FROM cuzk.proof_requests r LEFT JOIN public.river_job j ON j.id = r.job_id
         WHERE r.state = 'queued' AND r.job_id IS NOT NULL
           AND (j.id IS NULL OR j.state IN ('cancelled', 'completed'))
           FOR UPDATE OF r SKIP LOCKED
    ), fixed AS (
        UPDATE cuzk.proof_requests r
           SET job_id = CASE WHEN b.job_state = 'cancelled' THEN r.job_id END,
               state = CASE WHEN b.job_state = 'cancelled' THEN 'cancelled' ELSE 'queued' END,
               finished_at = CASE WHEN b.job_state = 'cancelled' THEN now() END,
               updated_at = now(),
               last_error = CASE WHEN b.job_state = 'cancelled'
                                 THEN format('River job %s was cancelled outside cuzk', b.job_id)
                                 ELSE format('River job %s was %s outside cuzk; queued again', b.job_id,
                                             coalesce(b.job_state::text, 'deleted')) END
          FROM bad b WHERE r.id = b.id
        RETURNING r.request_id, b.job_id, CASE WHEN b.job_state = 'cancelled' THEN 'cancelled' ELSE 'requeued' END
    ), moved AS (
        UPDATE public.river_job j SET queue = cuzk.job_queue(r.priority), priority = r.priority
          FROM cuzk.proof_requests r
         WHERE r.job_id = j.id AND r.state = 'queued' AND j.kind = 'cuzk_prove'
           AND j.state IN ('available', 'scheduled', 'retryable', 'pending')
           AND j.queue IS DISTINCT FROM cuzk.job_queue(r.priority)
        RETURNING r.request_id, j.id, 'moved'::text
    )
    SELECT * FROM fixed UNION ALL SELECT * FROM moved;
END $$;

-- Name: FUNCTION repair_jobs(); Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON FUNCTION cuzk.repair_jobs() IS 'Queued requests whose River job was deleted or completed outside cuzk wait for a new one; those whose job was cancelled there are cancelled; a job waiting in the queue of another priority than its request''s (cuzk.job_queue) is moved to its own. The leader''s upkeep runs it.';

-- Name: resolve_selector(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.resolve_selector(selector text, OUT sel_kind text, OUT sel_value text, OUT sel_from timestamp with time zone, OUT sel_to timestamp with time zone, OUT sel_bench bigint, OUT sel_arm text, OUT description text) RETURNS record
    LANGUAGE sql STABLE
    AS $_$
    SELECT r.* FROM (SELECT regexp_match(btrim(selector), '^(build|config|window|bench|auto):(.*)$', 'i') AS m) s
     CROSS JOIN LATERAL cuzk.resolve_selector(coalesce(s.m[1], 'auto'), coalesce(s.m[2], selector)) r
$_$;

-- Name: resolve_selector(text, text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.resolve_selector(kind text, value text, OUT sel_kind text, OUT sel_value text, OUT sel_from timestamp with time zone, OUT sel_to timestamp with time zone, OUT sel_bench bigint, OUT sel_arm text, OUT description text) RETURNS record
    LANGUAGE plpgsql STABLE
    AS $_$
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
            SELECT a.config::text FROM cuzk.proof_attempts a WHERE a.config_hash = sel_value AND a.config IS NOT NULL LIMIT 1), '');
        -- A statement of its own: it is checked for the column's privilege only when it runs.
        IF description = 'config ' || sel_value AND has_column_privilege('cuzk.bench_runs', 'config', 'SELECT') THEN
            description := description || coalesce(' ' || (
                SELECT b.config::text FROM cuzk.bench_runs b WHERE b.config_hash = sel_value AND b.config IS NOT NULL LIMIT 1), '');
        END IF;
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
END $_$;

-- Name: retry_proof(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.retry_proof(request_id text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    r   cuzk.proof_requests;
    jid bigint;
BEGIN
    r := cuzk.own_request(retry_proof.request_id, 'retry');
    IF r.state NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION 'request "%" is %, only failed or cancelled requests can be retried', retry_proof.request_id, r.state
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF r.inputs_scrubbed_at IS NOT NULL THEN
        RAISE EXCEPTION 'request "%" cannot be retried: its inputs were scrubbed at %', retry_proof.request_id, r.inputs_scrubbed_at
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'submit it again under a new request_id; cuzk.settings ended_inputs_kept says how long a failed or cancelled request keeps its inputs';
    END IF;
    UPDATE cuzk.proof_requests p SET state = 'queued', job_id = NULL, finished_at = NULL, updated_at = now()
     WHERE p.id = r.id;
    SELECT p.job_id INTO jid FROM cuzk.proof_requests p WHERE p.id = r.id;
    RETURN jid;
END $$;

-- Name: FUNCTION retry_proof(request_id text); Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON FUNCTION cuzk.retry_proof(request_id text) IS 'Queues a failed or cancelled request of the caller''s (any, for cuzk_operator) again; returns its River job id, or NULL while it waits for admission behind the submitter''s other queued requests.';

-- Name: roll_hours(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.roll_hours(lo timestamp with time zone, hi timestamp with time zone) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO cuzk.attempt_hours
    SELECT * FROM cuzk.attempt_stats(lo, hi, interval '1 hour')
    ON CONFLICT (circuit, hour) DO UPDATE
       SET succeeded = EXCLUDED.succeeded, failed = EXCLUDED.failed, timed = EXCLUDED.timed,
           sums = EXCLUDED.sums, counts = EXCLUDED.counts, hist_b = EXCLUDED.hist_b, hist_n = EXCLUDED.hist_n
$$;

-- Name: row_submitted_by(); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.row_submitted_by() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
BEGIN
    NEW.submitted_by := (SELECT r.submitted_by FROM cuzk.proof_requests r WHERE r.request_id = NEW.request_id);
    RETURN NEW;
END $$;

-- Name: scrub_ended_inputs(integer); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.scrub_ended_inputs(lim integer DEFAULT 10000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    kept interval := (SELECT s.value::interval FROM cuzk.settings s WHERE s.name = 'ended_inputs_kept');
    n    bigint;
BEGIN
    IF kept IS NULL THEN
        RETURN 0;
    END IF;
    UPDATE cuzk.proof_requests r SET inputs = NULL, witness = NULL, inputs_scrubbed_at = now()
     WHERE r.id IN (SELECT e.id FROM cuzk.proof_requests e
                     WHERE e.state IN ('failed', 'cancelled') AND e.inputs_scrubbed_at IS NULL
                       AND e.finished_at < now() - kept
                     ORDER BY e.finished_at LIMIT lim FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Name: FUNCTION scrub_ended_inputs(lim integer); Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON FUNCTION cuzk.scrub_ended_inputs(lim integer) IS 'Scrubs the inputs of up to lim failed or cancelled requests ended longer ago than cuzk.settings ended_inputs_kept; the leader''s upkeep runs it.';

-- Name: submit_proof(text, text, jsonb, bytea, integer, integer); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.submit_proof(request_id text, circuit text, inputs jsonb DEFAULT NULL::jsonb, witness bytea DEFAULT NULL::bytea, priority integer DEFAULT 2, max_attempts integer DEFAULT 5) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    AS $$
DECLARE
    rid    bigint;
    owner  text;
    had    text;
    digest bytea;
BEGIN
    INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, witness, priority, max_attempts)
    VALUES (submit_proof.request_id, submit_proof.circuit, submit_proof.inputs, submit_proof.witness,
            submit_proof.priority, submit_proof.max_attempts)
    ON CONFLICT ON CONSTRAINT proof_requests_request_id_key DO NOTHING
    RETURNING id INTO rid;
    IF rid IS NOT NULL THEN
        RETURN rid;
    END IF;
    SELECT r.submitted_by INTO STRICT owner FROM cuzk.proof_requests r WHERE r.request_id = submit_proof.request_id;
    IF owner IS DISTINCT FROM session_user THEN
        RAISE EXCEPTION 'request "%" already exists, submitted by another role', submit_proof.request_id
            USING ERRCODE = 'unique_violation',
                  HINT = 'request_ids are shared by all submitters: submit under a request_id of your own (a prefix of yours)';
    END IF;
    SELECT r.id, r.circuit, r.payload_digest INTO STRICT rid, had, digest
      FROM cuzk.proof_requests r WHERE r.request_id = submit_proof.request_id;
    IF had <> submit_proof.circuit THEN
        RAISE EXCEPTION 'request "%" already exists for circuit "%", not "%"', submit_proof.request_id, had, submit_proof.circuit
            USING ERRCODE = 'unique_violation',
                  HINT = 'a request_id names one proof: submit other work under a new request_id';
    END IF;
    IF digest IS NOT NULL
       AND digest <> sha256(coalesce(submit_proof.witness, convert_to(submit_proof.inputs::text, 'UTF8'))) THEN
        RAISE EXCEPTION 'request "%" already exists with different inputs', submit_proof.request_id
            USING ERRCODE = 'unique_violation',
                  HINT = 'a request_id names one proof: submit other inputs under a new request_id';
    END IF;
    RETURN rid;
END $$;

-- Name: timing_history(interval, timestamp with time zone, text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.timing_history(bucket interval DEFAULT '01:00:00'::interval, since timestamp with time zone DEFAULT (now() - '7 days'::interval), for_circuit text DEFAULT NULL::text) RETURNS TABLE(circuit text, period timestamp with time zone, phase text, n bigint, p50_ms double precision, p95_ms double precision, mean_ms double precision)
    LANGUAGE sql STABLE
    AS $$
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

-- Name: FUNCTION timing_history(bucket interval, since timestamp with time zone, for_circuit text); Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON FUNCTION cuzk.timing_history(bucket interval, since timestamp with time zone, for_circuit text) IS 'Per circuit, period (date_bin from 2000-01-01) and phase: count, p50, p95 and mean in ms of succeeded attempts finished since since, rounded to 3 decimals.';

-- Name: timing_samples(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.timing_samples(selector text) RETURNS TABLE(source text, circuit text, phase text, ord integer, ms double precision)
    LANGUAGE plpgsql STABLE
    AS $$
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

-- Name: try_lock_submitter(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.try_lock_submitter(who text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'cuzk', 'pg_temp'
    SET lock_timeout TO '1s'
    AS $$
BEGIN
    PERFORM 1 FROM cuzk.submitters WHERE name = who FOR UPDATE;
    RETURN FOUND;
EXCEPTION WHEN lock_not_available THEN
    RETURN false;
END $$;

-- Name: window_bound(text); Type: FUNCTION; Schema: cuzk; Owner: -

CREATE FUNCTION cuzk.window_bound(s text) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    IF btrim(s) ~ '^[-+]' THEN
        RETURN now() + btrim(s)::interval;
    END IF;
    RETURN btrim(s)::timestamptz;
EXCEPTION WHEN data_exception THEN
    RAISE EXCEPTION 'window bound "%": want a timestamp or an interval like -7 days', s
        USING ERRCODE = 'invalid_parameter_value';
END $$;

-- Name: attempt_hours; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.attempt_hours (
    circuit text NOT NULL,
    hour timestamp with time zone NOT NULL,
    succeeded bigint NOT NULL,
    failed bigint NOT NULL,
    timed bigint NOT NULL,
    sums double precision[] NOT NULL,
    counts bigint[] NOT NULL,
    hist_b smallint[] NOT NULL,
    hist_n bigint[] NOT NULL
);

-- Name: TABLE attempt_hours; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON TABLE cuzk.attempt_hours IS 'cuzk.attempt_stats by hour for closed hours between attempt_hours_mark.filled_from and filled_until (see cuzk.fill_attempt_hours).';

-- Name: attempt_hours_mark; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.attempt_hours_mark (
    one boolean DEFAULT true NOT NULL,
    filled_from timestamp with time zone NOT NULL,
    filled_until timestamp with time zone NOT NULL,
    CONSTRAINT attempt_hours_mark_one_check CHECK (one)
);

-- Name: proof_attempts; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.proof_attempts (
    id bigint NOT NULL,
    request_id text NOT NULL,
    attempt integer NOT NULL,
    circuit text NOT NULL,
    job_id bigint,
    outcome text DEFAULT 'running'::text NOT NULL,
    error text,
    worker text NOT NULL,
    backend text,
    device text,
    batch_id uuid,
    batch_size integer,
    mem_reserved_bytes bigint,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    synth_started_at timestamp with time zone,
    prove_started_at timestamp with time zone,
    finished_at timestamp with time zone,
    queue_ms double precision,
    batch_wait_ms double precision,
    mem_wait_ms double precision,
    srs_ms double precision,
    synth_ms double precision,
    prove_wait_ms double precision,
    prove_ms double precision,
    ntt_ms double precision,
    msm_ms double precision,
    verify_ms double precision,
    persist_ms double precision,
    total_ms double precision,
    telemetry jsonb,
    build text,
    config_hash text,
    config jsonb,
    h2d_ms double precision,
    msm_g1_ms double precision,
    msm_g2_ms double precision,
    submitted_by text,
    CONSTRAINT proof_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'retryable'::text, 'interrupted'::text, 'cancelled'::text])))
);
ALTER TABLE ONLY cuzk.proof_attempts ALTER COLUMN request_id SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_attempts ALTER COLUMN error SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_attempts ALTER COLUMN worker SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_attempts ALTER COLUMN device SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_attempts ALTER COLUMN telemetry SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_attempts ALTER COLUMN config SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proof_attempts ALTER COLUMN submitted_by SET STATISTICS 0;

-- Name: COLUMN proof_attempts.attempt; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_attempts.attempt IS 'Attempt number: one more than the request''s highest, whether or not that one was counted.';

-- Name: COLUMN proof_attempts.outcome; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_attempts.outcome IS 'running while in flight; succeeded; failed (bad input, or the last allowed attempt); retryable (will be retried); cancelled (cancel_proof); interrupted: the worker died (rescued), was stopped (work handed back), was superseded by a rescue, or a late duplicate completion found the proof already stored.';

-- Name: COLUMN proof_attempts.build; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_attempts.build IS 'Module version and VCS revision of the worker binary, "+dirty" when built from a modified tree.';

-- Name: COLUMN proof_attempts.config_hash; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_attempts.config_hash IS 'Stable hash of config: the worker settings that change performance.';

-- Name: COLUMN proof_attempts.submitted_by; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proof_attempts.submitted_by IS 'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';

-- Name: attempt_phases; Type: VIEW; Schema: cuzk; Owner: -

CREATE VIEW cuzk.attempt_phases WITH (security_barrier='true') AS
 SELECT a.request_id,
    a.circuit,
    a.attempt,
    a.outcome,
    a.backend,
    a.device,
    a.worker,
    a.batch_size,
    a.finished_at,
    p.ord,
    p.phase,
    p.ms
   FROM (cuzk.proof_attempts a
     CROSS JOIN LATERAL ( VALUES (1,'queue'::text,a.queue_ms), (2,'batch_wait'::text,a.batch_wait_ms), (3,'mem_wait'::text,a.mem_wait_ms), (4,'srs'::text,a.srs_ms), (5,'synth'::text,a.synth_ms), (6,'prove_wait'::text,a.prove_wait_ms), (7,'prove'::text,a.prove_ms), (8,'h2d'::text,a.h2d_ms), (9,'ntt'::text,a.ntt_ms), (10,'msm'::text,a.msm_ms), (11,'msm_g1'::text,a.msm_g1_ms), (12,'msm_g2'::text,a.msm_g2_ms), (13,'verify'::text,a.verify_ms), (14,'persist'::text,a.persist_ms), (15,'total'::text,a.total_ms)) p(ord, phase, ms))
  WHERE ((p.ms IS NOT NULL) AND (( SELECT cuzk.acts_for_all() AS acts_for_all) OR (a.submitted_by = SESSION_USER)));

-- Name: VIEW attempt_phases; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON VIEW cuzk.attempt_phases IS 'Every timed phase of every attempt the login may read: of its own requests (any, for cuzk_operator, cuzk_worker and the owner).';

-- Name: bench_id_seq; Type: SEQUENCE; Schema: cuzk; Owner: -

CREATE SEQUENCE cuzk.bench_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

-- Name: bench_runs; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.bench_runs (
    id bigint NOT NULL,
    bench_id bigint NOT NULL,
    arm text DEFAULT ''::text NOT NULL,
    run integer NOT NULL,
    label text DEFAULT ''::text NOT NULL,
    circuit text NOT NULL,
    worker text NOT NULL,
    build text,
    config_hash text,
    config jsonb,
    backend text,
    device text,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    synth_ms double precision,
    prove_ms double precision,
    ntt_ms double precision,
    msm_ms double precision,
    msm_g1_ms double precision,
    msm_g2_ms double precision,
    h2d_ms double precision,
    verify_ms double precision,
    total_ms double precision,
    CONSTRAINT bench_runs_arm_check CHECK ((arm = ANY (ARRAY[''::text, 'A'::text, 'B'::text])))
);

-- Name: TABLE bench_runs; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON TABLE cuzk.bench_runs IS 'One row per timed proof of cuzk bench --record. Submitters read every column but worker, device and config.';

-- Name: bench_runs_id_seq; Type: SEQUENCE; Schema: cuzk; Owner: -

ALTER TABLE cuzk.bench_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME cuzk.bench_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: circuit_keys; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.circuit_keys (
    circuit text NOT NULL,
    version integer NOT NULL,
    vk bytea NOT NULL,
    vk_digest text GENERATED ALWAYS AS (encode(sha256(vk), 'hex'::text)) STORED NOT NULL,
    pk_digest text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT circuit_keys_version_check CHECK ((version >= 1))
);

-- Name: TABLE circuit_keys; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON TABLE cuzk.circuit_keys IS 'Every key a circuit has had; cuzk.proofs.key_version names the one each proof was made with. Rows are never changed or removed.';

-- Name: circuits; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.circuits (
    name text NOT NULL,
    constraints bigint NOT NULL,
    public_inputs integer NOT NULL,
    wires bigint NOT NULL,
    curve text DEFAULT 'bls12-381'::text NOT NULL,
    vk bytea NOT NULL,
    pk_digest text NOT NULL,
    source text DEFAULT 'builtin'::text NOT NULL,
    mem_estimate_bytes bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    key_version integer NOT NULL,
    secret_inputs integer,
    max_inputs_bytes bigint,
    max_witness_bytes bigint GENERATED ALWAYS AS ((12 + (32 * (public_inputs + (secret_inputs)::bigint)))) STORED,
    CONSTRAINT circuits_constraints_check CHECK ((constraints > 0)),
    CONSTRAINT circuits_curve_check CHECK ((curve = 'bls12-381'::text)),
    CONSTRAINT circuits_max_inputs_bytes_check CHECK ((max_inputs_bytes > 0)),
    CONSTRAINT circuits_name_check CHECK ((name ~ '^[a-z0-9][a-z0-9._-]{0,127}$'::text)),
    CONSTRAINT circuits_public_inputs_check CHECK ((public_inputs >= 0)),
    CONSTRAINT circuits_request_limits CHECK (((secret_inputs IS NULL) = (max_inputs_bytes IS NULL))),
    CONSTRAINT circuits_secret_inputs_check CHECK ((secret_inputs >= 0)),
    CONSTRAINT circuits_source_check CHECK ((source = ANY (ARRAY['builtin'::text, 'imported'::text]))),
    CONSTRAINT circuits_wires_check CHECK ((wires > 0))
);

-- Name: COLUMN circuits.key_version; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.circuits.key_version IS 'Version in cuzk.circuit_keys of the current vk (the vk column).';

-- Name: COLUMN circuits.secret_inputs; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.circuits.secret_inputs IS 'Secret input variables; public_inputs + secret_inputs are the keys of a request''s inputs. NULL for a circuit registered before it was recorded.';

-- Name: COLUMN circuits.max_inputs_bytes; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.circuits.max_inputs_bytes IS 'Longest valid inputs of the circuit as jsonb text (every input nested one object deep per name segment, values of 78 digits); a longer request is refused at insert.';

-- Name: COLUMN circuits.max_witness_bytes; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.circuits.max_witness_bytes IS 'Size of the circuit''s full-witness binary (12 + 32 per input variable); a longer witness is refused at insert.';

-- Name: partition_attempts; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.partition_attempts (
    request_id text NOT NULL,
    attempt integer NOT NULL,
    partition integer NOT NULL,
    outcome text NOT NULL,
    error text,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    batch_wait_ms double precision,
    mem_wait_ms double precision,
    srs_ms double precision,
    synth_ms double precision,
    prove_wait_ms double precision,
    prove_ms double precision,
    h2d_ms double precision,
    ntt_ms double precision,
    msm_ms double precision,
    msm_g1_ms double precision,
    msm_g2_ms double precision,
    verify_ms double precision,
    persist_ms double precision,
    total_ms double precision,
    synth_started_at timestamp with time zone,
    prove_started_at timestamp with time zone,
    submitted_by text,
    CONSTRAINT partition_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['succeeded'::text, 'failed'::text]))),
    CONSTRAINT partition_attempts_partition_check CHECK ((partition >= 0))
);
ALTER TABLE ONLY cuzk.partition_attempts ALTER COLUMN request_id SET STATISTICS 0;
ALTER TABLE ONLY cuzk.partition_attempts ALTER COLUMN error SET STATISTICS 0;
ALTER TABLE ONLY cuzk.partition_attempts ALTER COLUMN submitted_by SET STATISTICS 0;

-- Name: TABLE partition_attempts; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON TABLE cuzk.partition_attempts IS 'Each partition an attempt worked on, with its phase times in milliseconds (total_ms: from its start to its proof stored); the attempt''s phase columns are their sums.';

-- Name: COLUMN partition_attempts.synth_started_at; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.partition_attempts.synth_started_at IS 'When the partition''s synthesis began (after its memory reservation); it ends synth_ms later.';

-- Name: COLUMN partition_attempts.prove_started_at; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.partition_attempts.prove_started_at IS 'When the partition''s proving began on its device (after any wait behind the device''s other lane); it ends prove_ms later.';

-- Name: COLUMN partition_attempts.submitted_by; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.partition_attempts.submitted_by IS 'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';

-- Name: partition_proofs; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.partition_proofs (
    request_id text NOT NULL,
    partition integer NOT NULL,
    proof bytea NOT NULL,
    public_witness bytea NOT NULL,
    key_version integer NOT NULL,
    attempt integer NOT NULL,
    worker text NOT NULL,
    backend text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    submitted_by text,
    CONSTRAINT partition_proofs_partition_check CHECK ((partition >= 0))
);
ALTER TABLE ONLY cuzk.partition_proofs ALTER COLUMN request_id SET STATISTICS 0;
ALTER TABLE ONLY cuzk.partition_proofs ALTER COLUMN proof SET STATISTICS 0;
ALTER TABLE ONLY cuzk.partition_proofs ALTER COLUMN public_witness SET STATISTICS 0;
ALTER TABLE ONLY cuzk.partition_proofs ALTER COLUMN worker SET STATISTICS 0;
ALTER TABLE ONLY cuzk.partition_proofs ALTER COLUMN submitted_by SET STATISTICS 0;

-- Name: TABLE partition_proofs; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON TABLE cuzk.partition_proofs IS 'The verified proof of each partition of a partitioned request, stored as soon as it is made; a retry proves only the partitions missing here.';

-- Name: COLUMN partition_proofs.submitted_by; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.partition_proofs.submitted_by IS 'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';

-- Name: phase_samples; Type: VIEW; Schema: cuzk; Owner: -

CREATE VIEW cuzk.phase_samples AS
 SELECT 'worker'::text AS source,
    a.circuit,
    a.build,
    a.config_hash,
    a.finished_at,
    NULL::bigint AS bench_id,
    NULL::text AS arm,
    p.ord,
    p.phase,
    p.ms
   FROM (cuzk.proof_attempts a
     CROSS JOIN LATERAL ( VALUES (1,'queue'::text,a.queue_ms), (2,'batch_wait'::text,a.batch_wait_ms), (3,'mem_wait'::text,a.mem_wait_ms), (4,'srs'::text,a.srs_ms), (5,'synth'::text,a.synth_ms), (6,'prove_wait'::text,a.prove_wait_ms), (7,'prove'::text,a.prove_ms), (8,'h2d'::text,a.h2d_ms), (9,'ntt'::text,a.ntt_ms), (10,'msm'::text,a.msm_ms), (11,'msm_g1'::text,a.msm_g1_ms), (12,'msm_g2'::text,a.msm_g2_ms), (13,'verify'::text,a.verify_ms), (14,'persist'::text,a.persist_ms), (15,'total'::text,a.total_ms)) p(ord, phase, ms))
  WHERE ((a.outcome = 'succeeded'::text) AND (p.ms IS NOT NULL))
UNION ALL
 SELECT 'bench'::text AS source,
    b.circuit,
    b.build,
    b.config_hash,
    b.finished_at,
    b.bench_id,
    b.arm,
    p.ord,
    p.phase,
    p.ms
   FROM (cuzk.bench_runs b
     CROSS JOIN LATERAL ( VALUES (5,'synth'::text,b.synth_ms), (7,'prove'::text,b.prove_ms), (8,'h2d'::text,b.h2d_ms), (9,'ntt'::text,b.ntt_ms), (10,'msm'::text,b.msm_ms), (11,'msm_g1'::text,b.msm_g1_ms), (12,'msm_g2'::text,b.msm_g2_ms), (13,'verify'::text,b.verify_ms), (15,'total'::text,b.total_ms)) p(ord, phase, ms))
  WHERE (p.ms IS NOT NULL);

-- Name: proof_attempts_id_seq; Type: SEQUENCE; Schema: cuzk; Owner: -

ALTER TABLE cuzk.proof_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME cuzk.proof_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: proof_requests_id_seq; Type: SEQUENCE; Schema: cuzk; Owner: -

ALTER TABLE cuzk.proof_requests ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME cuzk.proof_requests_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: proof_status; Type: VIEW; Schema: cuzk; Owner: -

CREATE VIEW cuzk.proof_status WITH (security_barrier='true') AS
 SELECT r.request_id,
    r.circuit,
    r.state,
    r.attempts,
    r.last_error,
    r.priority,
    r.created_at,
    r.updated_at,
    r.finished_at,
    r.submitted_by
   FROM cuzk.proof_requests r
  WHERE (( SELECT cuzk.acts_for_all() AS acts_for_all) OR (r.submitted_by = SESSION_USER));

-- Name: VIEW proof_status; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON VIEW cuzk.proof_status IS 'One row per request the login may read: its own (any, for cuzk_operator, cuzk_worker and the owner).';

-- Name: proofs; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.proofs (
    request_id text NOT NULL,
    circuit text NOT NULL,
    proof bytea NOT NULL,
    public_witness bytea NOT NULL,
    attempt integer NOT NULL,
    worker text NOT NULL,
    backend text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    key_version integer NOT NULL,
    partitions integer DEFAULT 1 NOT NULL,
    proofs bytea[],
    public_witnesses bytea[],
    submitted_by text,
    CONSTRAINT proofs_partitions CHECK ((((proofs IS NULL) AND (public_witnesses IS NULL) AND (partitions = 1)) OR ((cardinality(proofs) = partitions) AND (cardinality(public_witnesses) = partitions)))),
    CONSTRAINT proofs_partitions_check CHECK ((partitions >= 1))
);
ALTER TABLE ONLY cuzk.proofs ALTER COLUMN request_id SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proofs ALTER COLUMN proof SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proofs ALTER COLUMN public_witness SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proofs ALTER COLUMN worker SET STATISTICS 0;
ALTER TABLE ONLY cuzk.proofs ALTER COLUMN submitted_by SET STATISTICS 0;

-- Name: COLUMN proofs.proof; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proofs.proof IS 'gnark Proof.WriteTo of the proof; for a partitioned request the N proofs, each preceded by its length as a 4-byte big-endian integer.';

-- Name: COLUMN proofs.key_version; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proofs.key_version IS 'Version of the circuit''s key the proof was made with: verify with cuzk.circuit_keys.vk of (circuit, key_version).';

-- Name: COLUMN proofs.proofs; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proofs.proofs IS 'The proofs of a partitioned request in partition order (gnark Proof.WriteTo each); NULL for a single-proof request, whose proof is the proof column.';

-- Name: COLUMN proofs.public_witnesses; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proofs.public_witnesses IS 'The public witnesses of a partitioned request in partition order (gnark witness.MarshalBinary each); NULL for a single-proof request.';

-- Name: COLUMN proofs.submitted_by; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.proofs.submitted_by IS 'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';

-- Name: schema_version; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.schema_version (
    version integer NOT NULL
);

-- Name: settings; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.settings (
    name text NOT NULL,
    value text,
    description text DEFAULT ''::text NOT NULL,
    CONSTRAINT settings_admitted_per_submitter CHECK (((name <> 'admitted_per_submitter'::text) OR (value ~ '^[1-9][0-9]{0,8}$'::text))),
    CONSTRAINT settings_ended_inputs_kept CHECK (((name <> 'ended_inputs_kept'::text) OR (value IS NULL) OR (value ~ '^[0-9]+ (second|minute|hour|day|week)s?$'::text))),
    CONSTRAINT settings_max_partitions CHECK (((name <> 'max_partitions'::text) OR (value ~ '^[1-9][0-9]{0,5}$'::text))),
    CONSTRAINT settings_max_request_bytes CHECK (((name <> 'max_request_bytes'::text) OR (value ~ '^[1-9][0-9]{0,17}$'::text)))
);

-- Name: timing_daily; Type: VIEW; Schema: cuzk; Owner: -

CREATE VIEW cuzk.timing_daily AS
 SELECT timing_history.circuit,
    timing_history.period,
    timing_history.phase,
    timing_history.n,
    timing_history.p50_ms,
    timing_history.p95_ms,
    timing_history.mean_ms
   FROM cuzk.timing_history('1 day'::interval, '-infinity'::timestamp with time zone) timing_history(circuit, period, phase, n, p50_ms, p95_ms, mean_ms);

-- Name: timing_hourly; Type: VIEW; Schema: cuzk; Owner: -

CREATE VIEW cuzk.timing_hourly AS
 SELECT timing_history.circuit,
    timing_history.period,
    timing_history.phase,
    timing_history.n,
    timing_history.p50_ms,
    timing_history.p95_ms,
    timing_history.mean_ms
   FROM cuzk.timing_history('01:00:00'::interval, '-infinity'::timestamp with time zone) timing_history(circuit, period, phase, n, p50_ms, p95_ms, mean_ms);

-- Name: workers; Type: TABLE; Schema: cuzk; Owner: -

CREATE TABLE cuzk.workers (
    worker text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    backend text NOT NULL,
    devices jsonb DEFAULT '[]'::jsonb NOT NULL,
    config jsonb DEFAULT '{}'::jsonb NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    stopped_at timestamp with time zone,
    river_client_id text
);

-- Name: COLUMN workers.river_client_id; Type: COMMENT; Schema: cuzk; Owner: -

COMMENT ON COLUMN cuzk.workers.river_client_id IS 'River client ID of the worker: the last element of river_job.attempted_by for the jobs it runs.';

-- Name: attempt_hours_mark attempt_hours_mark_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.attempt_hours_mark
    ADD CONSTRAINT attempt_hours_mark_pkey PRIMARY KEY (one);

-- Name: attempt_hours attempt_hours_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.attempt_hours
    ADD CONSTRAINT attempt_hours_pkey PRIMARY KEY (circuit, hour);

-- Name: bench_runs bench_runs_bench_id_arm_run_key; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.bench_runs
    ADD CONSTRAINT bench_runs_bench_id_arm_run_key UNIQUE (bench_id, arm, run);

-- Name: bench_runs bench_runs_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.bench_runs
    ADD CONSTRAINT bench_runs_pkey PRIMARY KEY (id);

-- Name: circuit_keys circuit_keys_circuit_vk_digest_key; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.circuit_keys
    ADD CONSTRAINT circuit_keys_circuit_vk_digest_key UNIQUE (circuit, vk_digest);

-- Name: circuit_keys circuit_keys_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.circuit_keys
    ADD CONSTRAINT circuit_keys_pkey PRIMARY KEY (circuit, version);

-- Name: circuits circuits_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.circuits
    ADD CONSTRAINT circuits_pkey PRIMARY KEY (name);

-- Name: partition_attempts partition_attempts_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.partition_attempts
    ADD CONSTRAINT partition_attempts_pkey PRIMARY KEY (request_id, attempt, partition);

-- Name: partition_proofs partition_proofs_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.partition_proofs
    ADD CONSTRAINT partition_proofs_pkey PRIMARY KEY (request_id, partition);

-- Name: proof_attempts proof_attempts_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proof_attempts
    ADD CONSTRAINT proof_attempts_pkey PRIMARY KEY (id);

-- Name: proof_attempts proof_attempts_request_id_attempt_key; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proof_attempts
    ADD CONSTRAINT proof_attempts_request_id_attempt_key UNIQUE (request_id, attempt);

-- Name: proof_requests proof_requests_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proof_requests
    ADD CONSTRAINT proof_requests_pkey PRIMARY KEY (id);

-- Name: proof_requests proof_requests_request_id_key; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proof_requests
    ADD CONSTRAINT proof_requests_request_id_key UNIQUE (request_id);

-- Name: proofs proofs_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proofs
    ADD CONSTRAINT proofs_pkey PRIMARY KEY (request_id);

-- Name: settings settings_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (name);

-- Name: submitters submitters_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.submitters
    ADD CONSTRAINT submitters_pkey PRIMARY KEY (name);

-- Name: workers workers_pkey; Type: CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (worker);

-- Name: bench_runs_build_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX bench_runs_build_idx ON cuzk.bench_runs USING btree (build, circuit);

-- Name: bench_runs_config_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX bench_runs_config_idx ON cuzk.bench_runs USING btree (config_hash, circuit);

-- Name: bench_runs_finished_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX bench_runs_finished_idx ON cuzk.bench_runs USING btree (finished_at);

-- Name: proof_attempts_build_finished_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_attempts_build_finished_idx ON cuzk.proof_attempts USING btree (build, finished_at) WHERE (outcome = 'succeeded'::text);

-- Name: proof_attempts_build_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_attempts_build_idx ON cuzk.proof_attempts USING btree (build, circuit);

-- Name: proof_attempts_config_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_attempts_config_idx ON cuzk.proof_attempts USING btree (config_hash, circuit);

-- Name: proof_attempts_failures_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_attempts_failures_idx ON cuzk.proof_attempts USING btree (COALESCE(finished_at, started_at)) WHERE (outcome = ANY (ARRAY['failed'::text, 'retryable'::text, 'interrupted'::text]));

-- Name: proof_attempts_finished_at_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_attempts_finished_at_idx ON cuzk.proof_attempts USING btree (finished_at);

-- Name: proof_attempts_finished_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_attempts_finished_idx ON cuzk.proof_attempts USING btree (circuit, finished_at);

-- Name: proof_attempts_one_success; Type: INDEX; Schema: cuzk; Owner: -

CREATE UNIQUE INDEX proof_attempts_one_success ON cuzk.proof_attempts USING btree (request_id) WHERE (outcome = 'succeeded'::text);

-- Name: proof_attempts_running_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_attempts_running_idx ON cuzk.proof_attempts USING btree (worker) WHERE (outcome = 'running'::text);

-- Name: proof_requests_admitted_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_requests_admitted_idx ON cuzk.proof_requests USING btree (submitted_by, priority) INCLUDE (job_id, partitions) WHERE ((state = 'queued'::text) AND (job_id IS NOT NULL));

-- Name: proof_requests_ended_inputs_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_requests_ended_inputs_idx ON cuzk.proof_requests USING btree (finished_at) WHERE ((state = ANY (ARRAY['failed'::text, 'cancelled'::text])) AND (inputs_scrubbed_at IS NULL));

-- Name: proof_requests_finished_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_requests_finished_idx ON cuzk.proof_requests USING btree (finished_at) WHERE (finished_at IS NOT NULL);

-- Name: proof_requests_state_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_requests_state_idx ON cuzk.proof_requests USING btree (state, created_at);

-- Name: proof_requests_waiting_idx; Type: INDEX; Schema: cuzk; Owner: -

CREATE INDEX proof_requests_waiting_idx ON cuzk.proof_requests USING btree (submitted_by, priority, id) WHERE ((state = 'queued'::text) AND (job_id IS NULL));

-- Name: circuits circuits_key_version; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER circuits_key_version BEFORE INSERT OR UPDATE OF vk, key_version ON cuzk.circuits FOR EACH ROW EXECUTE FUNCTION cuzk.circuits_key_version();

-- Name: partition_attempts partition_attempts_submitted_by; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER partition_attempts_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.partition_attempts FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();

-- Name: partition_proofs partition_proofs_submitted_by; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER partition_proofs_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.partition_proofs FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();

-- Name: proof_attempts proof_attempts_submitted_by; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_attempts_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.proof_attempts FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();

-- Name: proof_requests proof_requests_a_tenant; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_a_tenant BEFORE INSERT ON cuzk.proof_requests FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_tenant();

-- Name: proof_requests proof_requests_admit; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_admit AFTER INSERT ON cuzk.proof_requests FOR EACH STATEMENT EXECUTE FUNCTION cuzk.proof_requests_admit();

-- Name: proof_requests proof_requests_b_partitions; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_b_partitions BEFORE INSERT ON cuzk.proof_requests FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_b_partitions();

-- Name: proof_requests proof_requests_check; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_check BEFORE INSERT ON cuzk.proof_requests FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_check();

-- Name: proof_requests proof_requests_owner_moved; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_owner_moved AFTER UPDATE OF submitted_by ON cuzk.proof_requests FOR EACH ROW WHEN ((old.submitted_by IS DISTINCT FROM new.submitted_by)) EXECUTE FUNCTION cuzk.proof_requests_owner_moved();

-- Name: proof_requests proof_requests_priority; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_priority AFTER UPDATE OF priority ON cuzk.proof_requests FOR EACH ROW WHEN ((old.priority IS DISTINCT FROM new.priority)) EXECUTE FUNCTION cuzk.proof_requests_priority();

-- Name: proof_requests proof_requests_readmit; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_readmit AFTER UPDATE ON cuzk.proof_requests FOR EACH ROW WHEN ((((old.state = 'queued'::text) AND (old.job_id IS NOT NULL) AND ((new.state <> 'queued'::text) OR (new.job_id IS NULL))) OR ((new.state = 'queued'::text) AND (new.job_id IS NULL) AND ((old.state <> 'queued'::text) OR (old.job_id IS NOT NULL))))) EXECUTE FUNCTION cuzk.proof_requests_readmit();

-- Name: proof_requests proof_requests_shape; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proof_requests_shape BEFORE UPDATE OF inputs, partitions ON cuzk.proof_requests FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_shape();

-- Name: proofs proofs_key_version; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proofs_key_version BEFORE INSERT ON cuzk.proofs FOR EACH ROW EXECUTE FUNCTION cuzk.proofs_key_version();

-- Name: proofs proofs_submitted_by; Type: TRIGGER; Schema: cuzk; Owner: -

CREATE TRIGGER proofs_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.proofs FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();

-- Name: circuits circuits_key_version_fkey; Type: FK CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.circuits
    ADD CONSTRAINT circuits_key_version_fkey FOREIGN KEY (name, key_version) REFERENCES cuzk.circuit_keys(circuit, version) DEFERRABLE INITIALLY DEFERRED;

-- Name: partition_attempts partition_attempts_request_id_attempt_fkey; Type: FK CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.partition_attempts
    ADD CONSTRAINT partition_attempts_request_id_attempt_fkey FOREIGN KEY (request_id, attempt) REFERENCES cuzk.proof_attempts(request_id, attempt) ON DELETE CASCADE;

-- Name: partition_proofs partition_proofs_request_id_fkey; Type: FK CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.partition_proofs
    ADD CONSTRAINT partition_proofs_request_id_fkey FOREIGN KEY (request_id) REFERENCES cuzk.proof_requests(request_id) ON DELETE CASCADE;

-- Name: proof_attempts proof_attempts_request_id_fkey; Type: FK CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proof_attempts
    ADD CONSTRAINT proof_attempts_request_id_fkey FOREIGN KEY (request_id) REFERENCES cuzk.proof_requests(request_id) ON DELETE CASCADE;

-- Name: proof_requests proof_requests_circuit_fkey; Type: FK CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proof_requests
    ADD CONSTRAINT proof_requests_circuit_fkey FOREIGN KEY (circuit) REFERENCES cuzk.circuits(name);

-- Name: proofs proofs_key_version_fkey; Type: FK CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proofs
    ADD CONSTRAINT proofs_key_version_fkey FOREIGN KEY (circuit, key_version) REFERENCES cuzk.circuit_keys(circuit, version);

-- Name: proofs proofs_request_id_fkey; Type: FK CONSTRAINT; Schema: cuzk; Owner: -

ALTER TABLE ONLY cuzk.proofs
    ADD CONSTRAINT proofs_request_id_fkey FOREIGN KEY (request_id) REFERENCES cuzk.proof_requests(request_id) ON DELETE CASCADE;

-- Name: proof_attempts own_attempts; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY own_attempts ON cuzk.proof_attempts FOR SELECT TO cuzk_submitter USING ((( SELECT cuzk.acts_for_all() AS acts_for_all) OR (submitted_by = SESSION_USER)));

-- Name: partition_attempts own_partition_attempts; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY own_partition_attempts ON cuzk.partition_attempts FOR SELECT TO cuzk_submitter USING ((( SELECT cuzk.acts_for_all() AS acts_for_all) OR (submitted_by = SESSION_USER)));

-- Name: partition_proofs own_partition_proofs; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY own_partition_proofs ON cuzk.partition_proofs FOR SELECT TO cuzk_submitter USING ((( SELECT cuzk.acts_for_all() AS acts_for_all) OR (submitted_by = SESSION_USER)));

-- Name: proofs own_proofs; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY own_proofs ON cuzk.proofs FOR SELECT TO cuzk_submitter USING ((( SELECT cuzk.acts_for_all() AS acts_for_all) OR (submitted_by = SESSION_USER)));

-- Name: proof_requests own_requests; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY own_requests ON cuzk.proof_requests FOR SELECT TO cuzk_submitter USING ((( SELECT cuzk.acts_for_all() AS acts_for_all) OR (submitted_by = SESSION_USER)));

-- Name: partition_attempts; Type: ROW SECURITY; Schema: cuzk; Owner: -

ALTER TABLE cuzk.partition_attempts ENABLE ROW LEVEL SECURITY;

-- Name: partition_proofs; Type: ROW SECURITY; Schema: cuzk; Owner: -

ALTER TABLE cuzk.partition_proofs ENABLE ROW LEVEL SECURITY;

-- Name: proof_attempts; Type: ROW SECURITY; Schema: cuzk; Owner: -

ALTER TABLE cuzk.proof_attempts ENABLE ROW LEVEL SECURITY;

-- Name: proof_requests; Type: ROW SECURITY; Schema: cuzk; Owner: -

ALTER TABLE cuzk.proof_requests ENABLE ROW LEVEL SECURITY;

-- Name: proofs; Type: ROW SECURITY; Schema: cuzk; Owner: -

ALTER TABLE cuzk.proofs ENABLE ROW LEVEL SECURITY;

-- Name: proof_requests submit_own; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY submit_own ON cuzk.proof_requests FOR INSERT TO cuzk_submitter WITH CHECK ((submitted_by = SESSION_USER));

-- Name: partition_attempts worker_all; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY worker_all ON cuzk.partition_attempts TO cuzk_worker USING (true) WITH CHECK (true);

-- Name: partition_proofs worker_all; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY worker_all ON cuzk.partition_proofs TO cuzk_worker USING (true) WITH CHECK (true);

-- Name: proof_attempts worker_all; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY worker_all ON cuzk.proof_attempts TO cuzk_worker USING (true) WITH CHECK (true);

-- Name: proof_requests worker_all; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY worker_all ON cuzk.proof_requests TO cuzk_worker USING (true) WITH CHECK (true);

-- Name: proofs worker_all; Type: POLICY; Schema: cuzk; Owner: -

CREATE POLICY worker_all ON cuzk.proofs TO cuzk_worker USING (true) WITH CHECK (true);

-- Name: SCHEMA cuzk; Type: ACL; Schema: -; Owner: -

GRANT USAGE ON SCHEMA cuzk TO cuzk_submitter;
GRANT USAGE ON SCHEMA cuzk TO cuzk_worker;

-- Name: FUNCTION admit(who text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.admit(who text) FROM PUBLIC;

-- Name: FUNCTION admit_into(who text, p integer, room integer); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.admit_into(who text, p integer, room integer) FROM PUBLIC;

-- Name: FUNCTION admit_locked(who text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.admit_locked(who text) FROM PUBLIC;

-- Name: FUNCTION admit_room(who text, p integer); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.admit_room(who text, p integer) FROM PUBLIC;

-- Name: FUNCTION admit_waiting(); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.admit_waiting() FROM PUBLIC;
GRANT ALL ON FUNCTION cuzk.admit_waiting() TO cuzk_worker;
GRANT ALL ON FUNCTION cuzk.admit_waiting() TO cuzk_operator;

-- Name: FUNCTION cancel_proof(request_id text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.cancel_proof(request_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION cuzk.cancel_proof(request_id text) TO cuzk_submitter;
GRANT ALL ON FUNCTION cuzk.cancel_proof(request_id text) TO cuzk_worker;

-- Name: FUNCTION enqueue(req_id text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.enqueue(req_id text) FROM PUBLIC;

-- Name: FUNCTION job_queue(priority integer); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.job_queue(priority integer) FROM PUBLIC;
GRANT ALL ON FUNCTION cuzk.job_queue(priority integer) TO cuzk_submitter;
GRANT ALL ON FUNCTION cuzk.job_queue(priority integer) TO cuzk_worker;

-- Name: TABLE submitters; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT,INSERT ON TABLE cuzk.submitters TO cuzk_operator;
GRANT SELECT ON TABLE cuzk.submitters TO cuzk_worker;

-- Name: COLUMN submitters.max_queued; Type: ACL; Schema: cuzk; Owner: -

GRANT UPDATE(max_queued) ON TABLE cuzk.submitters TO cuzk_operator;

-- Name: FUNCTION lock_submitter(who text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.lock_submitter(who text) FROM PUBLIC;

-- Name: TABLE proof_requests; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT,UPDATE ON TABLE cuzk.proof_requests TO cuzk_worker;

-- Name: COLUMN proof_requests.id; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(id) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.request_id; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(request_id),INSERT(request_id) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.circuit; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(circuit),INSERT(circuit) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.inputs; Type: ACL; Schema: cuzk; Owner: -

GRANT INSERT(inputs) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.witness; Type: ACL; Schema: cuzk; Owner: -

GRANT INSERT(witness) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.priority; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(priority),INSERT(priority) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.max_attempts; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(max_attempts),INSERT(max_attempts) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.state; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(state) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.attempts; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(attempts) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.last_error; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(last_error) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.job_id; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(job_id) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.submitted_by; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(submitted_by) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.created_at; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(created_at) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.updated_at; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(updated_at) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.finished_at; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(finished_at) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.inputs_scrubbed_at; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(inputs_scrubbed_at) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: COLUMN proof_requests.partitions; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(partitions) ON TABLE cuzk.proof_requests TO cuzk_submitter;

-- Name: FUNCTION own_request(req_id text, verb text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.own_request(req_id text, verb text) FROM PUBLIC;

-- Name: FUNCTION proof_requests_owner_moved(); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.proof_requests_owner_moved() FROM PUBLIC;

-- Name: FUNCTION proof_requests_priority(); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.proof_requests_priority() FROM PUBLIC;

-- Name: FUNCTION repair_jobs(); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.repair_jobs() FROM PUBLIC;
GRANT ALL ON FUNCTION cuzk.repair_jobs() TO cuzk_worker;
GRANT ALL ON FUNCTION cuzk.repair_jobs() TO cuzk_operator;

-- Name: FUNCTION retry_proof(request_id text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.retry_proof(request_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION cuzk.retry_proof(request_id text) TO cuzk_submitter;
GRANT ALL ON FUNCTION cuzk.retry_proof(request_id text) TO cuzk_worker;

-- Name: FUNCTION row_submitted_by(); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.row_submitted_by() FROM PUBLIC;

-- Name: FUNCTION scrub_ended_inputs(lim integer); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.scrub_ended_inputs(lim integer) FROM PUBLIC;
GRANT ALL ON FUNCTION cuzk.scrub_ended_inputs(lim integer) TO cuzk_worker;
GRANT ALL ON FUNCTION cuzk.scrub_ended_inputs(lim integer) TO cuzk_operator;

-- Name: FUNCTION submit_proof(request_id text, circuit text, inputs jsonb, witness bytea, priority integer, max_attempts integer); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.submit_proof(request_id text, circuit text, inputs jsonb, witness bytea, priority integer, max_attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION cuzk.submit_proof(request_id text, circuit text, inputs jsonb, witness bytea, priority integer, max_attempts integer) TO cuzk_submitter;

-- Name: FUNCTION try_lock_submitter(who text); Type: ACL; Schema: cuzk; Owner: -

REVOKE ALL ON FUNCTION cuzk.try_lock_submitter(who text) FROM PUBLIC;

-- Name: TABLE attempt_hours; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.attempt_hours TO cuzk_submitter;
GRANT SELECT,INSERT,UPDATE ON TABLE cuzk.attempt_hours TO cuzk_worker;

-- Name: TABLE attempt_hours_mark; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.attempt_hours_mark TO cuzk_submitter;
GRANT SELECT,INSERT,UPDATE ON TABLE cuzk.attempt_hours_mark TO cuzk_worker;

-- Name: TABLE proof_attempts; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.proof_attempts TO cuzk_submitter;
GRANT SELECT,INSERT,UPDATE ON TABLE cuzk.proof_attempts TO cuzk_worker;

-- Name: TABLE attempt_phases; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.attempt_phases TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.attempt_phases TO cuzk_worker;

-- Name: SEQUENCE bench_id_seq; Type: ACL; Schema: cuzk; Owner: -

GRANT USAGE ON SEQUENCE cuzk.bench_id_seq TO cuzk_worker;

-- Name: TABLE bench_runs; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT,INSERT ON TABLE cuzk.bench_runs TO cuzk_worker;
GRANT SELECT ON TABLE cuzk.bench_runs TO cuzk_operator;

-- Name: COLUMN bench_runs.id; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(id) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.bench_id; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(bench_id) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.arm; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(arm) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.run; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(run) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.label; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(label) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.circuit; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(circuit) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.build; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(build) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.config_hash; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(config_hash) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.backend; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(backend) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.started_at; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(started_at) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.finished_at; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(finished_at) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.synth_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(synth_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.prove_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(prove_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.ntt_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(ntt_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.msm_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(msm_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.msm_g1_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(msm_g1_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.msm_g2_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(msm_g2_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.h2d_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(h2d_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.verify_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(verify_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: COLUMN bench_runs.total_ms; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT(total_ms) ON TABLE cuzk.bench_runs TO cuzk_submitter;

-- Name: TABLE circuit_keys; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.circuit_keys TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.circuit_keys TO cuzk_worker;

-- Name: TABLE circuits; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.circuits TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.circuits TO cuzk_worker;

-- Name: TABLE partition_attempts; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.partition_attempts TO cuzk_submitter;
GRANT SELECT,INSERT,UPDATE ON TABLE cuzk.partition_attempts TO cuzk_worker;

-- Name: TABLE partition_proofs; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.partition_proofs TO cuzk_submitter;
GRANT SELECT,INSERT,UPDATE ON TABLE cuzk.partition_proofs TO cuzk_worker;

-- Name: TABLE phase_samples; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.phase_samples TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.phase_samples TO cuzk_worker;

-- Name: TABLE proof_status; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.proof_status TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.proof_status TO cuzk_worker;

-- Name: TABLE proofs; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.proofs TO cuzk_submitter;
GRANT SELECT,INSERT,UPDATE ON TABLE cuzk.proofs TO cuzk_worker;

-- Name: TABLE settings; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.settings TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.settings TO cuzk_worker;

-- Name: TABLE timing_daily; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.timing_daily TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.timing_daily TO cuzk_worker;

-- Name: TABLE timing_hourly; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT ON TABLE cuzk.timing_hourly TO cuzk_submitter;
GRANT SELECT ON TABLE cuzk.timing_hourly TO cuzk_worker;

-- Name: TABLE workers; Type: ACL; Schema: cuzk; Owner: -

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE cuzk.workers TO cuzk_worker;
GRANT SELECT ON TABLE cuzk.workers TO cuzk_operator;
