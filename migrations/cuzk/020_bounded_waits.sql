-- A submitter's own transaction can hold locks: its submitters row (every insert takes
-- it for admission, and keeps it until the submitter commits) and the rows of its own
-- requests and jobs (cancel_proof, retry_proof). The fleet's paths through those rows
-- (a worker's claim and completion, the leader's upkeep, an operator's priority change)
-- must not wait on such a transaction for longer than a moment: a submitter that
-- leaves one open would otherwise stall workers and, through the upkeep's locks on the
-- submitters before it, everyone's submissions.
--
-- 1. Admission from fleet paths takes the submitter's lock with a bounded wait
--    (try_lock_submitter) and skips when it cannot: the leader's admit_waiting admits
--    what was skipped. Workers claiming one submitter's jobs side by side hold the lock
--    for milliseconds each, well within the wait.
-- 2. admit_waiting skips a submitter whose row is locked rather than waiting (and
--    holding the rows of those before it); its next run admits them.
-- 3. The planner's statistics of the private columns are not collected: EXPLAIN's row
--    estimates use statistics through leakproof operators (=, <) even under row-level
--    security, so a histogram of request_id, last_error or a proof would answer for
--    other submitters' rows.

-- try_lock_submitter locks who's row (it exists: every request's submitter has one)
-- until the transaction ends and returns true, or returns false after the wait below
-- when another transaction holds it. The function's setting bounds only its own wait.
CREATE FUNCTION cuzk.try_lock_submitter(who text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp SET lock_timeout = '1s' AS $$
BEGIN
    PERFORM 1 FROM cuzk.submitters WHERE name = who FOR UPDATE;
    RETURN FOUND;
EXCEPTION WHEN lock_not_available THEN
    RETURN false;
END $$;
REVOKE EXECUTE ON FUNCTION cuzk.try_lock_submitter(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION cuzk.proof_requests_readmit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    IF NOT cuzk.try_lock_submitter(NEW.submitted_by) THEN
        RETURN NULL;  -- the holder is the submitter or an admission: admit_waiting catches up
    END IF;
    IF OLD.state = 'queued' AND OLD.job_id IS NOT NULL AND NOT (NEW.state = 'queued' AND NEW.job_id IS NULL)
       AND (SELECT j.state FROM public.river_job j WHERE j.id = OLD.job_id) IN ('available', 'running') THEN
        PERFORM cuzk.admit_into(NEW.submitted_by, OLD.priority, 1);
    ELSE
        PERFORM cuzk.admit_locked(NEW.submitted_by);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION cuzk.proof_requests_priority() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

CREATE OR REPLACE FUNCTION cuzk.admit_waiting() RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

-- 3. Statistics off for every column whose values are a submitter's own. The columns
-- that stay (states, priorities, times, sizes) are what the fleet's timings show anyway.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT a.attrelid::regclass AS tbl, a.attname
               FROM pg_attribute a
              WHERE a.attnum > 0 AND NOT a.attisdropped
                AND (a.attrelid, a.attname) IN (
                    ('cuzk.proof_requests'::regclass, 'request_id'), ('cuzk.proof_requests'::regclass, 'submitted_by'),
                    ('cuzk.proof_requests'::regclass, 'last_error'),
                    ('cuzk.proofs'::regclass, 'request_id'), ('cuzk.proofs'::regclass, 'submitted_by'),
                    ('cuzk.proofs'::regclass, 'proof'), ('cuzk.proofs'::regclass, 'public_witness'),
                    ('cuzk.proofs'::regclass, 'worker'),
                    ('cuzk.proof_attempts'::regclass, 'request_id'), ('cuzk.proof_attempts'::regclass, 'submitted_by'),
                    ('cuzk.proof_attempts'::regclass, 'error'), ('cuzk.proof_attempts'::regclass, 'worker'),
                    ('cuzk.proof_attempts'::regclass, 'device'), ('cuzk.proof_attempts'::regclass, 'config'),
                    ('cuzk.proof_attempts'::regclass, 'telemetry'),
                    ('cuzk.partition_proofs'::regclass, 'request_id'), ('cuzk.partition_proofs'::regclass, 'submitted_by'),
                    ('cuzk.partition_proofs'::regclass, 'proof'), ('cuzk.partition_proofs'::regclass, 'public_witness'),
                    ('cuzk.partition_proofs'::regclass, 'worker'),
                    ('cuzk.partition_attempts'::regclass, 'request_id'), ('cuzk.partition_attempts'::regclass, 'submitted_by'),
                    ('cuzk.partition_attempts'::regclass, 'error'), ('cuzk.partition_attempts'::regclass, 'worker'))
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS 0', c.tbl, c.attname);
    END LOOP;
END $$;

-- Statistics gathered before this migration stay until a superuser removes them
-- (ANALYZE no longer updates these columns, and only a superuser writes pg_statistic).
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        DELETE FROM pg_statistic s USING pg_attribute a
         WHERE a.attrelid = s.starelid AND a.attnum = s.staattnum AND a.attstattarget = 0
           AND s.starelid IN ('cuzk.proof_requests'::regclass, 'cuzk.proofs'::regclass, 'cuzk.proof_attempts'::regclass,
                              'cuzk.partition_proofs'::regclass, 'cuzk.partition_attempts'::regclass);
    ELSIF EXISTS (SELECT 1 FROM pg_stats s
                    JOIN pg_attribute a ON a.attrelid = format('%I.%I', s.schemaname, s.tablename)::regclass
                                       AND a.attname = s.attname
                   WHERE s.schemaname = 'cuzk' AND a.attstattarget = 0
                     AND s.tablename IN ('proof_requests', 'proofs', 'proof_attempts', 'partition_proofs',
                                         'partition_attempts')) THEN
        RAISE WARNING 'planner statistics of private columns remain from before this migration'
            USING HINT = 'as a superuser, run once the DELETE in docs/security.md, "Read others'' values through the planner"';
    END IF;
END $$;
