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

	"github.com/cuzk/cuzk/sql/queries"
)

// RescuedJob is a running job handed back because its worker stopped heartbeating.
type RescuedJob struct {
	JobID     int64
	Worker    string
	Discarded bool // it had no attempt left
}

// RescueDeadWorkers marks workers other than self whose heartbeat is older than
// deadAfter as stopped and hands their running jobs in queues back: available again at
// once when attempts remain (the dead attempt counts, as with River's own rescuer),
// discarded otherwise. River's rescuer would do the same, but only after the job's
// rescue-after, which must be longer than the longest proof; a heartbeat tells a dead
// worker from a slow one much sooner. If the worker was alive after all (a network
// partition), its late completion finds the job no longer running, and the one-proof
// rules keep a second proof out.
func RescueDeadWorkers(ctx context.Context, db DB, self string, deadAfter time.Duration, queues []string) ([]RescuedJob, error) {
	return handBack(ctx, db, "rescue the jobs of dead workers", queries.SQL("RescueDeadWorkers"), self, deadAfter.Seconds(), queues)
}

// HandBackClientJobs hands the running jobs in queues last claimed under River client
// clientID back, as RescueDeadWorkers does, with reason in each job's errors: for a
// worker restarted under its name, whose previous process is known to be gone.
func HandBackClientJobs(ctx context.Context, db DB, clientID string, queues []string, reason string) ([]RescuedJob, error) {
	return handBack(ctx, db, "hand back the jobs of the previous process", queries.SQL("ClientRunningJobs"), clientID, reason, queues)
}

// handBack runs the query (RescueDeadWorkers or ClientRunningJobs: the running jobs
// of the clients it names, locked until the hand-back commits) and hands the jobs it returns back
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
	tag, err := db.Exec(ctx, queries.SQL("PruneWorkers"), keep.Seconds())
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
	err = db.QueryRow(ctx, queries.SQL("Heartbeat"),
		b.Worker, b.Host, b.PID, b.Backend, b.Devices, b.Config, nullString(b.RiverClientID)).Scan(&prevClientID)
	if err != nil {
		return nil, fmt.Errorf("heartbeat of worker %q: %w", b.Worker, err)
	}
	return prevClientID, nil
}

// MarkWorkerStopped marks worker's row stopped, only while it is River client
// clientID's: a live namesake's row stays live.
func MarkWorkerStopped(ctx context.Context, db DB, worker, clientID string) error {
	_, err := db.Exec(ctx, queries.SQL("MarkWorkerStopped"), worker, clientID)
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
	err = db.QueryRow(ctx, queries.SQL("LastHeartbeat"), worker).Scan(&b.RiverClientID, &b.Host, &b.PID, &b.LastSeenAt, &age, &b.Stopped, &every)
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
	err := db.QueryRow(ctx, queries.SQL("BudgetFits"),
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
	if err := conn.QueryRow(ctx, queries.SQL("TryNameLock"), int32(nameLockClass), worker).Scan(&held); err != nil {
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
	rows, err := db.Query(ctx, queries.SQL("NameLockHolders"), int32(nameLockClass), worker)
	if err != nil {
		return nil, fmt.Errorf("read the holders of worker %q's name lock: %w", worker, err)
	}
	holders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[NameLockHolder])
	if err != nil {
		return nil, fmt.Errorf("read the holders of worker %q's name lock: %w", worker, err)
	}
	return holders, nil
}
