package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
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
	return handBack(ctx, db, "rescue the jobs of dead workers", `
		WITH dead AS (
		    UPDATE cuzk.workers SET stopped_at = now()
		     WHERE stopped_at IS NULL AND worker <> $1 AND river_client_id IS NOT NULL
		       AND last_seen_at < now() - make_interval(secs => $2)
		    RETURNING worker, river_client_id,
		              'worker ' || worker || ' stopped heartbeating during the attempt (rescued)' AS reason)
		`+runningJobsOf, self, deadAfter.Seconds(), queue)
}

// HandBackClientJobs hands the running jobs in queue last claimed under River client
// clientID back, as RescueDeadWorkers does, with reason in each job's errors: for a
// worker restarted under its name, whose previous process is known to be gone.
func HandBackClientJobs(ctx context.Context, db DB, clientID, queue, reason string) ([]RescuedJob, error) {
	return handBack(ctx, db, "hand back the jobs of the previous process", `
		WITH dead AS (SELECT ''::text AS worker, $1::text AS river_client_id, $2::text AS reason)
		`+runningJobsOf, clientID, reason, queue)
}

// runningJobsOf follows a CTE dead(worker, river_client_id, reason) and takes the
// queue as $3: the running jobs those clients claimed last, locked until the hand-back
// commits, so that none finishes in between.
const runningJobsOf = `
		SELECT j.id, d.worker, d.reason, j.attempt, j.max_attempts, now()
		  FROM river_job j JOIN dead d ON j.attempted_by[array_upper(j.attempted_by, 1)] = d.river_client_id
		 WHERE j.state = 'running' AND j.queue = $3
		   FOR UPDATE OF j`

// handBack runs the query (see runningJobsOf) and hands the jobs it returns back
// through River's rescue (the driver's JobRescueMany, which River's rescuer uses too:
// the error is appended to the job's errors and its rescue count kept), in one
// transaction.
func handBack(ctx context.Context, db DB, what, query string, args ...any) ([]RescuedJob, error) {
	var out []RescuedJob
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		var (
			j                    RescuedJob
			reason               string
			attempt, maxAttempts int
			now                  time.Time
		)
		p := &riverdriver.JobRescueManyParams{}
		_, err = pgx.ForEachRow(rows, []any{&j.JobID, &j.Worker, &reason, &attempt, &maxAttempts, &now}, func() error {
			e, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: attempt, Error: reason})
			if err != nil {
				return err
			}
			state, finalized := rivertype.JobStateAvailable, (*time.Time)(nil)
			if j.Discarded = attempt >= maxAttempts; j.Discarded {
				state, finalized = rivertype.JobStateDiscarded, &now
			}
			p.ID = append(p.ID, j.JobID)
			p.Error = append(p.Error, e)
			p.FinalizedAt = append(p.FinalizedAt, finalized)
			p.ScheduledAt = append(p.ScheduledAt, now)
			p.State = append(p.State, string(state))
			out = append(out, j)
			return nil
		})
		if err != nil || len(p.ID) == 0 {
			return err
		}
		// Every job here is running and locked: River's stuck horizon excludes none.
		p.StuckHorizon = now.Add(time.Hour)
		_, err = riverpgxv5.New(nil).UnwrapExecutor(tx).JobRescueMany(ctx, p)
		return err
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

// Beat is what a worker records about itself in cuzk.workers at each heartbeat.
type Beat struct {
	Worker        string // its name (host/pid by default)
	Host          string
	PID           int
	Backend       string
	Devices       []byte // jsonb: the device labels
	Config        []byte // jsonb: performance settings and failure handling
	RiverClientID string
}

// Heartbeat upserts the worker's row, marking it seen now and not stopped. It returns
// the River client ID the row held before (nil for a new row or none), so that the
// caller can tell another live process writing under the same name.
func Heartbeat(ctx context.Context, db DB, b *Beat) (prevClientID *string, err error) {
	err = db.QueryRow(ctx, `
		WITH prev AS (SELECT river_client_id FROM cuzk.workers WHERE worker = $1)
		INSERT INTO cuzk.workers (worker, host, pid, backend, devices, config, river_client_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (worker) DO UPDATE SET last_seen_at = now(), stopped_at = NULL,
		    host = EXCLUDED.host, pid = EXCLUDED.pid,
		    backend = EXCLUDED.backend, devices = EXCLUDED.devices, config = EXCLUDED.config,
		    river_client_id = EXCLUDED.river_client_id
		RETURNING (SELECT river_client_id FROM prev)`,
		b.Worker, b.Host, b.PID, b.Backend, b.Devices, b.Config, nullString(b.RiverClientID)).Scan(&prevClientID)
	if err != nil {
		return nil, fmt.Errorf("heartbeat of worker %q: %w", b.Worker, err)
	}
	return prevClientID, nil
}

