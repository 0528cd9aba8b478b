-- Indexes for the dashboard and the comparison panel, so a page view costs index
-- probes rather than scans of a proof_attempts table with millions of rows.
CREATE INDEX proof_attempts_finished_at_idx ON cuzk.proof_attempts (finished_at);
CREATE INDEX proof_attempts_failures_idx ON cuzk.proof_attempts ((coalesce(finished_at, started_at)))
    WHERE outcome IN ('failed', 'retryable', 'interrupted');
CREATE INDEX proof_attempts_running_idx ON cuzk.proof_attempts (worker) WHERE outcome = 'running';
CREATE INDEX proof_attempts_build_finished_idx ON cuzk.proof_attempts (build, finished_at)
    WHERE outcome = 'succeeded';
