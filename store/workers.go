package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RescuedJob is a running job handed back because its worker stopped heartbeating.
type RescuedJob struct {
	JobID     int64
	Worker    string
	Discarded bool // it had no attempt left
}

// RescueDeadWorkers marks workers other than self whose heartbeat is older than
// deadAfter as stopped and hands their running jobs in queue back: available again at
// once when attempts remain (the dead attempt counts, as with River's own rescuer),
// discarded otherwise. River's rescuer would do the same, but only after the job's
// rescue-after, which must be longer than the longest proof; a heartbeat tells a dead
// worker from a slow one much sooner. If the worker was alive after all (a network
// partition), its late completion finds the job no longer running, and the one-proof
// rules keep a second proof out.
func RescueDeadWorkers(ctx context.Context, db DB, self string, deadAfter time.Duration, queue string) ([]RescuedJob, error) {
	rows, err := db.Query(ctx, `
		WITH dead AS (
		    UPDATE cuzk.workers SET stopped_at = now()
		     WHERE stopped_at IS NULL AND worker <> $1 AND river_client_id IS NOT NULL
		       AND last_seen_at < now() - make_interval(secs => $2)
		    RETURNING worker, river_client_id,
		              'worker ' || worker || ' stopped heartbeating during the attempt (rescued)' AS reason)
		`+handBackJobs, self, deadAfter.Seconds(), queue)
	return collectRescued(rows, err, "rescue the jobs of dead workers")
}

// HandBackClientJobs hands the running jobs in queue last claimed under River client
// clientID back, as RescueDeadWorkers does, with reason in each job's errors: for a
// worker restarted under its name, whose previous process is known to be gone.
func HandBackClientJobs(ctx context.Context, db DB, clientID, queue, reason string) ([]RescuedJob, error) {
	rows, err := db.Query(ctx, `
		WITH dead AS (SELECT ''::text AS worker, $1::text AS river_client_id, $2::text AS reason)
		`+handBackJobs, clientID, reason, queue)
	return collectRescued(rows, err, "hand back the jobs of the previous process")
}

// handBackJobs follows a CTE dead(worker, river_client_id, reason) and takes the
// queue as $3.
const handBackJobs = `
		UPDATE river_job j
		   SET state = (CASE WHEN j.attempt < j.max_attempts THEN 'available' ELSE 'discarded' END)::river_job_state,
		       scheduled_at = now(),
		       finalized_at = CASE WHEN j.attempt < j.max_attempts THEN NULL ELSE now() END,
		       errors = array_append(j.errors, jsonb_build_object(
		           'at', now(), 'attempt', j.attempt, 'trace', '', 'error', d.reason))
		  FROM dead d
		 WHERE j.state = 'running' AND j.queue = $3
		   AND j.attempted_by[array_upper(j.attempted_by, 1)] = d.river_client_id
		RETURNING j.id, d.worker, j.state = 'discarded'`

func collectRescued(rows pgx.Rows, err error, what string) ([]RescuedJob, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RescuedJob, error) {
		var j RescuedJob
		return j, r.Scan(&j.JobID, &j.Worker, &j.Discarded)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// PruneWorkers deletes cuzk.workers rows of workers stopped longer ago than keep: each
// process start adds a row (host/pid), and a fleet restarted daily for months would
// otherwise carry them all.
func PruneWorkers(ctx context.Context, db DB, keep time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM cuzk.workers WHERE stopped_at < now() - make_interval(secs => $1)`, keep.Seconds())
	if err != nil {
		return 0, fmt.Errorf("prune stopped workers: %w", err)
	}
	return tag.RowsAffected(), nil
}
