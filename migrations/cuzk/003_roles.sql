-- Two group roles, so that nothing but cuzk's migrations needs the schema owner:
--   cuzk_submitter  orchestrators: submit, retry and cancel through the functions (or a
--                   plain INSERT), read status, proofs, attempts and circuits; cannot
--                   change proofs, attempts or circuits, nor read any request's inputs.
--   cuzk_worker     cuzk worker processes: claim River jobs, record attempts and proofs.
-- Grant them to login roles:  GRANT cuzk_submitter TO curio;  GRANT cuzk_worker TO prover;
-- Roles are cluster-wide; another database of the same cluster may have made them already.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['cuzk_submitter', 'cuzk_worker'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created concurrently by a migration of another database
            END;
        END IF;
    END LOOP;
END $$;

-- The SECURITY DEFINER functions run as the owner: only the roles may call them.
REVOKE EXECUTE ON FUNCTION cuzk.submit_proof(text, text, jsonb, bytea, int, int),
                           cuzk.retry_proof(text), cuzk.cancel_proof(text), cuzk.enqueue(text)
    FROM PUBLIC;

GRANT USAGE ON SCHEMA cuzk TO cuzk_submitter, cuzk_worker;

-- Submitter.
GRANT EXECUTE ON FUNCTION cuzk.submit_proof(text, text, jsonb, bytea, int, int),
                          cuzk.retry_proof(text), cuzk.cancel_proof(text)
    TO cuzk_submitter;
GRANT INSERT (request_id, circuit, inputs, witness, priority, max_attempts) ON cuzk.proof_requests TO cuzk_submitter;
GRANT SELECT (id, request_id, circuit, priority, max_attempts, state, attempts, last_error, job_id,
              submitted_by, created_at, updated_at, finished_at, inputs_scrubbed_at)
    ON cuzk.proof_requests TO cuzk_submitter;
GRANT SELECT ON cuzk.proofs, cuzk.proof_attempts, cuzk.circuits, cuzk.workers,
                cuzk.proof_status, cuzk.attempt_phases, cuzk.timing_hourly, cuzk.timing_daily
    TO cuzk_submitter;

-- Worker.
GRANT EXECUTE ON FUNCTION cuzk.retry_proof(text), cuzk.cancel_proof(text) TO cuzk_worker;
GRANT SELECT, UPDATE ON cuzk.proof_requests TO cuzk_worker;
GRANT SELECT ON cuzk.circuits, cuzk.proof_status, cuzk.attempt_phases, cuzk.timing_hourly, cuzk.timing_daily
    TO cuzk_worker;
GRANT SELECT, INSERT, UPDATE ON cuzk.proofs, cuzk.proof_attempts TO cuzk_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON cuzk.workers TO cuzk_worker;

-- River's tables (in schema public, migrated before this file). A later River migration
-- that adds a table needs the same grant: every cuzk migrate run repeats it
-- (migrations/grant_river.sql).
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
              WHERE c.relnamespace = 'public'::regnamespace AND c.relname LIKE 'river\_%'
                AND c.relkind IN ('r', 'S', 'p') LOOP
        IF t.relkind = 'S' THEN
            EXECUTE format('GRANT USAGE, SELECT, UPDATE ON SEQUENCE %s TO cuzk_worker', t.name);
        ELSE
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE %s TO cuzk_worker', t.name);
        END IF;
    END LOOP;
END $$;
