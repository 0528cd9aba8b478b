-- as a submitter
-- per circuit, period and phase: n, p50, p95, mean (ms, rounded to 3 decimals) of succeeded attempts
SELECT * FROM cuzk.timing_history('1 hour', now() - interval '1 day');
SELECT * FROM cuzk.timing_history('15 minutes', now() - interval '6 hours', 'merkle-poseidon2-d8-c2');
SELECT * FROM cuzk.timing_daily WHERE circuit = 'merkle-poseidon2-d8-c2' AND phase = 'total';
-- proofs per hour and the p95 end-to-end time, last week
SELECT period, n, round(p95_ms) AS p95_ms FROM cuzk.timing_history('1 hour', now() - interval '7 days')
 WHERE circuit = 'merkle-poseidon2-d8-c2' AND phase = 'total' ORDER BY period;
-- where the time of one request went
SELECT phase, ms FROM cuzk.attempt_phases WHERE request_id = 'sector-1234' AND outcome = 'succeeded' ORDER BY ord;
-- a month, per day: closed hours from the hourly rollup, the rest from the attempts themselves
SELECT circuit, date_bin('1 day', hour, timestamptz '2000-01-01') AS day, sum(succeeded) AS succeeded, sum(failed) AS failed
  FROM (SELECT circuit, hour, succeeded, failed FROM cuzk.attempt_hours
         WHERE hour >= date_trunc('hour', now() - interval '30 days')
           AND hour < (SELECT filled_until FROM cuzk.attempt_hours_mark)
        UNION ALL
        SELECT circuit, period_start, succeeded, failed
          FROM cuzk.attempt_stats(greatest((SELECT filled_until FROM cuzk.attempt_hours_mark),
                                           date_trunc('hour', now() - interval '30 days')), 'infinity', '1 hour')) h
 GROUP BY 1, 2 ORDER BY 1, 2;
