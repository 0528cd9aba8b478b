-- When each partition's synthesis and proving began, as cuzk.proof_attempts records
-- them for a whole attempt: with synth_ms and prove_ms they place a partition's phases
-- on one time line, so how far the synthesis of one partition overlapped the proving
-- of another, and how long the prover sat idle within a request, can be read from the
-- rows. NULL where the partition failed before the phase began.
ALTER TABLE cuzk.partition_attempts
    ADD COLUMN synth_started_at timestamptz,
    ADD COLUMN prove_started_at timestamptz;
COMMENT ON COLUMN cuzk.partition_attempts.synth_started_at IS
    'When the partition''s synthesis began (after its memory reservation); it ends synth_ms later.';
COMMENT ON COLUMN cuzk.partition_attempts.prove_started_at IS
    'When the partition''s proving began on its device (after any wait behind the device''s other lane); it ends prove_ms later.';
