-- Hardening against logins outside cuzk's roles and against careless clients.
--
-- 1. Every SECURITY DEFINER function runs with a fixed search_path holding only schemas
--    that no login but the owner can create in: pg_catalog, cuzk, and pg_temp last (so
--    that a temporary object never shadows one of them). Schema public is not on it: a
--    database where PUBLIC may create in public (the default before PostgreSQL 15) must
--    not let anyone put a function there that an owner-run function would call instead
--    of the built-in one. River's objects are named public.river_* explicitly.
-- 2. cuzk.settings holds max_request_bytes, the largest inputs (as JSON text) or
--    witness one request may carry; the insert trigger refuses a larger one.
-- 3. proof_requests.payload_digest (sha256 of the inputs' JSON text or the witness) lets
--    submit_proof tell an identical resubmission, which stays idempotent, from one with
--    different inputs, which is an error; it outlives the scrubbing of the inputs.

ALTER FUNCTION cuzk.enqueue(text) SET search_path = pg_catalog, cuzk, pg_temp;
ALTER FUNCTION cuzk.proof_requests_enqueue() SET search_path = pg_catalog, cuzk, pg_temp;
ALTER FUNCTION cuzk.retry_proof(text) SET search_path = pg_catalog, cuzk, pg_temp;
ALTER FUNCTION cuzk.cancel_proof(text) SET search_path = pg_catalog, cuzk, pg_temp;

CREATE TABLE cuzk.settings (
    name        text PRIMARY KEY,
    value       text NOT NULL,
    description text NOT NULL DEFAULT '',
    CONSTRAINT settings_max_request_bytes CHECK (name <> 'max_request_bytes' OR value ~ '^[1-9][0-9]{0,17}$')
);
INSERT INTO cuzk.settings (name, value, description) VALUES
    ('max_request_bytes', '67108864',
     'Largest inputs (as JSON text) or witness (bytea) one request may carry, in bytes; '
     'an insert over it is refused. Default 64 MiB.');
GRANT SELECT ON cuzk.settings TO cuzk_submitter, cuzk_worker;

-- Not granted to cuzk_submitter: a digest of private inputs would let a reader confirm
-- a guess of another requester's inputs.
ALTER TABLE cuzk.proof_requests ADD COLUMN payload_digest bytea;
COMMENT ON COLUMN cuzk.proof_requests.payload_digest IS
    'sha256 of the inputs as JSON text (jsonb''s canonical form) or of the witness, set at insert; '
    'submit_proof compares a resubmission with it. NULL for requests scrubbed before it existed.';
UPDATE cuzk.proof_requests
   SET payload_digest = sha256(coalesce(witness, convert_to(inputs::text, 'UTF8')))
 WHERE inputs IS NOT NULL OR witness IS NOT NULL;

-- The insert check runs as whoever inserts (a plain INSERT by a submitter, or the owner
-- inside submit_proof): a fixed search_path too.
CREATE OR REPLACE FUNCTION cuzk.proof_requests_check() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    lim     bigint;
    payload bytea;
    what    text := 'inputs';
BEGIN
    IF NOT EXISTS (SELECT 1 FROM cuzk.circuits WHERE name = NEW.circuit) THEN
        RAISE EXCEPTION 'unknown circuit "%"', left(NEW.circuit, 256)
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'known circuits: ' || coalesce((SELECT string_agg(name, ', ' ORDER BY name) FROM cuzk.circuits), 'none (run cuzk setup)');
    END IF;
    IF (NEW.inputs IS NULL) = (NEW.witness IS NULL) THEN
        RAISE EXCEPTION 'request "%": give exactly one of inputs (jsonb) or witness (bytea)', left(NEW.request_id, 256)
            USING ERRCODE = 'check_violation';
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

-- submit_proof stays idempotent on request_id for the same circuit and inputs (a second
-- call returns the existing id and enqueues nothing); the same request_id with another
-- circuit or other inputs is an error naming the request.
CREATE OR REPLACE FUNCTION cuzk.submit_proof(request_id text, circuit text, inputs jsonb DEFAULT NULL,
                                             witness bytea DEFAULT NULL, priority int DEFAULT 2,
                                             max_attempts int DEFAULT 5) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    rid    bigint;
    had    text;
    digest bytea;
BEGIN
    INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, witness, priority, max_attempts, submitted_by)
    VALUES (submit_proof.request_id, submit_proof.circuit, submit_proof.inputs, submit_proof.witness,
            submit_proof.priority, submit_proof.max_attempts, session_user)
    ON CONFLICT ON CONSTRAINT proof_requests_request_id_key DO NOTHING
    RETURNING id INTO rid;
    IF rid IS NOT NULL THEN
        RETURN rid;
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
