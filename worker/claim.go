package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// item is one request's attempt on its way through the pipeline: whose it is, and
// where its outcome is delivered. What the stages learn of the attempt travels in the
// values they hand each other (claimed, synthesized, proved) and comes back with its
// outcome.
type item struct {
	ctx        context.Context
	job        *river.Job[jobs.ProveArgs]
	req        *store.Request
	queued     chan struct{} // when not nil, closed once the item is in the provers' queue
	synthStart chan struct{} // when not nil, closed once the item's synthesis begins

	out  outcome // set once, before done is closed
	done chan struct{}
}

// attempt is what the stages record of an item's attempt, handed on with it from stage
// to stage: the attempt row (where and when it ran; its phase times come from clock
// when it is recorded), its clock and its part of its batch's memory.
type attempt struct {
	row   store.Attempt
	clock *attemptClock
	mem   memHold
}

// outcome is how an item left the pipeline, what completion gets: its attempt's record
// with its proof, or with the error that ended it.
type outcome struct {
	att    *attempt
	proved *proved
	err    error
}

// claimed is an item with its attempt's record, as the collector and a batch's first
// stage hold it; synthesized and proved carry it on.
type claimed struct {
	it  *item
	att *attempt
}

// fail ends the item's way through the pipeline with err.
func (c *claimed) fail(err error) { c.it.deliver(outcome{att: c.att, err: err}) }

// delivered says whether a stage has delivered the item's outcome already.
func (c *claimed) delivered() bool {
	select {
	case <-c.it.done:
		return true
	default:
		return false
	}
}

func (it *item) deliver(o outcome) {
	it.out = o
	close(it.done)
}

// pending is an item on its way, as a stage holds it.
type pending interface {
	fail(error)
	delivered() bool
}

// failAll fails the items that no stage has delivered yet.
func failAll[T pending](items []T, err error) {
	for _, it := range items {
		if !it.delivered() {
			it.fail(err)
		}
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

// lockedRetry is how long a job whose request row another transaction holds stays
// put back.
const lockedRetry = 10 * time.Second

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
	if need, ok := w.memNeed(job.Args.Circuit); ok && need > w.budget.Room() {
		// Put back before an attempt begins, so that the bounce leaves no attempt row;
		// the attempt fails below with the budget's error when no worker could take it.
		// Other workers advertise whole budgets: count what this one holds anyway.
		held := w.budget.Total() - w.budget.Room()
		if snooze := w.budgetSnooze(ctx, job, need+held, log); snooze != nil {
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
	case store.Locked(err):
		// Another transaction holds the request's row (its submitter's, left open): the
		// job goes back without an attempt, and this slot takes other work meanwhile.
		log.Warn("request locked by another transaction: put back", "err", err, "retry_in", lockedRetry)
		return river.JobSnooze(lockedRetry)
	case err != nil:
		return fmt.Errorf("begin attempt: %w", err)
	}
	log = log.With("attempt", req.Attempt)
	if req.Partitions > 1 {
		return w.workPartitions(ctx, job, req, start, log)
	}

	it := &item{ctx: ctx, job: job, req: req, done: make(chan struct{})}
	w.enqueue(it, &attempt{
		row:   store.Attempt{RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt, QueueMs: &req.QueueMs},
		clock: newAttemptClock(start, jobQueued(job, start)),
	})
	<-it.done // every stage delivers, also when ctx ends
	out := it.out
	defer out.att.mem.release() // its bulk went when its proof was made (or when it failed)
	log = log.With("batch_id", out.att.row.BatchID)
	if out.err != nil {
		return w.fail(ctx, job, out.att, out.err, log)
	}
	return w.persist(ctx, it, out, log)
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

// memNeed is the memory a synthesis of circuit reserves: exact once this process has
// loaded the circuit, else the estimate its setup recorded, which a setup by an older
// build may have overstated.
func (w *Worker) memNeed(circuit string) (int64, bool) {
	if v, ok := w.memExact.Load(circuit); ok {
		return v.(int64), true
	}
	if v, ok := w.memNeeds.Load(circuit); ok {
		return v.(int64), true
	}
	return 0, false
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
