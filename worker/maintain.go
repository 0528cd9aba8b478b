package worker

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// The cluster's upkeep (handing back dead workers' jobs, ending orphaned requests,
// pruning stopped workers, mending the queue) runs once per cluster, on River's elected leader, like
// River's own maintenance. River exposes its leadership only through periodic jobs,
// whose constructors it calls on the leader alone, so the tick is a periodic job that
// inserts nothing: its constructor wakes maintain. A job row per period would do the
// same work on some worker, but every worker would then poll one more queue, costing
// more queries than the upkeep it saves (docs/lab/BENCHMARKS.md), and the rows would mix
// with the proof jobs that operators count.

// stoppedWorkersKept is how long a stopped worker stays in cuzk.workers (for the
// dashboard and for reading attempt rows against it) before it is deleted.
const stoppedWorkersKept = 7 * 24 * time.Hour

// leaderTickMessage is what River logs at Info each time a periodic job's constructor
// returns no job: for the tick, every heartbeat period (see quietTicks).
const leaderTickMessage = "nil returned from periodic job constructor, skipping"

// leaderTick is the periodic job River calls on its leader once a heartbeat period,
// and once as a client becomes leader.
func (w *Worker) leaderTick() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(w.cfg.HeartbeatEvery),
		func() (river.JobArgs, *river.InsertOpts) {
			select { // never blocks: a tick while one is pending is the same tick
			case w.leaderTicks <- struct{}{}:
			default:
			}
			return nil, nil
		}, &river.PeriodicJobOpts{ID: "cuzk_maintain", RunOnStart: true})
}

// maintain runs the cluster's upkeep at each leader tick until ctx ends.
func (w *Worker) maintain(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.leaderTicks:
			w.rescueDead(ctx)
			c, cancel := upkeepStep(ctx)
			if _, err := store.PruneWorkers(c, w.pool, stoppedWorkersKept); err != nil && ctx.Err() == nil {
				w.log.Warn("pruning stopped workers", "err", err)
			}
			cancel()
			w.failOrphaned(ctx)
			w.mendQueue(ctx)
		}
	}
}

// rescueDead hands the running jobs of workers whose heartbeat stopped back to the
// queue (see store.RescueDeadWorkers).
func (w *Worker) rescueDead(ctx context.Context) {
	if w.cfg.DeadAfter <= 0 {
		return
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rescued, err := store.RescueDeadWorkers(c, w.pool, w.cfg.Name, w.cfg.DeadAfter, jobs.Queues())
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("rescuing the jobs of dead workers", "err", err)
		}
		return
	}
	for _, j := range rescued {
		w.log.Warn("job of a dead worker handed back", "job_id", j.JobID, "dead_worker", j.Worker,
			"discarded", j.Discarded, "dead_after", w.cfg.DeadAfter)
	}
}

// failOrphaned ends requests whose job River discarded behind cuzk's back (the rescuer,
// when a dead worker's job has no attempts left), so that none stays 'running' forever.
func (w *Worker) failOrphaned(ctx context.Context) {
	c, cancel := upkeepStep(ctx)
	defer cancel()
	n, err := store.FailOrphaned(c, w.pool)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("ending orphaned requests", "err", err)
	case n > 0:
		w.log.Warn("requests failed: their worker stopped during their last attempt", "requests", n)
	}
}

// upkeepStep bounds one of the upkeep's statements: one that cannot finish is tried
// again at the next tick, and the others still run.
func upkeepStep(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}

// scrubBatch bounds the requests one upkeep tick scrubs, so a first run over a long
// history stays a short transaction; the next ticks take the rest.
const scrubBatch = 10000

// mendQueue repairs requests whose River job was changed outside cuzk, admits waiting
// requests an admission missed, and scrubs the inputs of requests that ended (failed
// or cancelled) longer ago than cuzk.settings ended_inputs_kept.
func (w *Worker) mendQueue(ctx context.Context) {
	c, cancel := upkeepStep(ctx)
	repaired, err := store.RepairJobs(c, w.pool)
	cancel()
	if err != nil && ctx.Err() == nil {
		w.log.Warn("repairing requests whose River job was changed outside cuzk", "err", err)
	}
	for _, r := range repaired {
		if r.Action == "moved" {
			w.log.Info("River job moved to the queue of its request's priority", "request_id", r.RequestID, "job_id", r.JobID)
			continue
		}
		w.log.Warn("River job changed outside cuzk: request "+r.Action, "request_id", r.RequestID, "job_id", r.JobID)
	}
	c, cancel = upkeepStep(ctx)
	if _, err := store.AdmitWaiting(c, w.pool); err != nil && ctx.Err() == nil {
		w.log.Warn("admitting waiting requests", "err", err)
	}
	cancel()
	c, cancel = upkeepStep(ctx)
	n, err := store.ScrubEndedInputs(c, w.pool, scrubBatch)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("scrubbing the inputs of ended requests", "err", err)
	case n > 0:
		w.log.Info("inputs of failed and cancelled requests scrubbed", "requests", n)
	}
}

// quietTicks drops River's Info line about the tick inserting no job, which would
// otherwise fill the leader's log once a heartbeat period.
type quietTicks struct{ slog.Handler }

func (h quietTicks) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && strings.HasSuffix(r.Message, leaderTickMessage) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietTicks) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietTicks{h.Handler.WithAttrs(attrs)}
}

func (h quietTicks) WithGroup(name string) slog.Handler { return quietTicks{h.Handler.WithGroup(name)} }
