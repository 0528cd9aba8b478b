package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// workPartitions runs an attempt of a request of several partitions: each partition
// without a stored proof goes through the pipeline as a request of its own, and its
// verified proof is stored as soon as it is made, so that neither a failure nor a dead
// worker costs a finished partition. The attempt's phase times are the sums over its
// recorded partitions; its total spans the attempt. When the last partition is stored
// the request's proofs row is written and the job completed.
//
// Partitions stream through the pipeline: partition i+1 enters it once partition i has
// its memory reserved and its synthesis under way, so reservations are taken in order
// and as many partitions are solved at once as the synthesis concurrency and the
// budget allow (one solve alone uses many cores poorly) while those solved are proven.
// Each reservation is released in two steps as for any request: its bulk once its
// proof is made, the rest once that proof is stored. Each partition's proof is stored
// as soon as it is verified, in whatever order the partitions finish, so that a dead
// worker or a cancel loses none that was made. After a partition fails no further
// partition starts; those already started finish, and those of them that succeed are
// stored.
// While an urgent request is on its way to a prover, no further partition of a request
// that is not urgent starts (urgent.go).
func (w *Worker) workPartitions(ctx context.Context, job *river.Job[jobs.ProveArgs], req *store.Request, start time.Time, log *slog.Logger) error {
	all := &attempt{
		row:   store.Attempt{RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt, QueueMs: &req.QueueMs},
		clock: newAttemptClock(start, jobQueued(job, start)),
	}
	failed := func(err error) error { return w.fail(ctx, job, all, err, log) }
	inputs, err := store.PartitionInputs(req.Inputs, req.Partitions)
	if err != nil {
		return failed(&synth.InputError{Msg: err.Error()})
	}
	var done map[int]bool
	err = w.retryDB(ctx, log, "read proven partitions", func(ctx context.Context) (err error) {
		done, err = store.DonePartitions(ctx, w.pool, req.RequestID)
		return err
	})
	if err != nil {
		return failed(err)
	}

	var (
		mu       sync.Mutex // all's phase times and attempt record
		wg       sync.WaitGroup
		stopping atomic.Bool // a partition failed: start no more
		runs     = make([]partitionRun, len(inputs))
		endErr   error
	)
	for i, in := range inputs {
		if done[i] {
			continue
		}
		if err := context.Cause(ctx); err != nil {
			endErr = err
			break
		}
		if stopping.Load() {
			break
		}
		if !isUrgent(req) {
			// Partition boundaries are where an urgent request overtakes a long one.
			if err := w.urgent.wait(ctx); err != nil {
				endErr = err
				break
			}
		}
		it := w.startPartition(ctx, job, req, in)
		wg.Go(func() {
			r := w.finishPartition(ctx, i, it, log)
			if r.err != nil {
				stopping.Store(true)
			} else {
				mu.Lock()
				absorb(all, r)
				mu.Unlock()
			}
			runs[i] = r
		})
		// The next partition starts once this one's synthesis has begun (or it failed).
		select {
		case <-it.synthStart:
		case <-it.done:
			if it.out.err != nil {
				stopping.Store(true)
			}
		}
	}
	wg.Wait()
	for i, r := range runs {
		if r.err == nil {
			continue
		}
		// The earliest failure is the attempt's; later partitions that failed meanwhile
		// (mostly because the attempt is ending) leave no row, and a retry proves them.
		absorb(all, r)
		w.recordFailedPartition(ctx, r.row, log)
		return failed(fmt.Errorf("partition %d of %d: %w", i, req.Partitions, r.err))
	}
	if endErr != nil {
		return failed(endErr)
	}

	t := time.Now()
	err = w.retryDB(ctx, log, "store proof", func(ctx context.Context) error {
		return store.CompleteAttempt(ctx, w.pool, job, &store.Proof{
			RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt, Worker: w.cfg.Name,
			Backend: all.row.Backend, Partitions: req.Partitions,
		}, w.cfg.ScrubInputs, &all.row, func(a *store.Attempt) {
			a.FinishedAt = time.Now()
			a.SetPhases(all.clock.phases(a.FinishedAt, phaseTime{phase.Persist, time.Since(t)}))
		})
	})
	if err != nil {
		return failed(fmt.Errorf("store proof: %w", err))
	}
	w.observe(&all.row)
	log.Info("proof stored", "outcome", all.row.Outcome, "partitions", req.Partitions, "total_ms", deref(all.row.TotalMs),
		"synth_ms", deref(all.row.SynthMs), "prove_ms", deref(all.row.ProveMs), "backend", all.row.Backend)
	return nil
}

// partitionRun is how one partition of an attempt ended: err is nil when its proof is
// stored; else row is its failed row, not yet recorded. Phases are the partition's
// phase times, as in its row.
type partitionRun struct {
	att    *attempt
	row    *store.PartitionAttempt
	phases map[string]time.Duration
	err    error
}

