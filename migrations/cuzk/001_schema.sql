-- cuzk schema: circuits, proof requests, proofs, attempts, and the SQL contract that
-- orchestrators use (submit_proof, retry_proof, cancel_proof, proof_status).
-- River's own tables live in schema public (migrated by rivermigrate before this file).

CREATE TABLE cuzk.circuits (
    name               text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,127}$'),
    constraints        bigint NOT NULL CHECK (constraints > 0),
    public_inputs      int    NOT NULL CHECK (public_inputs >= 0),  -- excluding the constant one wire
    wires              bigint NOT NULL CHECK (wires > 0),
    curve              text   NOT NULL DEFAULT 'bls12-381' CHECK (curve = 'bls12-381'),
    vk                 bytea  NOT NULL,                            -- gnark VerifyingKey.WriteTo
    pk_digest          text   NOT NULL,                            -- sha256 of the proving key file
    source             text   NOT NULL DEFAULT 'builtin' CHECK (source IN ('builtin', 'imported')),
    mem_estimate_bytes bigint,                                     -- synthesis memory per request
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cuzk.proof_requests (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id         text NOT NULL UNIQUE CHECK (request_id <> '' AND length(request_id) <= 256),
    circuit            text NOT NULL REFERENCES cuzk.circuits (name),
    inputs             jsonb,
    witness            bytea,
    priority           int  NOT NULL DEFAULT 2 CHECK (priority BETWEEN 1 AND 4),   -- 1 is most urgent
    max_attempts       int  NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
    state              text NOT NULL DEFAULT 'queued'
                       CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempts           int  NOT NULL DEFAULT 0,
    last_error         text,
    job_id             bigint,                                     -- current River job
    submitted_by       text NOT NULL DEFAULT current_user,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz,
    inputs_scrubbed_at timestamptz,
    CONSTRAINT proof_requests_one_input CHECK (
        inputs_scrubbed_at IS NOT NULL OR ((inputs IS NULL) <> (witness IS NULL))),
    CONSTRAINT proof_requests_inputs_object CHECK (inputs IS NULL OR jsonb_typeof(inputs) = 'object')
);
CREATE INDEX proof_requests_state_idx ON cuzk.proof_requests (state, created_at);
CREATE INDEX proof_requests_finished_idx ON cuzk.proof_requests (finished_at) WHERE finished_at IS NOT NULL;

