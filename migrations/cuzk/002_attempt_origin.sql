-- What produced each attempt, so timings can be compared across builds and settings,
-- and the device phases a GPU backend can separate.
ALTER TABLE cuzk.proof_attempts
    ADD COLUMN build       text,   -- module version, VCS revision, "+dirty" when modified
    ADD COLUMN config_hash text,   -- stable hash of the performance settings in config
    ADD COLUMN config      jsonb,  -- backend, devices, max_batch, batch_wait, synth_concurrency, ...
    ADD COLUMN h2d_ms      double precision,
    ADD COLUMN msm_g1_ms   double precision,
    ADD COLUMN msm_g2_ms   double precision;

CREATE INDEX proof_attempts_build_idx ON cuzk.proof_attempts (build, circuit);
CREATE INDEX proof_attempts_config_idx ON cuzk.proof_attempts (config_hash, circuit);