// startPartition hands a partition of job's request all, with its inputs, to the
// pipeline as a request of its own; its synthStart channel is closed once its
// synthesis begins, its queued channel once it is synthesized and in the provers' queue.
func (w *Worker) startPartition(ctx context.Context, job *river.Job[jobs.ProveArgs], all *store.Request, inputs []byte) *item {
	req := *all
	req.Inputs, req.Witness, req.Partitions = inputs, nil, 1
	it := &item{ctx: ctx, job: job, req: &req, done: make(chan struct{}),
		queued: make(chan struct{}), synthStart: make(chan struct{})}
	w.enqueue(it, &attempt{
		row:   store.Attempt{RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt},
		clock: newAttemptClock(time.Now(), 0),
	})
	return it
}

// finishPartition waits for partition i (it) to come out of the pipeline, verifies its
// proof and stores it with its row of the attempt.
func (w *Worker) finishPartition(ctx context.Context, i int, it *item, log *slog.Logger) partitionRun {
	<-it.done // every stage delivers, also when ctx ends
	out, req := it.out, it.req
	att := out.att
	defer att.mem.release() // its bulk went when its proof was made (or when it failed)
	row := &store.PartitionAttempt{RequestID: req.RequestID, Attempt: req.Attempt, Partition: i, StartedAt: att.clock.begun,
		SynthStartedAt: att.row.SynthStartedAt, ProveStartedAt: att.row.ProveStartedAt}
	var proofBytes []byte
	err := out.err
	if err == nil {
		// Off River's goroutine, a panic is recovered here: it fails the partition, not
		// the worker.
		err = w.safely("verify partition proof", func() (err error) {
			proofBytes, err = w.checkProof(ctx, att, out.proved)
			return err
		})
	}
	var persisted []phaseTime // the last write's, which a failed partition's row keeps
	if err == nil {
		t := time.Now()
		err = w.retryDB(ctx, log, "store partition proof", func(ctx context.Context) error {
			return store.StorePartition(ctx, w.pool, &store.Proof{
				RequestID: req.RequestID, Circuit: req.Circuit, Proof: proofBytes, PublicWitness: out.proved.public,
				Attempt: req.Attempt, Worker: w.cfg.Name, Backend: att.row.Backend, VKDigest: out.proved.vkDigest,
			}, i, row, func(a *store.PartitionAttempt) {
				persisted = []phaseTime{{phase.Persist, time.Since(t)}}
				a.Outcome, a.FinishedAt = "succeeded", time.Now()
				a.Phases = att.clock.phases(a.FinishedAt, persisted...)
			})
		})
		if err != nil {
			err = fmt.Errorf("store proof: %w", err)
		}
	}
	if err != nil {
		row.Outcome, row.Error, row.FinishedAt = "failed", err.Error(), time.Now()
		row.Phases = att.clock.phases(row.FinishedAt, persisted...)
		return partitionRun{att: att, row: row, phases: row.Phases, err: err}
	}
	log.Debug("partition stored", "partition", i)
	return partitionRun{att: att, phases: row.Phases}
}

// recordFailedPartition inserts a failed partition's row, also when the attempt's
// context has ended (a cancel, a time limit).
func (w *Worker) recordFailedPartition(ctx context.Context, row *store.PartitionAttempt, log *slog.Logger) {
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := w.retryDB(dbCtx, log, "record failed partition", func(ctx context.Context) error {
		return store.RecordPartition(ctx, w.pool, row)
	}); err != nil {
		log.Error("recording failed partition", "partition", row.Partition, "err", cappedError{err})
	}
}

// absorb adds a partition's phase times (all but its total) to the attempt's, and
// takes the attempt's record of where it ran from the partition's.
func absorb(all *attempt, r partitionRun) {
	all.clock.absorb(r.phases)
	a, p := &all.row, &r.att.row
	if p.Backend != "" {
		a.Backend, a.Device, a.Telemetry = p.Backend, p.Device, p.Telemetry
	}
	if p.BatchID != [16]byte{} {
		a.BatchID, a.BatchSize = p.BatchID, p.BatchSize
	}
	a.MemReservedBytes = max(a.MemReservedBytes, p.MemReservedBytes)
	// Partitions finish in any order: the attempt's phases began with its earliest.
	if a.SynthStartedAt.IsZero() || (!p.SynthStartedAt.IsZero() && p.SynthStartedAt.Before(a.SynthStartedAt)) {
		a.SynthStartedAt = p.SynthStartedAt
	}
	if a.ProveStartedAt.IsZero() || (!p.ProveStartedAt.IsZero() && p.ProveStartedAt.Before(a.ProveStartedAt)) {
		a.ProveStartedAt = p.ProveStartedAt
	}
}
