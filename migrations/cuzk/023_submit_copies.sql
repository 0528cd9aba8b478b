-- The statement that submits a Filecoin-sized request (38 MB of inputs) spent most of
-- its time in cuzk's triggers, on copies of the inputs rather than on checks:
--
-- 1. proof_requests_check converted a partitioned request's inputs to text twice, whole
--    (for the digest) and element by element (for the longest). The elements' text,
--    joined as jsonb writes an array ('[' e1 ', ' e2 … ']'), is the whole text: it is
--    converted once, and the digest is unchanged.
-- 2. proof_requests_b_partitions took every element out of the array to read its type;
--    a jsonpath reads the types in place, and only a refusal looks for the element.
-- 3. proof_requests_admit read the inserted rows from a transition table, which holds
--    each new row whole, inputs included (written to a temporary file past work_mem).
--    Every inserted row's submitter is the login (proof_requests_a_tenant), so the
--    trigger admits session_user's waiting requests without reading the rows. A
--    submission behind its submitter's backlog now counts the share (a few dozen index
--    lookups) and fills a place that a retry's backoff freed, where it used to leave
--    that place to the upkeep.
-- 4. The CHECK proof_requests_inputs_shape read the whole inputs (jsonb_typeof and
--    jsonb_array_length take the value out of TOAST and decompress it) at every UPDATE
--    of the row: about 70 ms for each state change of a 38 MB request, the claim
--    included. The insert triggers check the shape already; an UPDATE that sets inputs
--    or partitions is checked by a trigger instead, with the same rule.

-- 1.
CREATE OR REPLACE FUNCTION cuzk.proof_requests_check() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
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

-- 2.
CREATE OR REPLACE FUNCTION cuzk.proof_requests_b_partitions() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
END $$;

-- 3.
CREATE OR REPLACE FUNCTION cuzk.proof_requests_admit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, cuzk, pg_temp AS $$
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
DROP TRIGGER proof_requests_admit ON cuzk.proof_requests;
CREATE TRIGGER proof_requests_admit AFTER INSERT ON cuzk.proof_requests
    FOR EACH STATEMENT EXECUTE FUNCTION cuzk.proof_requests_admit();

-- 4.
CREATE FUNCTION cuzk.proof_requests_shape() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    IF NEW.inputs IS NULL OR jsonb_typeof(NEW.inputs) = 'object'
       OR (jsonb_typeof(NEW.inputs) = 'array' AND jsonb_array_length(NEW.inputs) = NEW.partitions) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'request "%": inputs must be a JSON object, or an array of partitions objects (%)',
                    left(NEW.request_id, 256), NEW.partitions
        USING ERRCODE = 'check_violation', COLUMN = 'inputs', CONSTRAINT = 'proof_requests_inputs_shape';
END $$;
ALTER TABLE cuzk.proof_requests DROP CONSTRAINT proof_requests_inputs_shape;
CREATE TRIGGER proof_requests_shape BEFORE UPDATE OF inputs, partitions ON cuzk.proof_requests
    FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_shape();
