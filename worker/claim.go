package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// item is one request's attempt on its way through the pipeline.
type item struct {
	ctx   context.Context
	job   *river.Job[jobs.ProveArgs]
	req   *store.Request
	start time.Time
	att   store.Attempt // the attempt row; its phase times come from clock when it is recorded
	clock *attemptClock

	collectedAt time.Time
	res         *Reservation
	sol         *synth.Solution
	queued      chan struct{} // when not nil, closed once the item is in the provers' queue
	synthStart  chan struct{} // when not nil, closed once the item's synthesis begins
	synthDone   time.Time
	keyWait     time.Duration // after synthesis, for the key to be read (Catalog.Prepare)
	keyMemWait  time.Duration // before synthesis, for the memory of the key's host copy
	key         *ResidentKey
	proof       *groth16bls.Proof
	public      []byte

	err  error
	done chan struct{}
}

func (it *item) finish(err error) {
	it.err = err
	close(it.done)
}

// drop ends the item's way through the pipeline with err, letting its solution (the
// bulk of its memory) go at once.
func (it *item) drop(err error) {
	it.sol = nil
	it.finish(err)
}

// dropAll drops the items that no stage has delivered yet.
func dropAll(items []*item, err error) {
	for _, it := range items {
		if !it.finished() {
			it.drop(err)
		}
	}
}

// finished says whether a stage has delivered the item already.
func (it *item) finished() bool {
	select {
	case <-it.done:
		return true
	default:
		return false
	}
}

type proveWorker struct {
	river.WorkerDefaults[jobs.ProveArgs]
	w *Worker
}

// Timeout is the circuit's size-based limit, capped at --rescue-after: River's rescuer
// leaves a stuck job alone until its timeout has passed too, so an uncapped timeout
// (at least 10 minutes) would delay rescuing a dead worker's jobs past --rescue-after.
func (p *proveWorker) Timeout(job *river.Job[jobs.ProveArgs]) time.Duration {
	d := jobs.Timeout(1 << 27) // unknown size: assume a large circuit
	if t, ok := p.w.timeout(job.Args.Circuit); ok {
		d = t
	}
	return min(d, p.w.cfg.RescueAfter)
}

func (p *proveWorker) Work(ctx context.Context, job *river.Job[jobs.ProveArgs]) error {
	return p.w.work(ctx, job)
}

func (w *Worker) work(ctx context.Context, job *river.Job[jobs.ProveArgs]) error {
	start := time.Now()
	log := w.log.With("request_id", job.Args.RequestID, "circuit", job.Args.Circuit, "job_id", job.ID)
	queuedAt := job.ScheduledAt
	if job.CreatedAt.After(queuedAt) {
		queuedAt = job.CreatedAt
	}
	if t, ok := waitedSince(job.JobRow); ok && t.Before(queuedAt) {
		queuedAt = t
	}
	if need, ok := w.memNeeds.Load(job.Args.Circuit); ok && need.(int64) > w.budget.Room() {
		// Put back before an attempt begins, so that the bounce leaves no attempt row;
		// the attempt fails below with the budget's error when no worker could take it.
		// Other workers advertise whole budgets: count what this one holds anyway.
		held := w.budget.Total() - w.budget.Room()
		if snooze := w.budgetSnooze(ctx, job, need.(int64)+held, log); snooze != nil {
			return snooze
		}
	}
	// A database that is restarting costs a moment, not one of the request's attempts.
	var req *store.Request
	err := w.retryDB(ctx, log, "begin attempt", func(ctx context.Context) (err error) {
		req, err = store.BeginAttempt(ctx, w.pool, job.Args.RequestID, job.ID, w.origin, queuedAt)
		return err
	})
	var nr *store.NotRunnableError
	switch {
	case errors.As(err, &nr):
		log.Info("job skipped", "reason", err)
		return nil // nothing to do: completing the job is right
	case errors.Is(err, store.ErrUnknownRequest):
		return river.JobCancel(err)
	case err != nil:
		return fmt.Errorf("begin attempt: %w", err)
	}
	log = log.With("attempt", req.Attempt)
	if req.Partitions > 1 {
		return w.workPartitions(ctx, job, req, start, log)
	}

	it := &item{ctx: ctx, job: job, req: req, start: start, clock: newAttemptClock(start, jobQueued(job, start)), done: make(chan struct{})}
	it.att = store.Attempt{RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt, QueueMs: &req.QueueMs}
	w.enqueue(it)
	<-it.done // every stage delivers, also when ctx ends
	if it.res != nil {
		defer it.res.Release()
	}
	log = log.With("batch_id", it.att.BatchID)
	if it.err != nil {
		return w.fail(ctx, it, log)
	}
	return w.persist(ctx, it, log)
}

// jobQueued is the time before start that an attempt's total counts: since its job
// was scheduled, or created when that was later.
func jobQueued(job *river.Job[jobs.ProveArgs], start time.Time) time.Duration {
	if job.CreatedAt.After(job.ScheduledAt) {
		return start.Sub(job.CreatedAt)
	}
	return start.Sub(job.ScheduledAt)
}

// waitedSince is when the request of a job that cuzk.admit_locked created after the
// request waited for its submitter's turn started waiting (metadata queued_at), for
// the job's first run, so that the queue phase counts the wait. A job rescheduled
// since (a retry, a hand-back) is scheduled later than it was created, and its queue
// phase starts then.
func waitedSince(j *rivertype.JobRow) (time.Time, bool) {
	if !j.ScheduledAt.Equal(j.CreatedAt) {
		return time.Time{}, false
	}
	var m struct {
		QueuedAt time.Time `json:"queued_at"`
	}
	if err := json.Unmarshal(j.Metadata, &m); err != nil || m.QueuedAt.IsZero() {
		return time.Time{}, false
	}
	return m.QueuedAt, true
}

// timeout is circuit's job timeout from the cached sizes. The cache is read when a job
// needs it, not on a timer, so an idle worker costs no queries: a circuit set up since
// the last read is looked up at once, and a cache older than a heartbeat period is
// refreshed in the background (a circuit set up again with another size).
func (w *Worker) timeout(circuit string) (time.Duration, bool) {
	v, ok := w.timeouts.Load(circuit)
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.loadTimeouts(ctx)
		if v, ok = w.timeouts.Load(circuit); !ok {
			return 0, false
		}
	} else if time.Since(time.Unix(0, w.timeoutsAt.Load())) > w.cfg.HeartbeatEvery && w.timeoutsLoading.CompareAndSwap(false, true) {
		go func() {
			defer w.timeoutsLoading.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			w.loadTimeouts(ctx)
		}()
	}
	return v.(time.Duration), true
}

// loadTimeouts caches each registered circuit's job timeout (proveWorker.Timeout has
// no context to query with) and the memory its synthesis reserves (memNeed).
func (w *Worker) loadTimeouts(ctx context.Context) {
	sizes, err := store.CircuitSizes(ctx, w.pool)
	if err != nil {
		w.log.Warn("loading circuit sizes for job timeouts", "err", err)
	}
	for name, n := range sizes {
		w.timeouts.Store(name, jobs.Timeout(n.Constraints))
		w.memNeeds.Store(name, n.MemEstimateBytes)
	}
	if err == nil {
		w.timeoutsAt.Store(time.Now().UnixNano())
	}
}
