-- Fair shares count partitions, not requests.
--
-- A partition is what the fleet proves one at a time (one synthesis, one proof, one
-- slot of a worker's memory budget); a Filecoin C2 is 10 of them. Counted in requests,
-- the share admitted_per_submitter let a submitter of 10-partition requests put ten
-- times as much work ahead of another's request as a submitter of single proofs.
--
-- 1. admit_room is admitted_per_submitter less the partitions of the submitter's
--    requests that River holds available at that priority.
-- 2. admit_into admits the oldest waiting requests whose partitions, added in order,
--    fit that room. A request larger than the whole share is admitted alone, when none
--    of the submitter's at its priority is available, so that it is still proven.
-- 3. A claim frees its request's partitions and admits into them without a count; when
--    the next waiting request does not fit there, the room is counted.

UPDATE cuzk.settings SET description =
    'Most partitions of available River jobs per submitter and priority (a single-proof request is one '
    'partition); a submitter''s further queued requests wait without a job and are admitted, oldest '
    'first, as these are claimed. Another submitter''s request waits behind at most this many partitions '
    'of one submitter''s backlog; a larger request is admitted alone.'
 WHERE name = 'admitted_per_submitter';

DROP INDEX cuzk.proof_requests_admitted_idx;
CREATE INDEX proof_requests_admitted_idx ON cuzk.proof_requests (submitted_by, priority) INCLUDE (job_id, partitions)
    WHERE state = 'queued' AND job_id IS NOT NULL;

CREATE OR REPLACE FUNCTION cuzk.admit_room(who text, p int) RETURNS int
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
    SELECT coalesce((SELECT s.value::int FROM cuzk.settings s WHERE s.name = 'admitted_per_submitter'), 64)
           - coalesce((SELECT sum(r.partitions) FROM cuzk.proof_requests r
                        WHERE r.submitted_by = who AND r.priority = p AND r.state = 'queued' AND r.job_id IS NOT NULL
                          AND (SELECT j.state FROM public.river_job j WHERE j.id = r.job_id) = 'available'), 0)::int
$$;

-- admit_into gives River jobs to who's oldest waiting requests at priority p whose
-- partitions, added in order, fit room (the caller holds who's row lock), and returns
-- how many requests it admitted. When none of who's at p is available, the oldest is
-- admitted whatever its size.
CREATE OR REPLACE FUNCTION cuzk.admit_into(who text, p int, room int) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

-- A claimed (or cancelled) request that was available frees its partitions: the next
-- waiting requests that fit there are admitted without a count; if the next does not
-- fit, the room is counted.
CREATE OR REPLACE FUNCTION cuzk.proof_requests_readmit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
