-- The River client ID each worker claims jobs under (river_job.attempted_by), so that
-- live workers can hand a dead worker's running jobs back as soon as its heartbeat stops.
ALTER TABLE cuzk.workers ADD COLUMN river_client_id text;
COMMENT ON COLUMN cuzk.workers.river_client_id IS
    'River client ID of the worker: the last element of river_job.attempted_by for the jobs it runs.';
