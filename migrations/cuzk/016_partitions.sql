-- Partitioned requests: one request of N partitions (N inputs of one circuit, proven
-- with one key; a Filecoin C2 is 10), submitted by one statement.
--
-- 1. inputs may be a JSON array of N objects, each the inputs of one partition as for a
--    single proof; proof_requests.partitions is set from it at insert (1 for an object
--    or a witness) and is at most cuzk.settings max_partitions. Each element is held to
--    the circuit's size limit of one request.
-- 2. cuzk.partition_proofs holds each partition's verified proof as soon as it is made,
--    so a worker that dies mid-request loses none, and a retry proves only the
--    partitions without one. When the last is stored, the request's cuzk.proofs row is
--    written: proofs and public_witnesses hold the N proofs and public witnesses in
--    partition order (gnark encodings, as proof and public_witness are); for N > 1,
--    proof and public_witness are the same N encodings concatenated, each preceded by
--    its length as a 4-byte big-endian integer. For N = 1 proof and public_witness are
--    what they always were.
-- 3. cuzk.partition_attempts has one row per partition an attempt worked on, with its
--    phase times; the attempt's own phase columns are the sums over its partitions, and
--    its total_ms spans the whole attempt.
-- 4. Submitters read the rows of these tables for their own requests only (row-level
--    security); neither table holds inputs.

INSERT INTO cuzk.settings (name, value, description) VALUES
    ('max_partitions', '64',
     'Most partitions one request may have (the length of its inputs array); an insert over it is refused.')
ON CONFLICT (name) DO NOTHING;
ALTER TABLE cuzk.settings
    ADD CONSTRAINT settings_max_partitions CHECK (name <> 'max_partitions' OR value ~ '^[1-9][0-9]{0,5}$');

ALTER TABLE cuzk.proof_requests
    ADD COLUMN partitions int NOT NULL DEFAULT 1 CHECK (partitions >= 1),
    DROP CONSTRAINT proof_requests_inputs_object,
    ADD CONSTRAINT proof_requests_inputs_shape CHECK (
        inputs IS NULL OR jsonb_typeof(inputs) = 'object'
        OR (jsonb_typeof(inputs) = 'array' AND jsonb_array_length(inputs) = partitions));
COMMENT ON COLUMN cuzk.proof_requests.partitions IS
    'Number of partitions: the length of an inputs array, else 1. Set at insert.';
GRANT SELECT (partitions) ON cuzk.proof_requests TO cuzk_submitter;

-- Before the insert check of 013 (triggers fire in name order, after 014's
-- proof_requests_a_tenant): an inputs array is N partitions' inputs. Each element must
-- be an object within the circuit's limit; the check of 013 then sees one element at a
-- time through check_partition_inputs, and the whole array against N times the limit.
CREATE FUNCTION cuzk.proof_requests_b_partitions() RETURNS trigger
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
    SELECT min(e.i) - 1 INTO bad FROM jsonb_array_elements(NEW.inputs) WITH ORDINALITY AS e(v, i)
     WHERE jsonb_typeof(e.v) <> 'object';
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'request "%": partition % of the inputs array is a JSON %, not an object', left(NEW.request_id, 256), bad,
                        jsonb_typeof(NEW.inputs -> bad)
            USING ERRCODE = 'check_violation', COLUMN = 'inputs',
                  HINT = 'each element holds one partition''s inputs: {"X": "3", "Path.0": "0x1f"}';
    END IF;
    NEW.partitions := n;
    RETURN NEW;
END $$;
CREATE TRIGGER proof_requests_b_partitions BEFORE INSERT ON cuzk.proof_requests
    FOR EACH ROW EXECUTE FUNCTION cuzk.proof_requests_b_partitions();

-- The insert check of 013, for an inputs array too: the array's elements are objects
-- (checked above), each within the circuit's own limit, and the whole array within N
-- times the optional cap of cuzk.settings max_request_bytes.
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
    size := octet_length(payload);
    IF NEW.partitions > 1 THEN
        -- Each partition within the limit of one request: the longest element decides.
        SELECT e.i - 1, octet_length(convert_to(e.v::text, 'UTF8')) INTO part, size
          FROM jsonb_array_elements(NEW.inputs) WITH ORDINALITY AS e(v, i)
         ORDER BY octet_length(convert_to(e.v::text, 'UTF8')) DESC, e.i LIMIT 1;
        part := format(' (partition %s)', part);
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

