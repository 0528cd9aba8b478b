-- as the operator
-- the queue at a glance
SELECT circuit, state, count(*) FROM cuzk.proof_status GROUP BY 1, 2 ORDER BY 1, 2;  -- failed 1, succeeded 4
-- failures of the last day, newest first
SELECT request_id, circuit, attempts, last_error, finished_at FROM cuzk.proof_status
 WHERE state = 'failed' AND finished_at > now() - interval '1 day' ORDER BY finished_at DESC;  -- sector-1238
-- live workers
SELECT worker, backend, devices, last_seen_at FROM cuzk.workers
 WHERE stopped_at IS NULL AND last_seen_at > now() - interval '1 minute';  -- one
