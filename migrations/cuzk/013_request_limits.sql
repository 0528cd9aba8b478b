-- Request size limits derived from each circuit: the longest inputs JSON and the
-- full-witness binary a valid request of the circuit can carry are known when it is
-- set up, so the insert check refuses anything longer, whatever the circuit.
-- cuzk.settings max_request_bytes becomes an optional cap over all circuits (NULL or
-- absent: none); its 64 MiB default of 010 is cleared.
--
-- A circuit registered before this migration has no recorded limits until cuzk setup
-- (or setup --import) registers it again; until then its requests have 010's 64 MiB.

ALTER TABLE cuzk.circuits
    ADD COLUMN secret_inputs int CHECK (secret_inputs >= 0),
    ADD COLUMN max_inputs_bytes bigint CHECK (max_inputs_bytes > 0),
    -- gnark's witness.MarshalBinary: 12 bytes of header, 32 per public and secret input.
    ADD COLUMN max_witness_bytes bigint GENERATED ALWAYS AS (12 + 32 * (public_inputs + secret_inputs::bigint)) STORED,
    -- Both recorded (cuzk setup) or neither (a circuit registered before).
    ADD CONSTRAINT circuits_request_limits CHECK ((secret_inputs IS NULL) = (max_inputs_bytes IS NULL));
COMMENT ON COLUMN cuzk.circuits.secret_inputs IS
    'Secret input variables; public_inputs + secret_inputs are the keys of a request''s inputs. NULL for a circuit registered before it was recorded.';
COMMENT ON COLUMN cuzk.circuits.max_inputs_bytes IS
    'Longest valid inputs of the circuit as jsonb text (every input nested one object deep per name segment, values of 78 digits); a longer request is refused at insert.';
COMMENT ON COLUMN cuzk.circuits.max_witness_bytes IS
    'Size of the circuit''s full-witness binary (12 + 32 per input variable); a longer witness is refused at insert.';

ALTER TABLE cuzk.settings ALTER COLUMN value DROP NOT NULL;
UPDATE cuzk.settings SET value = NULL WHERE name = 'max_request_bytes' AND value = '67108864';
UPDATE cuzk.settings
   SET description = 'Optional cap, in bytes, on the inputs (as JSON text) or witness of every request, '
                     'applied besides each circuit''s own limit (cuzk.circuits max_inputs_bytes, max_witness_bytes). '
                     'NULL: each circuit''s own limit alone.'
 WHERE name = 'max_request_bytes';

-- The insert check of 011 with the limit of the request's circuit.
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
    IF NEW.inputs IS NOT NULL AND jsonb_typeof(NEW.inputs) <> 'object' THEN
        RAISE EXCEPTION 'request "%": inputs must be a JSON object, not a JSON %', left(NEW.request_id, 256), jsonb_typeof(NEW.inputs)
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
    IF octet_length(payload) > lim THEN
        RAISE EXCEPTION 'request "%": % of % bytes % the %-byte limit %', left(NEW.request_id, 256), what, octet_length(payload),
                        CASE what WHEN 'inputs' THEN 'exceed' ELSE 'exceeds' END, lim, why
            USING ERRCODE = 'program_limit_exceeded', COLUMN = what, HINT = hint;
    END IF;
    NEW.payload_digest := sha256(payload);
    NEW.state := 'queued';
    NEW.attempts := 0;
    RETURN NEW;
END $$;