-- Each partition's verified proof, written when it is made.
CREATE TABLE cuzk.partition_proofs (
    request_id     text NOT NULL REFERENCES cuzk.proof_requests (request_id) ON DELETE CASCADE,
    partition      int  NOT NULL CHECK (partition >= 0),
    proof          bytea NOT NULL,       -- gnark groth16 Proof.WriteTo (BLS12-381)
    public_witness bytea NOT NULL,       -- gnark witness.MarshalBinary of the public part
    key_version    int  NOT NULL,
    attempt        int  NOT NULL,
    worker         text NOT NULL,
    backend        text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (request_id, partition)
);
COMMENT ON TABLE cuzk.partition_proofs IS
    'The verified proof of each partition of a partitioned request, stored as soon as it is made; a retry proves only the partitions missing here.';

ALTER TABLE cuzk.proofs
    ADD COLUMN partitions int NOT NULL DEFAULT 1 CHECK (partitions >= 1),
    ADD COLUMN proofs bytea[],
    ADD COLUMN public_witnesses bytea[],
    ADD CONSTRAINT proofs_partitions CHECK (
        (proofs IS NULL AND public_witnesses IS NULL AND partitions = 1)
        OR (cardinality(proofs) = partitions AND cardinality(public_witnesses) = partitions));
COMMENT ON COLUMN cuzk.proofs.proofs IS
    'The proofs of a partitioned request in partition order (gnark Proof.WriteTo each); NULL for a single-proof request, whose proof is the proof column.';
COMMENT ON COLUMN cuzk.proofs.public_witnesses IS
    'The public witnesses of a partitioned request in partition order (gnark witness.MarshalBinary each); NULL for a single-proof request.';
COMMENT ON COLUMN cuzk.proofs.proof IS
    'gnark Proof.WriteTo of the proof; for a partitioned request the N proofs, each preceded by its length as a 4-byte big-endian integer.';

-- One row per partition an attempt worked on: its outcome and phase times.
CREATE TABLE cuzk.partition_attempts (
    request_id     text NOT NULL,
    attempt        int  NOT NULL,
    partition      int  NOT NULL CHECK (partition >= 0),
    outcome        text NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
    error          text,
    started_at     timestamptz NOT NULL,
    finished_at    timestamptz NOT NULL DEFAULT now(),
    batch_wait_ms  double precision,
    mem_wait_ms    double precision,
    srs_ms         double precision,
    synth_ms       double precision,
    prove_wait_ms  double precision,
    prove_ms       double precision,
    h2d_ms         double precision,
    ntt_ms         double precision,
    msm_ms         double precision,
    msm_g1_ms      double precision,
    msm_g2_ms      double precision,
    verify_ms      double precision,
    persist_ms     double precision,
    total_ms       double precision,
    PRIMARY KEY (request_id, attempt, partition),
    FOREIGN KEY (request_id, attempt) REFERENCES cuzk.proof_attempts (request_id, attempt) ON DELETE CASCADE
);
COMMENT ON TABLE cuzk.partition_attempts IS
    'Each partition an attempt worked on, with its phase times in milliseconds (total_ms: from its start to its proof stored); the attempt''s phase columns are their sums.';

-- Submitters see the partitions of their own requests only (any, for those that act
-- on every request: cuzk.acts_for_all); workers all. (SELECT cuzk.acts_for_all()) is
-- computed once per query, not per row.
ALTER TABLE cuzk.partition_proofs ENABLE ROW LEVEL SECURITY;
ALTER TABLE cuzk.partition_attempts ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_partition_proofs ON cuzk.partition_proofs FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all())
           OR EXISTS (SELECT 1 FROM cuzk.proof_requests r
                       WHERE r.request_id = partition_proofs.request_id AND r.submitted_by = session_user));
CREATE POLICY own_partition_attempts ON cuzk.partition_attempts FOR SELECT TO cuzk_submitter
    USING ((SELECT cuzk.acts_for_all())
           OR EXISTS (SELECT 1 FROM cuzk.proof_requests r
                       WHERE r.request_id = partition_attempts.request_id AND r.submitted_by = session_user));
CREATE POLICY worker_all ON cuzk.partition_proofs TO cuzk_worker USING (true) WITH CHECK (true);
CREATE POLICY worker_all ON cuzk.partition_attempts TO cuzk_worker USING (true) WITH CHECK (true);
GRANT SELECT ON cuzk.partition_proofs, cuzk.partition_attempts TO cuzk_submitter;
GRANT SELECT, INSERT, UPDATE ON cuzk.partition_proofs, cuzk.partition_attempts TO cuzk_worker;
