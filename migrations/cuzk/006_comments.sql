-- What the counters and outcomes mean, where psql's \d+ shows it.
COMMENT ON COLUMN cuzk.proof_requests.attempts IS
    'Attempts that used up max_attempts, as River counts them: a hand-back at worker shutdown '
    'is not counted, so this can be lower than the highest attempt number in proof_attempts.';
COMMENT ON COLUMN cuzk.proof_attempts.attempt IS
    'Attempt number: one more than the request''s highest, whether or not that one was counted.';
COMMENT ON COLUMN cuzk.proof_attempts.outcome IS
    'running while in flight; succeeded; failed (bad input, or the last allowed attempt); '
    'retryable (will be retried); cancelled (cancel_proof); interrupted: the worker died '
    '(rescued), was stopped (work handed back), was superseded by a rescue, or a late '
    'duplicate completion found the proof already stored.';
COMMENT ON COLUMN cuzk.proof_attempts.build IS
    'Module version and VCS revision of the worker binary, "+dirty" when built from a modified tree.';
COMMENT ON COLUMN cuzk.proof_attempts.config_hash IS
    'Stable hash of config: the worker settings that change performance.';
