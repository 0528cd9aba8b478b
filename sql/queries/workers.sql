-- Workers: heartbeats, liveness, name locks and handing back the jobs of dead ones
-- (store/workers.go).

-- name: RescueDeadWorkers :many
-- Workers other than $1 silent for $2 seconds are marked stopped; their running jobs in
-- the queues $3 (those their River client claimed last) are locked until the hand-back
-- commits, so that none finishes in between. A worker already marked stopped is looked
-- at again while such jobs remain: one marked while alive (its heartbeat late) may
-- claim before its next beat and die, and a stopping one may leave jobs behind.
WITH dead AS (
    UPDATE cuzk.workers w SET stopped_at = coalesce(w.stopped_at, now())
     WHERE w.worker <> $1 AND w.river_client_id IS NOT NULL
       AND w.last_seen_at < now() - make_interval(secs => $2)
       AND (w.stopped_at IS NULL OR EXISTS (
            SELECT 1 FROM public.river_job j
             WHERE j.state = 'running' AND j.queue = ANY($3::text[])
               AND j.attempted_by[array_upper(j.attempted_by, 1)] = w.river_client_id))
    RETURNING worker, river_client_id,
              'worker ' || worker || ' stopped heartbeating during the attempt (rescued)' AS reason)
SELECT j.id, d.worker, d.reason, j.attempt, j.max_attempts, now()
  FROM public.river_job j JOIN dead d ON j.attempted_by[array_upper(j.attempted_by, 1)] = d.river_client_id
 WHERE j.state = 'running' AND j.queue = ANY($3::text[])
   FOR UPDATE OF j;

-- name: ClientRunningJobs :many
-- The running jobs in the queues $3 that River client $1 claimed last, locked as in
-- RescueDeadWorkers, with $2 as the reason.
WITH dead AS (SELECT ''::text AS worker, $1::text AS river_client_id, $2::text AS reason)
SELECT j.id, d.worker, d.reason, j.attempt, j.max_attempts, now()
  FROM public.river_job j JOIN dead d ON j.attempted_by[array_upper(j.attempted_by, 1)] = d.river_client_id
 WHERE j.state = 'running' AND j.queue = ANY($3::text[])
   FOR UPDATE OF j;

-- name: PruneWorkers :exec
DELETE FROM cuzk.workers WHERE stopped_at < now() - make_interval(secs => $1);

-- name: Heartbeat :one
-- Returns the River client id the row held before (NULL for a new row or none).
WITH prev AS (SELECT river_client_id FROM cuzk.workers WHERE worker = $1)
INSERT INTO cuzk.workers (worker, host, pid, backend, devices, config, river_client_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (worker) DO UPDATE SET last_seen_at = now(), stopped_at = NULL,
    host = EXCLUDED.host, pid = EXCLUDED.pid,
    backend = EXCLUDED.backend, devices = EXCLUDED.devices, config = EXCLUDED.config,
    river_client_id = EXCLUDED.river_client_id
RETURNING (SELECT river_client_id FROM prev);

-- name: MarkWorkerStopped :exec
-- Only while the row is River client $2's: a live namesake's row stays live.
UPDATE cuzk.workers SET stopped_at = now(), last_seen_at = now() WHERE worker = $1 AND river_client_id = $2;

-- name: LastHeartbeat :one
SELECT coalesce(river_client_id, ''), host, pid, last_seen_at, extract(epoch FROM now() - last_seen_at)::float8,
       stopped_at IS NOT NULL, coalesce(config->>'heartbeat', '')
  FROM cuzk.workers WHERE worker = $1;

-- name: BudgetFits :one
SELECT EXISTS (SELECT 1 FROM cuzk.workers
                WHERE worker <> $1 AND stopped_at IS NULL
                  AND last_seen_at > now() - make_interval(secs => $3)
                  AND jsonb_typeof(config->'mem_budget') = 'number'
                  AND (config->>'mem_budget')::numeric >= $2);

-- name: TryNameLock :one
-- The two-key advisory lock ($1: the class, hashtext of the name), apart from the
-- one-key locks that migrations use.
SELECT pg_try_advisory_lock($1, hashtext($2));

-- name: NameLockHolders :many
SELECT l.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''),
       coalesce(has_table_privilege(a.usesysid, 'cuzk.workers', 'UPDATE'), false)
  FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid = $1::oid AND l.objid = hashtext($2)::oid
 ORDER BY l.pid;
