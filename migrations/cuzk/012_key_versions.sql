-- Versioned keys: every verifying key a circuit ever had is kept, and every proof
-- names the key version it was made with, so replacing a circuit's keys (cuzk setup
-- --force) never leaves a stored proof without the vk that verifies it.
-- cuzk.circuits.vk stays the current key; cuzk.circuits.key_version says which
-- version that is.

CREATE TABLE cuzk.circuit_keys (
    circuit    text        NOT NULL,
    version    int         NOT NULL CHECK (version >= 1),
    vk         bytea       NOT NULL,                              -- gnark VerifyingKey.WriteTo
    vk_digest  text        NOT NULL GENERATED ALWAYS AS (encode(sha256(vk), 'hex')) STORED,
    pk_digest  text        NOT NULL,                              -- sha256 of the proving key file
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (circuit, version),
    UNIQUE (circuit, vk_digest)
);
COMMENT ON TABLE cuzk.circuit_keys IS
    'Every key a circuit has had; cuzk.proofs.key_version names the one each proof was made with. Rows are never changed or removed.';

ALTER TABLE cuzk.circuits ADD COLUMN key_version int;
COMMENT ON COLUMN cuzk.circuits.key_version IS 'Version in cuzk.circuit_keys of the current vk (the vk column).';

INSERT INTO cuzk.circuit_keys (circuit, version, vk, pk_digest, created_at)
SELECT name, 1, vk, pk_digest, updated_at FROM cuzk.circuits;
UPDATE cuzk.circuits SET key_version = 1;
ALTER TABLE cuzk.circuits ALTER COLUMN key_version SET NOT NULL;
ALTER TABLE cuzk.circuits ADD CONSTRAINT circuits_key_version_fkey
    FOREIGN KEY (name, key_version) REFERENCES cuzk.circuit_keys (circuit, version) DEFERRABLE INITIALLY DEFERRED;

-- A circuit's vk set or changed: its version is the one already holding that vk, or
-- a new one.
CREATE FUNCTION cuzk.circuits_key_version() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
DECLARE
    v int;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.vk = OLD.vk AND NEW.key_version IS NOT DISTINCT FROM OLD.key_version THEN
        RETURN NEW;
    END IF;
    SELECT k.version INTO v FROM cuzk.circuit_keys k
     WHERE k.circuit = NEW.name AND k.vk_digest = encode(sha256(NEW.vk), 'hex');
    IF v IS NULL THEN
        SELECT coalesce(max(k.version), 0) + 1 INTO v FROM cuzk.circuit_keys k WHERE k.circuit = NEW.name;
        INSERT INTO cuzk.circuit_keys (circuit, version, vk, pk_digest) VALUES (NEW.name, v, NEW.vk, NEW.pk_digest);
    END IF;
    NEW.key_version := v;
    RETURN NEW;
END $$;
CREATE TRIGGER circuits_key_version BEFORE INSERT OR UPDATE OF vk, key_version ON cuzk.circuits
    FOR EACH ROW EXECUTE FUNCTION cuzk.circuits_key_version();

ALTER TABLE cuzk.proofs ADD COLUMN key_version int;
COMMENT ON COLUMN cuzk.proofs.key_version IS
    'Version of the circuit''s key the proof was made with: verify with cuzk.circuit_keys.vk of (circuit, key_version).';
UPDATE cuzk.proofs p SET key_version = c.key_version FROM cuzk.circuits c WHERE c.name = p.circuit;
ALTER TABLE cuzk.proofs ALTER COLUMN key_version SET NOT NULL;
ALTER TABLE cuzk.proofs ADD CONSTRAINT proofs_key_version_fkey
    FOREIGN KEY (circuit, key_version) REFERENCES cuzk.circuit_keys (circuit, version);

-- A proof stored without a version (a worker built before this migration) was made
-- with the circuit's current key.
CREATE FUNCTION cuzk.proofs_key_version() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, cuzk, pg_temp AS $$
BEGIN
    IF NEW.key_version IS NULL THEN
        SELECT c.key_version INTO NEW.key_version FROM cuzk.circuits c WHERE c.name = NEW.circuit;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER proofs_key_version BEFORE INSERT ON cuzk.proofs
    FOR EACH ROW EXECUTE FUNCTION cuzk.proofs_key_version();

GRANT SELECT ON cuzk.circuit_keys TO cuzk_submitter, cuzk_worker;
