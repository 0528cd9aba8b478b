-- Messages people can act on, where PostgreSQL would print a constraint's name and the
-- whole row: the insert check tests the request's own values before the table's CHECKs
-- do (those stay, as the backstop), a cancelled request's last_error says that it names
-- a role, and the timing history is rounded to microseconds.

-- The insert check of 010, with the CHECKs of proof_requests a submitter can run into
-- tested first, each naming the request and the column.
CREATE OR REPLACE FUNCTION cuzk.proof_requests_check() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    lim     bigint;
    payload bytea;
    what    text := 'inputs';
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
    IF NOT EXISTS (SELECT 1 FROM cuzk.circuits WHERE name = NEW.circuit) THEN
        RAISE EXCEPTION 'unknown circuit "%"', left(NEW.circuit, 256)
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'known circuits: ' || coalesce((SELECT string_agg(name, ', ' ORDER BY name) FROM cuzk.circuits), 'none (run cuzk setup)');
    END IF;
    IF (NEW.inputs IS NULL) = (NEW.witness IS NULL) THEN
        RAISE EXCEPTION 'request "%": give exactly one of inputs (jsonb) or witness (bytea)', left(NEW.request_id, 256)
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.inputs IS NOT NULL AND jsonb_typeof(NEW.inputs) <> 'object' THEN
        RAISE EXCEPTION 'request "%": inputs must be a JSON object, not a JSON %', left(NEW.request_id, 256), jsonb_typeof(NEW.inputs)
            USING ERRCODE = 'check_violation', COLUMN = 'inputs',
                  HINT = 'keys are the circuit''s variable names, values decimal or 0x-hex strings: {"X": "3", "Path.0": "0x1f"}';
    END IF;
    lim := coalesce((SELECT s.value::bigint FROM cuzk.settings s WHERE s.name = 'max_request_bytes'), 67108864);
    IF NEW.witness IS NOT NULL THEN
        payload := NEW.witness;
        what := 'witness';
    ELSE
        payload := convert_to(NEW.inputs::text, 'UTF8');
    END IF;
    IF octet_length(payload) > lim THEN
        RAISE EXCEPTION 'request "%": % of % bytes is over the limit of % bytes', left(NEW.request_id, 256), what, octet_length(payload), lim
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'the limit is cuzk.settings max_request_bytes';
    END IF;
    NEW.payload_digest := sha256(payload);
    NEW.state := 'queued';
    NEW.attempts := 0;
    RETURN NEW;
END $$;

-- cancel_proof as in 001 (with 010's search_path); last_error reads
-- 'cancelled by role <session user>'.
CREATE OR REPLACE FUNCTION cuzk.cancel_proof(request_id text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    r cuzk.proof_requests;
BEGIN
    SELECT * INTO r FROM cuzk.proof_requests p WHERE p.request_id = cancel_proof.request_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown request "%"', cancel_proof.request_id USING ERRCODE = 'no_data_found';
    END IF;
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
        PERFORM pg_notify('public.river_control',
                          json_build_object('action', 'cancel', 'job_id', r.job_id, 'queue', 'cuzk')::text);
    END IF;
    RETURN true;
END $$;
COMMENT ON FUNCTION cuzk.cancel_proof(text) IS
    'Cancels a queued or running request (last_error: cancelled by role <session user>) and returns true; returns false, changing nothing, when it had already succeeded, failed or been cancelled.';

-- timing_history as in 001, its p50, p95 and mean rounded to 3 decimals (microseconds):
-- 108.659, not 108.65899999999999. The columns stay double precision.
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
      FROM cuzk.attempt_phases a
     WHERE a.outcome = 'succeeded' AND a.finished_at >= since
       AND (for_circuit IS NULL OR a.circuit = for_circuit)
     GROUP BY a.circuit, 2, a.phase, a.ord
     ORDER BY a.circuit, 2, a.ord
$$;
COMMENT ON FUNCTION cuzk.timing_history(interval, timestamptz, text) IS
    'Per circuit, period (date_bin from 2000-01-01) and phase: count, p50, p95 and mean in ms of succeeded attempts finished since since, rounded to 3 decimals.';
