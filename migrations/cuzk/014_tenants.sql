-- Submitters are tenants: each acts on its own requests, learns nothing of another's
-- inputs, and gets its share of the fleet whatever another's backlog.
--
-- 1. Identity. A request's submitter is the login (session_user), whatever role it SET
--    ROLE to: an insert trigger records it, for submit_proof and a plain INSERT alike.
-- 2. Operators. cuzk_operator (a group role, granted cuzk_submitter and cuzk_urgent)
--    acts on every request; so does the schema owner (and a superuser), and
--    cuzk_worker, which may update requests directly anyway. Everyone else may retry
--    or cancel only its own requests. Priority 1 (urgent) is for roles granted
--    cuzk_urgent.
-- 3. No guess oracle. submit_proof compares a resubmission's inputs only with the
--    submitter's own request; for anyone else an existing request_id is one error,
--    reached without reading the other request's circuit or digest, so neither its
--    text nor its cost depends on the inputs guessed.
-- 4. Fair shares. River claims jobs by (priority, scheduled_at, id), so a backlog
--    inserted first is claimed first. Instead of a River job per request at insert,
--    River holds at most cuzk.settings admitted_per_submitter available jobs per
--    (submitter, priority); the rest wait in proof_requests as queued with no job, and
--    are admitted oldest first whenever one of that submitter's admitted requests
--    leaves the queue (claimed, cancelled, repaired) or a request starts waiting. An
--    admitted job is scheduled at its admission, so another submitter's request waits
--    behind at most that many of a flooding submitter's, and River's table stays
--    small under a flood. Admission is serialized per submitter by a row lock on its
--    cuzk.submitters row, which only the owner-run functions and operators can lock
--    (advisory locks are open to any login). The leader's upkeep admits whatever a
--    missed admission left waiting (cuzk.admit_waiting).
-- 5. Limits. cuzk.submitters.max_queued (NULL: none), set by operators, caps a
--    submitter's queued requests; an insert over it is refused.
-- 6. Repairs and retention. cuzk.repair_jobs, run by the leader's upkeep, queues again
--    a request whose River job was deleted outside cuzk and cancels one whose job was
--    cancelled there; cuzk.scrub_ended_inputs removes the inputs of failed and
--    cancelled requests after cuzk.settings ended_inputs_kept (default 7 days).
-- 7. cuzk.workers (hosts, pids, configuration) is for workers and operators only.

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['cuzk_operator', 'cuzk_urgent'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created concurrently by a migration of another database
            END;
        END IF;
    END LOOP;
END $$;
GRANT cuzk_submitter, cuzk_urgent TO cuzk_operator;

-- holds says whether the login may act as role: a member of it, or of the schema's
-- owner (the owner and superusers).
CREATE FUNCTION cuzk.holds(role name) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, cuzk, pg_temp AS $$
    SELECT pg_has_role(session_user, role, 'MEMBER')
        OR pg_has_role(session_user, (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'cuzk'), 'MEMBER')
$$;

-- acts_for_all says whether the login may retry or cancel any submitter's requests.
CREATE FUNCTION cuzk.acts_for_all() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, cuzk, pg_temp AS $$
    SELECT cuzk.holds('cuzk_operator') OR cuzk.holds('cuzk_worker')
$$;

CREATE TABLE cuzk.submitters (
    name       text PRIMARY KEY,
    max_queued bigint CHECK (max_queued >= 0),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE cuzk.submitters IS
    'One row per submitting login (created at its first request, or by an operator ahead of it); its row lock serializes the admission of its requests to River.';
COMMENT ON COLUMN cuzk.submitters.max_queued IS
    'Most queued requests the submitter may have; an insert over it is refused. NULL: no limit.';
INSERT INTO cuzk.submitters (name) SELECT DISTINCT submitted_by FROM cuzk.proof_requests ON CONFLICT DO NOTHING;

INSERT INTO cuzk.settings (name, value, description) VALUES
    ('admitted_per_submitter', '64',
     'Most available River jobs per submitter and priority; a submitter''s further queued requests wait '
     'without a job and are admitted, oldest first, as these are claimed. Another submitter''s request '
     'waits behind at most this many of one submitter''s backlog.'),
    ('ended_inputs_kept', '7 days',
     'How long failed and cancelled requests keep their inputs or witness (for retry_proof) before '
     'the leader''s upkeep scrubs them. NULL: kept until retried.')
ON CONFLICT (name) DO NOTHING;
ALTER TABLE cuzk.settings
    ADD CONSTRAINT settings_admitted_per_submitter
        CHECK (name <> 'admitted_per_submitter' OR value ~ '^[1-9][0-9]{0,8}$'),
    ADD CONSTRAINT settings_ended_inputs_kept
        CHECK (name <> 'ended_inputs_kept' OR value IS NULL OR value ~ '^[0-9]+ (second|minute|hour|day|week)s?$');

-- Admitted (with a job) and waiting (without) queued requests, per submitter and
-- priority: admission and max_queued read only these. No other index may lead with
-- submitted_by: the planner, before a flood's rows are analyzed, could pick it and scan
-- a whole backlog at every admission.
CREATE INDEX proof_requests_admitted_idx ON cuzk.proof_requests (submitted_by, priority) INCLUDE (job_id)
    WHERE state = 'queued' AND job_id IS NOT NULL;
CREATE INDEX proof_requests_waiting_idx ON cuzk.proof_requests (submitted_by, priority, id)
    WHERE state = 'queued' AND job_id IS NULL;
CREATE INDEX proof_requests_ended_inputs_idx ON cuzk.proof_requests (finished_at)
    WHERE state IN ('failed', 'cancelled') AND inputs_scrubbed_at IS NULL;

-- lock_submitter returns who's row, created if missing, locked until the transaction ends.
CREATE FUNCTION cuzk.lock_submitter(who text) RETURNS cuzk.submitters
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    s cuzk.submitters;
BEGIN
    INSERT INTO cuzk.submitters (name) VALUES (who) ON CONFLICT DO NOTHING;
    SELECT * INTO STRICT s FROM cuzk.submitters WHERE name = who FOR UPDATE;
    RETURN s;
END $$;

-- admit_into gives River jobs to the room oldest waiting requests of who at priority p
-- (the caller holds who's row lock) and returns how many it admitted. A job's
-- metadata queued_at is when its request started waiting (its last change), so that
-- the attempt's queue phase counts the wait. Rows being changed meanwhile (a cancel)
-- are skipped: their change admits again.
CREATE FUNCTION cuzk.admit_into(who text, p int, room int) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    n int;
BEGIN
    IF room <= 0 THEN
        RETURN 0;
    END IF;
    WITH w AS (
        SELECT r.id, r.request_id, r.circuit, r.max_attempts, r.priority, r.updated_at FROM cuzk.proof_requests r
         WHERE r.submitted_by = who AND r.priority = p AND r.state = 'queued' AND r.job_id IS NULL
         ORDER BY r.id LIMIT room FOR UPDATE SKIP LOCKED
    ), j AS (
        INSERT INTO public.river_job (args, kind, max_attempts, priority, queue, state, scheduled_at, metadata)
        SELECT jsonb_build_object('request_id', w.request_id, 'circuit', w.circuit),
               'cuzk_prove', w.max_attempts, w.priority, 'cuzk', 'available', now(),
               jsonb_build_object('queued_at', w.updated_at)
          FROM w ORDER BY w.id
        RETURNING id, args->>'request_id' AS request_id
    ), u AS (
        UPDATE cuzk.proof_requests r SET job_id = j.id, updated_at = now()
          FROM j WHERE r.request_id = j.request_id
        RETURNING 1
    )
    SELECT count(*) INTO n FROM u;
    IF n > 0 THEN
        PERFORM pg_notify('public.river_insert', json_build_object('queue', 'cuzk')::text);
    END IF;
    RETURN n;
END $$;

-- admit_room is how many more of who's requests at priority p River may hold
-- available: admitted_per_submitter less those it does. Admitted requests are few
-- (those available, and those in a retry's backoff): each job is looked up by its key.
CREATE FUNCTION cuzk.admit_room(who text, p int) RETURNS int
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
    SELECT coalesce((SELECT s.value::int FROM cuzk.settings s WHERE s.name = 'admitted_per_submitter'), 64)
           - (SELECT count(*) FROM cuzk.proof_requests r
               WHERE r.submitted_by = who AND r.priority = p AND r.state = 'queued' AND r.job_id IS NOT NULL
                 AND (SELECT j.state FROM public.river_job j WHERE j.id = r.job_id) = 'available')::int
$$;

-- admit_locked fills every priority of who's with waiting requests up to
-- admitted_per_submitter available jobs; the caller holds who's row lock. Returns how
-- many it admitted.
CREATE FUNCTION cuzk.admit_locked(who text) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

CREATE FUNCTION cuzk.admit(who text) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    PERFORM cuzk.lock_submitter(who);
    RETURN cuzk.admit_locked(who);
END $$;

-- admit_waiting admits, for every submitter with waiting requests, what admission
-- missed (the leader's upkeep runs it). Returns how many it admitted.
CREATE FUNCTION cuzk.admit_waiting() RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    who   text;
    total int := 0;
BEGIN
    FOR who IN SELECT s.name FROM cuzk.submitters s
                WHERE EXISTS (SELECT 1 FROM cuzk.proof_requests r
                               WHERE r.submitted_by = s.name AND r.state = 'queued' AND r.job_id IS NULL)
                ORDER BY 1 LOOP
        total := total + cuzk.admit(who);
    END LOOP;
    RETURN total;
END $$;

-- After an insert: each submitter's queued limit, then admission. Where older requests
-- of the submitter wait at that priority, River holds its share already (what a retry
-- backoff frees is the upkeep's), so a submission behind a backlog costs no count.
CREATE FUNCTION cuzk.proof_requests_admit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    who   text;
    s     cuzk.submitters;
    n     bigint;
    g     record;
BEGIN
    FOR who IN SELECT DISTINCT i.submitted_by FROM inserted i ORDER BY 1 LOOP
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
        FOR g IN SELECT i.priority, min(i.id) AS first FROM inserted i WHERE i.submitted_by = who
                  GROUP BY i.priority ORDER BY 1 LOOP
            CONTINUE WHEN EXISTS (SELECT 1 FROM cuzk.proof_requests w
                                   WHERE w.submitted_by = who AND w.priority = g.priority AND w.state = 'queued'
                                     AND w.job_id IS NULL AND w.id < g.first);
            PERFORM cuzk.admit_into(who, g.priority, cuzk.admit_room(who, g.priority));
        END LOOP;
    END LOOP;
    RETURN NULL;
END $$;

DROP TRIGGER proof_requests_enqueue ON cuzk.proof_requests;
DROP FUNCTION cuzk.proof_requests_enqueue();
CREATE TRIGGER proof_requests_admit AFTER INSERT ON cuzk.proof_requests
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION cuzk.proof_requests_admit();

-- A request that leaves the admitted (claimed, cancelled, repaired) or starts waiting
-- (retried, repaired) admits its submitter's next. One whose job was available, or
-- was until a worker claimed it, freed one place: its successor is admitted without
-- a count, which keeps a claim cheap under the submitter's lock.
CREATE FUNCTION cuzk.proof_requests_readmit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    PERFORM cuzk.lock_submitter(NEW.submitted_by);
    IF OLD.state = 'queued' AND OLD.job_id IS NOT NULL AND NOT (NEW.state = 'queued' AND NEW.job_id IS NULL)
       AND (SELECT j.state FROM public.river_job j WHERE j.id = OLD.job_id) IN ('available', 'running') THEN
        PERFORM cuzk.admit_into(NEW.submitted_by, OLD.priority, 1);
    ELSE
        PERFORM cuzk.admit_locked(NEW.submitted_by);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER proof_requests_readmit AFTER UPDATE ON cuzk.proof_requests FOR EACH ROW
    WHEN ((OLD.state = 'queued' AND OLD.job_id IS NOT NULL AND (NEW.state <> 'queued' OR NEW.job_id IS NULL))
       OR (NEW.state = 'queued' AND NEW.job_id IS NULL AND (OLD.state <> 'queued' OR OLD.job_id IS NOT NULL)))
    EXECUTE FUNCTION cuzk.proof_requests_readmit();

-- Before the insert check of 013 (triggers fire in name order): NULLs refused with a
-- message naming the column (PostgreSQL's own prints the whole row, inputs included,
-- to the client and the server log), priority 1 refused to roles without
-- cuzk_urgent, and the login recorded as the submitter.
CREATE FUNCTION cuzk.proof_requests_tenant() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
CREATE TRIGGER proof_requests_a_tenant BEFORE INSERT ON cuzk.proof_requests
    FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_tenant();

-- submit_proof: an existing request_id is an idempotent resubmission only for the
-- login that submitted it (same circuit and inputs: its id; others: an error saying
-- so). For any other login it is one error, whatever the inputs, reached without
-- reading the request's circuit or digest.
CREATE OR REPLACE FUNCTION cuzk.submit_proof(request_id text, circuit text, inputs jsonb DEFAULT NULL,
                                             witness bytea DEFAULT NULL, priority int DEFAULT 2,
                                             max_attempts int DEFAULT 5) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

-- own_request locks the request for retry_proof and cancel_proof and returns it, if the
-- login may act on it.
CREATE FUNCTION cuzk.own_request(req_id text, verb text) RETURNS cuzk.proof_requests
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
REVOKE EXECUTE ON FUNCTION cuzk.own_request(text, text), cuzk.lock_submitter(text), cuzk.admit_locked(text),
                           cuzk.admit_into(text, int, int), cuzk.admit_room(text, int),
                           cuzk.admit(text), cuzk.admit_waiting() FROM PUBLIC;

-- retry_proof: the login's own failed or cancelled request (any, for operators), queued
-- again; it gets a River job now or when its submitter's admitted ones are claimed.
-- Returns the job's id, or NULL while it waits. One whose inputs were scrubbed cannot
-- be retried.
CREATE OR REPLACE FUNCTION cuzk.retry_proof(request_id text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
COMMENT ON FUNCTION cuzk.retry_proof(text) IS
    'Queues a failed or cancelled request of the caller''s (any, for cuzk_operator) again; returns its River job id, or NULL while it waits for admission behind the submitter''s other queued requests.';

-- cancel_proof as in 011, on the login's own requests (any, for operators).
CREATE OR REPLACE FUNCTION cuzk.cancel_proof(request_id text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    r cuzk.proof_requests;
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
        PERFORM pg_notify('public.river_control',
                          json_build_object('action', 'cancel', 'job_id', r.job_id, 'queue', 'cuzk')::text);
    END IF;
    RETURN true;
END $$;
COMMENT ON FUNCTION cuzk.cancel_proof(text) IS
    'Cancels a queued or running request of the caller''s (any, for cuzk_operator; last_error: cancelled by role <session user>) and returns true; returns false, changing nothing, when it had already succeeded, failed or been cancelled.';

-- repair_jobs mends queued requests whose River job was changed outside cuzk (River
-- UI, River's API, SQL): a deleted (or completed) job is replaced, the request waiting
-- for admission again; a cancelled one cancels the request. A discarded one is
-- cuzk's rescue path's (store.FailOrphaned). Returns the requests changed and how.
CREATE FUNCTION cuzk.repair_jobs() RETURNS TABLE (request_id text, job_id bigint, action text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
    )
    SELECT * FROM fixed;
END $$;
COMMENT ON FUNCTION cuzk.repair_jobs() IS
    'Queued requests whose River job was deleted or completed outside cuzk wait for a new one; those whose job was cancelled there are cancelled. The leader''s upkeep runs it.';

-- scrub_ended_inputs removes the inputs or witness of up to lim failed or cancelled
-- requests that ended longer ago than cuzk.settings ended_inputs_kept. Returns how many.
CREATE FUNCTION cuzk.scrub_ended_inputs(lim int DEFAULT 10000) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
COMMENT ON FUNCTION cuzk.scrub_ended_inputs(int) IS
    'Scrubs the inputs of up to lim failed or cancelled requests ended longer ago than cuzk.settings ended_inputs_kept; the leader''s upkeep runs it.';

REVOKE EXECUTE ON FUNCTION cuzk.repair_jobs(), cuzk.scrub_ended_inputs(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cuzk.repair_jobs(), cuzk.scrub_ended_inputs(int), cuzk.admit_waiting()
    TO cuzk_worker, cuzk_operator;

-- Workers' hosts, pids and settings are not the submitters' business.
REVOKE SELECT ON cuzk.workers FROM cuzk_submitter;
GRANT SELECT ON cuzk.workers TO cuzk_operator;
GRANT SELECT, INSERT, UPDATE (max_queued) ON cuzk.submitters TO cuzk_operator;
GRANT SELECT ON cuzk.submitters TO cuzk_worker;