// MarkWorkerStopped marks worker's row stopped, only while it is River client
// clientID's: a live namesake's row stays live.
func MarkWorkerStopped(ctx context.Context, db DB, worker, clientID string) error {
	_, err := db.Exec(ctx, "UPDATE cuzk.workers SET stopped_at = now(), last_seen_at = now() WHERE worker = $1 AND river_client_id = $2",
		worker, clientID)
	if err != nil {
		return fmt.Errorf("mark worker %q stopped: %w", worker, err)
	}
	return nil
}

// LastBeat is what cuzk.workers says about a worker's name.
type LastBeat struct {
	RiverClientID string // "" when none was recorded
	Host          string
	PID           int
	LastSeenAt    time.Time
	Age           time.Duration // since LastSeenAt, by the database's clock
	Stopped       bool
	// HeartbeatEvery is the interval the worker declared in its config ("heartbeat");
	// 0 when it declared none.
	HeartbeatEvery time.Duration
}

// LastHeartbeat reads worker's row; ok is false when it has none.
func LastHeartbeat(ctx context.Context, db DB, worker string) (b LastBeat, ok bool, err error) {
	var age float64
	var every string
	err = db.QueryRow(ctx, `
		SELECT coalesce(river_client_id, ''), host, pid, last_seen_at, extract(epoch FROM now() - last_seen_at)::float8,
		       stopped_at IS NOT NULL, coalesce(config->>'heartbeat', '')
		  FROM cuzk.workers WHERE worker = $1`, worker).Scan(&b.RiverClientID, &b.Host, &b.PID, &b.LastSeenAt, &age, &b.Stopped, &every)
	if errors.Is(err, pgx.ErrNoRows) {
		return LastBeat{}, false, nil
	}
	if err != nil {
		return LastBeat{}, false, fmt.Errorf("read the last heartbeat of worker %q: %w", worker, err)
	}
	b.Age = time.Duration(age * float64(time.Second))
	if d, err := time.ParseDuration(every); err == nil && d > 0 {
		b.HeartbeatEvery = d
	}
	return b, true, nil
}

// BudgetFits says whether a live worker other than self advertises a memory budget
// (its config's mem_budget) of at least need bytes: one not stopped, seen within
// liveWithin.
func BudgetFits(ctx context.Context, db DB, self string, need int64, liveWithin time.Duration) (bool, error) {
	var fits bool
	err := db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM cuzk.workers
		                WHERE worker <> $1 AND stopped_at IS NULL
		                  AND last_seen_at > now() - make_interval(secs => $3)
		                  AND jsonb_typeof(config->'mem_budget') = 'number'
		                  AND (config->>'mem_budget')::numeric >= $2)`,
		self, need, liveWithin.Seconds()).Scan(&fits)
	if err != nil {
		return false, fmt.Errorf("look for a live worker with a memory budget of %d bytes: %w", need, err)
	}
	return fits, nil
}

// nameLockClass is the first key of the two-key advisory lock on a worker's name
// (the second is hashtext(name)); the two-key space is apart from the one-key locks
// that migrations use.
const nameLockClass = 0x637a6b // "czk"

// TryNameLock tries, without waiting, the session-level advisory lock on a worker's
// name. conn must be a connection of its own (not a pool): the lock is held for as
// long as that connection lives.
func TryNameLock(ctx context.Context, conn DB, worker string) (bool, error) {
	var held bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, int32(nameLockClass), worker).Scan(&held); err != nil {
		return false, fmt.Errorf("try the name lock of worker %q: %w", worker, err)
	}
	return held, nil
}

// NameLockHolder is a session that holds a worker name's advisory lock.
type NameLockHolder struct {
	PID         int
	Login       string // "" where the server does not say
	Application string
	Client      string // client address; "" for a local socket
	// Worker says whether the holder's login may write cuzk.workers (cuzk_worker, the
	// schema's owner, a superuser). Advisory locks need no privilege: a session of any
	// other login that holds the lock says nothing about a worker's liveness.
	Worker bool
}

// NameLockHolders lists the sessions holding worker's name lock in this database.
func NameLockHolders(ctx context.Context, db DB, worker string) ([]NameLockHolder, error) {
	rows, err := db.Query(ctx, `
		SELECT l.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''),
		       coalesce(has_table_privilege(a.usesysid, 'cuzk.workers', 'UPDATE'), false)
		  FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
		   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		   AND l.classid = $1::oid AND l.objid = hashtext($2)::oid
		 ORDER BY l.pid`, int32(nameLockClass), worker)
	if err != nil {
		return nil, fmt.Errorf("read the holders of worker %q's name lock: %w", worker, err)
	}
	holders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[NameLockHolder])
	if err != nil {
		return nil, fmt.Errorf("read the holders of worker %q's name lock: %w", worker, err)
	}
	return holders, nil
}
