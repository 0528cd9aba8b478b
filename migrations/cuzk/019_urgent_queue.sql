-- Urgent requests get a River queue of their own.
--
-- 1. The River job of a priority-1 request goes into queue cuzk_urgent, every other
--    into cuzk (cuzk.job_queue). Each worker works cuzk_urgent with a few slots of its
--    own (--urgent-slots), so an urgent request is claimed at once even while every
--    slot of the cuzk queue holds a long request.
-- 2. Admission (admit_into), cancel_proof's notification and the unused enqueue put
--    and address jobs in the queue of their request's priority.
-- 3. A change of a request's priority moves its job, when no worker holds it, to the
--    queue and River priority that go with the new priority, and admits the requests
--    the change made room for; repair_jobs moves any job left in the other queue
--    (one that was running at the change and was then retried by River).
-- 4. Jobs of priority-1 requests that no worker holds move to cuzk_urgent now.

CREATE FUNCTION cuzk.job_queue(priority int) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, cuzk, pg_temp AS $$
    SELECT CASE WHEN priority = 1 THEN 'cuzk_urgent' ELSE 'cuzk' END
$$;
COMMENT ON FUNCTION cuzk.job_queue(int) IS
    'The River queue of the job of a request of this priority: cuzk_urgent for 1 (urgent), cuzk for the others.';
REVOKE EXECUTE ON FUNCTION cuzk.job_queue(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cuzk.job_queue(int) TO cuzk_submitter, cuzk_worker;

CREATE OR REPLACE FUNCTION cuzk.admit_into(who text, p int, room int) RETURNS int
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
               'cuzk_prove', w.max_attempts, w.priority, cuzk.job_queue(w.priority), 'available', now(),
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
        PERFORM pg_notify('public.river_insert', json_build_object('queue', cuzk.job_queue(p))::text);
    END IF;
    RETURN n;
END $$;

CREATE OR REPLACE FUNCTION cuzk.enqueue(req_id text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

-- The cancel notification names the queue the job is in: River's producer of that
-- queue is the one that holds it when it runs.
CREATE OR REPLACE FUNCTION cuzk.cancel_proof(request_id text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

-- A job no worker holds follows its request's priority at once. A running one stays
-- where its worker claimed it (River's cancel reaches it through that queue);
-- repair_jobs moves it if River puts it back for a retry.
CREATE FUNCTION cuzk.proof_requests_priority() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    IF NEW.job_id IS NOT NULL THEN
        UPDATE public.river_job j SET queue = cuzk.job_queue(NEW.priority), priority = NEW.priority
         WHERE j.id = NEW.job_id AND j.state IN ('available', 'scheduled', 'retryable', 'pending');
        IF FOUND THEN
            PERFORM pg_notify('public.river_insert', json_build_object('queue', cuzk.job_queue(NEW.priority))::text);
        END IF;
    END IF;
    IF NEW.state = 'queued' THEN
        PERFORM cuzk.lock_submitter(NEW.submitted_by);
        PERFORM cuzk.admit_locked(NEW.submitted_by);
    END IF;
    RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION cuzk.proof_requests_priority() FROM PUBLIC;
CREATE TRIGGER proof_requests_priority AFTER UPDATE OF priority ON cuzk.proof_requests
    FOR EACH ROW WHEN (OLD.priority IS DISTINCT FROM NEW.priority)
    EXECUTE FUNCTION cuzk.proof_requests_priority();

CREATE OR REPLACE FUNCTION cuzk.repair_jobs() RETURNS TABLE (request_id text, job_id bigint, action text)
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
COMMENT ON FUNCTION cuzk.repair_jobs() IS
    'Queued requests whose River job was deleted or completed outside cuzk wait for a new one; those whose job was cancelled there are cancelled; a job waiting in the queue of another priority than its request''s (cuzk.job_queue) is moved to its own. The leader''s upkeep runs it.';

UPDATE public.river_job j SET queue = cuzk.job_queue(r.priority)
  FROM cuzk.proof_requests r
 WHERE r.job_id = j.id AND j.kind = 'cuzk_prove'
   AND j.state IN ('available', 'scheduled', 'retryable', 'pending')
   AND j.queue IS DISTINCT FROM cuzk.job_queue(r.priority);