-- Exactly one row per request, ever: the primary key makes a late duplicate completion
-- (a rescued job finishing twice) a no-op.
CREATE TABLE cuzk.proofs (
    request_id     text PRIMARY KEY REFERENCES cuzk.proof_requests (request_id) ON DELETE CASCADE,
    circuit        text  NOT NULL,
    proof          bytea NOT NULL,       -- gnark groth16 Proof.WriteTo (BLS12-381)
    public_witness bytea NOT NULL,       -- gnark witness.MarshalBinary of the public part
    attempt        int   NOT NULL,
    worker         text  NOT NULL,
    backend        text  NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- One row per attempt, success or not. Phase timings in milliseconds; NULL only for a
-- phase the attempt never reached. outcome is 'running' while the attempt is in flight;
-- a worker that dies leaves it so, and the next attempt marks it 'interrupted'.
CREATE TABLE cuzk.proof_attempts (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id         text NOT NULL REFERENCES cuzk.proof_requests (request_id) ON DELETE CASCADE,
    attempt            int  NOT NULL,
    circuit            text NOT NULL,
    job_id             bigint,
    outcome            text NOT NULL DEFAULT 'running'
                       CHECK (outcome IN ('running', 'succeeded', 'failed', 'retryable', 'interrupted', 'cancelled')),
    error              text,
    worker             text NOT NULL,
    backend            text,
    device             text,
    batch_id           uuid,
    batch_size         int,
    mem_reserved_bytes bigint,
    started_at         timestamptz NOT NULL DEFAULT now(),
    synth_started_at   timestamptz,
    prove_started_at   timestamptz,
    finished_at        timestamptz,
    queue_ms           double precision,
    batch_wait_ms      double precision,
    mem_wait_ms        double precision,
    srs_ms             double precision,
    synth_ms           double precision,
    prove_wait_ms      double precision,
    prove_ms           double precision,
    ntt_ms             double precision,
    msm_ms             double precision,
    verify_ms          double precision,
    persist_ms         double precision,
    total_ms           double precision,
    telemetry          jsonb,
    UNIQUE (request_id, attempt)
);
CREATE UNIQUE INDEX proof_attempts_one_success ON cuzk.proof_attempts (request_id) WHERE outcome = 'succeeded';
CREATE INDEX proof_attempts_finished_idx ON cuzk.proof_attempts (circuit, finished_at);

-- Live workers, refreshed by each worker's heartbeat.
CREATE TABLE cuzk.workers (
    worker       text PRIMARY KEY,            -- host/pid
    host         text NOT NULL,
    pid          int  NOT NULL,
    backend      text NOT NULL,
    devices      jsonb NOT NULL DEFAULT '[]',
    config       jsonb NOT NULL DEFAULT '{}',
    started_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    stopped_at   timestamptz
);

-- enqueue inserts the River job for a request and wakes the workers. Plain SQL so that
-- orchestrators never need Go: the job row is what River's client would insert.
CREATE FUNCTION cuzk.enqueue(req_id text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    r   cuzk.proof_requests;
    jid bigint;
BEGIN
    SELECT * INTO STRICT r FROM cuzk.proof_requests WHERE request_id = req_id;
    INSERT INTO public.river_job (args, kind, max_attempts, priority, queue, state, scheduled_at, metadata)
    VALUES (jsonb_build_object('request_id', r.request_id, 'circuit', r.circuit),
            'cuzk_prove', r.max_attempts, r.priority, 'cuzk', 'available', now(), '{}')
    RETURNING id INTO jid;
    UPDATE cuzk.proof_requests SET job_id = jid, updated_at = now() WHERE id = r.id;
    PERFORM pg_notify('public.river_insert', json_build_object('queue', 'cuzk')::text);
    RETURN jid;
END $$;

CREATE FUNCTION cuzk.proof_requests_check() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM cuzk.circuits WHERE name = NEW.circuit) THEN
        RAISE EXCEPTION 'unknown circuit "%"', NEW.circuit
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'known circuits: ' || coalesce((SELECT string_agg(name, ', ' ORDER BY name) FROM cuzk.circuits), 'none (run cuzk setup)');
    END IF;
    IF (NEW.inputs IS NULL) = (NEW.witness IS NULL) THEN
        RAISE EXCEPTION 'request "%": give exactly one of inputs (jsonb) or witness (bytea)', NEW.request_id
            USING ERRCODE = 'check_violation';
    END IF;
    NEW.state := 'queued';
    NEW.attempts := 0;
    RETURN NEW;
END $$;

CREATE TRIGGER proof_requests_check BEFORE INSERT ON cuzk.proof_requests
    FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_check();

CREATE FUNCTION cuzk.proof_requests_enqueue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    PERFORM cuzk.enqueue(NEW.request_id);
    RETURN NULL;
END $$;

CREATE TRIGGER proof_requests_enqueue AFTER INSERT ON cuzk.proof_requests
    FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_enqueue();

-- submit_proof is idempotent on request_id: a second call returns the existing id and
-- enqueues nothing.
CREATE FUNCTION cuzk.submit_proof(request_id text, circuit text, inputs jsonb DEFAULT NULL,
                                  witness bytea DEFAULT NULL, priority int DEFAULT 2,
                                  max_attempts int DEFAULT 5) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    rid bigint;
BEGIN
    INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, witness, priority, max_attempts, submitted_by)
    VALUES (submit_proof.request_id, submit_proof.circuit, submit_proof.inputs, submit_proof.witness,
            submit_proof.priority, submit_proof.max_attempts, session_user)
    ON CONFLICT ON CONSTRAINT proof_requests_request_id_key DO NOTHING
    RETURNING id INTO rid;
    IF rid IS NULL THEN
        SELECT r.id INTO STRICT rid FROM cuzk.proof_requests r WHERE r.request_id = submit_proof.request_id;
    END IF;
    RETURN rid;
