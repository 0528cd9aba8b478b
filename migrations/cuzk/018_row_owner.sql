-- A submitter's own rows, by a column of each row.
--
-- 1. proofs, proof_attempts, partition_proofs and partition_attempts carry their
--    request's submitted_by, so that their row policies (and attempt_phases) compare
--    a column with session_user instead of probing proof_requests in an EXISTS per
--    row. The EXISTS made PostgreSQL cost a submitter's full listing above the JIT
--    thresholds (the subplan's cost counts once per row), and compiling the plan
--    took most of the listing's time. A trigger sets the column from the request on
--    every insert and every change of request_id or submitted_by, whatever the writer
--    gives, so no writer can show a row to another login; a change of a request's
--    submitted_by (the owner naming the login of an old request) is carried to its
--    rows. The column is NULL only while the request is missing, which the foreign
--    keys refuse anyway.
-- 2. cuzk.bench_runs names the worker (host/pid), the device and the configuration
--    of each benchmark run: submitters keep the columns that comparisons need (ids,
--    arm, run, label, circuit, build, config_hash, backend, times and phases) and
--    lose worker, device and config; cuzk_operator reads the whole table.
--    resolve_selector describes a config hash with a bench run's config only to a
--    caller that may read that column.

ALTER TABLE cuzk.proofs ADD COLUMN submitted_by text;
ALTER TABLE cuzk.proof_attempts ADD COLUMN submitted_by text;
ALTER TABLE cuzk.partition_proofs ADD COLUMN submitted_by text;
ALTER TABLE cuzk.partition_attempts ADD COLUMN submitted_by text;

UPDATE cuzk.proofs t SET submitted_by = r.submitted_by FROM cuzk.proof_requests r WHERE r.request_id = t.request_id;
UPDATE cuzk.proof_attempts t SET submitted_by = r.submitted_by FROM cuzk.proof_requests r WHERE r.request_id = t.request_id;
UPDATE cuzk.partition_proofs t SET submitted_by = r.submitted_by FROM cuzk.proof_requests r WHERE r.request_id = t.request_id;
UPDATE cuzk.partition_attempts t SET submitted_by = r.submitted_by FROM cuzk.proof_requests r WHERE r.request_id = t.request_id;

COMMENT ON COLUMN cuzk.proofs.submitted_by IS
    'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';
COMMENT ON COLUMN cuzk.proof_attempts.submitted_by IS
    'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';
COMMENT ON COLUMN cuzk.partition_proofs.submitted_by IS
    'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';
COMMENT ON COLUMN cuzk.partition_attempts.submitted_by IS
    'The request''s submitted_by, set by a trigger: the login whose row policy admits this row.';

-- Runs as the owner: it reads the request whatever the writer's own policies admit.
CREATE FUNCTION cuzk.row_submitted_by() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    NEW.submitted_by := (SELECT r.submitted_by FROM cuzk.proof_requests r WHERE r.request_id = NEW.request_id);
    RETURN NEW;
END $$;
REVOKE ALL ON FUNCTION cuzk.row_submitted_by() FROM PUBLIC;

CREATE TRIGGER proofs_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.proofs
    FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();
CREATE TRIGGER proof_attempts_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.proof_attempts
    FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();
CREATE TRIGGER partition_proofs_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.partition_proofs
    FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();
CREATE TRIGGER partition_attempts_submitted_by BEFORE INSERT OR UPDATE OF request_id, submitted_by ON cuzk.partition_attempts
    FOR EACH ROW EXECUTE FUNCTION cuzk.row_submitted_by();

-- A request's new submitted_by reaches its rows (each row's trigger reads it).
CREATE FUNCTION cuzk.proof_requests_owner_moved() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    UPDATE cuzk.proofs SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    UPDATE cuzk.proof_attempts SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    UPDATE cuzk.partition_proofs SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    UPDATE cuzk.partition_attempts SET submitted_by = NEW.submitted_by WHERE request_id = NEW.request_id;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION cuzk.proof_requests_owner_moved() FROM PUBLIC;
CREATE TRIGGER proof_requests_owner_moved AFTER UPDATE OF submitted_by ON cuzk.proof_requests
    FOR EACH ROW WHEN (OLD.submitted_by IS DISTINCT FROM NEW.submitted_by)
    EXECUTE FUNCTION cuzk.proof_requests_owner_moved();

-- (SELECT cuzk.acts_for_all()) is computed once per query, not per row.
DROP POLICY own_proofs ON cuzk.proofs;
CREATE POLICY own_proofs ON cuzk.proofs FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all()) OR submitted_by = session_user);
DROP POLICY own_attempts ON cuzk.proof_attempts;
CREATE POLICY own_attempts ON cuzk.proof_attempts FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all()) OR submitted_by = session_user);
DROP POLICY own_partition_proofs ON cuzk.partition_proofs;
CREATE POLICY own_partition_proofs ON cuzk.partition_proofs FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all()) OR submitted_by = session_user);
DROP POLICY own_partition_attempts ON cuzk.partition_attempts;
CREATE POLICY own_partition_attempts ON cuzk.partition_attempts FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all()) OR submitted_by = session_user);

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
   AND ((SELECT cuzk.acts_for_all()) OR a.submitted_by = session_user);

-- Benchmark runs: no worker, device or config for submitters.
REVOKE SELECT ON cuzk.bench_runs FROM cuzk_submitter;
GRANT SELECT (id, bench_id, arm, run, label, circuit, build, config_hash, backend, started_at, finished_at,
              synth_ms, prove_ms, ntt_ms, msm_ms, msm_g1_ms, msm_g2_ms, h2d_ms, verify_ms, total_ms)
    ON cuzk.bench_runs TO cuzk_submitter;
GRANT SELECT ON cuzk.bench_runs TO cuzk_operator;
COMMENT ON TABLE cuzk.bench_runs IS
    'One row per timed proof of cuzk bench --record. Submitters read every column but worker, device and config.';

-- As in 004, but for the description of a config hash (see 2. above).
CREATE OR REPLACE FUNCTION cuzk.resolve_selector(kind text, value text,
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
END $$;