END $$;

-- retry_proof queues a failed or cancelled request again with a fresh River job.
CREATE FUNCTION cuzk.retry_proof(request_id text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    st text;
BEGIN
    SELECT r.state INTO st FROM cuzk.proof_requests r WHERE r.request_id = retry_proof.request_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown request "%"', retry_proof.request_id USING ERRCODE = 'no_data_found';
    END IF;
    IF st NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION 'request "%" is %, only failed or cancelled requests can be retried', retry_proof.request_id, st
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE cuzk.proof_requests r SET state = 'queued', finished_at = NULL, updated_at = now()
     WHERE r.request_id = retry_proof.request_id;
    RETURN cuzk.enqueue(retry_proof.request_id);
END $$;

-- cancel_proof cancels queued or running work. A queued job is cancelled at once; a
-- running one is told through River's control channel, and its worker records the
-- attempt as cancelled. Returns false when the request had already finished.
CREATE FUNCTION cuzk.cancel_proof(request_id text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
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
           last_error = 'cancelled by ' || session_user
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

CREATE VIEW cuzk.proof_status AS
SELECT r.request_id, r.circuit, r.state, r.attempts, r.last_error, r.priority,
       r.created_at, r.updated_at, r.finished_at, r.submitted_by
  FROM cuzk.proof_requests r;

-- Every timed phase of every attempt as rows: the base of the timing history.
CREATE VIEW cuzk.attempt_phases AS
SELECT a.request_id, a.circuit, a.attempt, a.outcome, a.backend, a.device, a.worker,
       a.batch_size, a.finished_at, p.ord, p.phase, p.ms
  FROM cuzk.proof_attempts a
 CROSS JOIN LATERAL (VALUES
        (1, 'queue', a.queue_ms), (2, 'batch_wait', a.batch_wait_ms), (3, 'mem_wait', a.mem_wait_ms),
        (4, 'srs', a.srs_ms), (5, 'synth', a.synth_ms), (6, 'prove_wait', a.prove_wait_ms),
        (7, 'prove', a.prove_ms), (8, 'ntt', a.ntt_ms), (9, 'msm', a.msm_ms),
        (10, 'verify', a.verify_ms), (11, 'persist', a.persist_ms), (12, 'total', a.total_ms)
       ) AS p(ord, phase, ms)
 WHERE p.ms IS NOT NULL;

-- timing_history: per circuit, period and phase, the count, p50 and p95 of succeeded
-- attempts. SELECT * FROM cuzk.timing_history('1 hour', now() - interval '1 day');
CREATE FUNCTION cuzk.timing_history(bucket interval DEFAULT '1 hour',
                                    since timestamptz DEFAULT now() - interval '7 days',
                                    for_circuit text DEFAULT NULL)
RETURNS TABLE (circuit text, period timestamptz, phase text, n bigint,
               p50_ms double precision, p95_ms double precision, mean_ms double precision)
LANGUAGE sql STABLE AS $$
    SELECT a.circuit, date_bin(bucket, a.finished_at, timestamptz '2000-01-01') AS period, a.phase,
           count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY a.ms),
           percentile_cont(0.95) WITHIN GROUP (ORDER BY a.ms), avg(a.ms)
      FROM cuzk.attempt_phases a
     WHERE a.outcome = 'succeeded' AND a.finished_at >= since
       AND (for_circuit IS NULL OR a.circuit = for_circuit)
     GROUP BY a.circuit, 2, a.phase, a.ord
     ORDER BY a.circuit, 2, a.ord
$$;

CREATE VIEW cuzk.timing_hourly AS SELECT * FROM cuzk.timing_history('1 hour', '-infinity');
CREATE VIEW cuzk.timing_daily AS SELECT * FROM cuzk.timing_history('1 day', '-infinity');
