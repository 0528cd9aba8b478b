package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// workPartitions runs an attempt of a request of several partitions: each partition
// without a stored proof goes through the pipeline as a request of its own, in order,
// and its verified proof is stored as soon as it is made, so that neither a failure
// nor a dead worker costs a finished partition. The attempt's phase times are the
// sums over its partitions; its total spans the attempt. When the last partition is
// stored the request's proofs row is written and the job completed.
//
// Partitions run one at a time: each holds its own memory reservation, released when
// its proof is stored. Overlapping one partition's synthesis with the previous one's
// prove belongs to a slotted pipeline that reserves for both.
func (w *Worker) workPartitions(ctx context.Context, job *river.Job[jobs.ProveArgs], req *store.Request, start time.Time, log *slog.Logger) error {
	all := &item{ctx: ctx, job: job, req: req, start: start, done: make(chan struct{})}
	all.att = store.Attempt{RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt, QueueMs: &req.QueueMs}
	failed := func(err error) error {
		all.err = err
		return w.fail(ctx, all, log)
	}
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
	for i, in := range inputs {
		if done[i] {
			continue
		}
		if err := context.Cause(ctx); err != nil {
			return failed(err)
		}
		if err := w.provePartition(ctx, all, i, in, log); err != nil {
			return failed(fmt.Errorf("partition %d of %d: %w", i, req.Partitions, err))
		}
	}

	t := time.Now()
	err = w.retryDB(ctx, log, "store proof", func(ctx context.Context) error {
		return store.CompleteAttempt(ctx, w.pool, job, &store.Proof{
			RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt, Worker: w.cfg.Name,
			Backend: all.att.Backend, Partitions: req.Partitions,
		}, w.cfg.ScrubInputs, &all.att, func(a *store.Attempt) {
			persisted, _ := all.times.Get(phase.Persist)
			all.times.Set(phase.Persist, persisted+time.Since(t))
			a.FinishedAt = time.Now()
			all.times.Set(phase.Total, w.total(all))
			a.SetPhases(all.times.Phases())
		})
	})
	if err != nil {
		return failed(fmt.Errorf("store proof: %w", err))
	}
	w.observe(&all.att)
	log.Info("proof stored", "outcome", all.att.Outcome, "partitions", req.Partitions, "total_ms", deref(all.att.TotalMs),
		"synth_ms", deref(all.att.SynthMs), "prove_ms", deref(all.att.ProveMs), "backend", all.att.Backend)
	return nil
}

// provePartition takes partition i of all's request through the pipeline, stores its
// verified proof with its row of the attempt, and adds its phase times to all's. A
// partition that fails has its row recorded too.
func (w *Worker) provePartition(ctx context.Context, all *item, i int, inputs []byte, log *slog.Logger) error {
	req := *all.req
	req.Inputs, req.Witness, req.Partitions = inputs, nil, 1
	it := &item{ctx: ctx, job: all.job, req: &req, start: time.Now(), done: make(chan struct{})}
	it.att = store.Attempt{RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt}
	w.collector.add(it)
	<-it.done // every stage delivers, also when ctx ends
	if it.res != nil {
		defer it.res.Release()
	}
	row := &store.PartitionAttempt{RequestID: req.RequestID, Attempt: req.Attempt, Partition: i, StartedAt: it.start}
	var proofBytes []byte
	err := it.err
	if err == nil {
		proofBytes, err = checkProof(it)
	}
	if err == nil {
		t := time.Now()
		err = w.retryDB(ctx, log, "store partition proof", func(ctx context.Context) error {
			return store.StorePartition(ctx, w.pool, &store.Proof{
				RequestID: req.RequestID, Circuit: req.Circuit, Proof: proofBytes, PublicWitness: it.public,
				Attempt: req.Attempt, Worker: w.cfg.Name, Backend: it.att.Backend, VKDigest: it.key.VKDigest,
			}, i, row, func(a *store.PartitionAttempt) {
				it.times.Set(phase.Persist, time.Since(t))
				a.Outcome, a.FinishedAt = "succeeded", time.Now()
				it.times.Set(phase.Total, a.FinishedAt.Sub(it.start))
				a.Phases = it.times.Phases()
			})
		})
		if err != nil {
			err = fmt.Errorf("store proof: %w", err)
		}
	}
	all.absorb(it)
	if err != nil {
		row.Outcome, row.Error, row.FinishedAt = "failed", err.Error(), time.Now()
		it.times.Set(phase.Total, row.FinishedAt.Sub(it.start))
		row.Phases = it.times.Phases()
		dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if dbErr := w.retryDB(dbCtx, log, "record failed partition", func(ctx context.Context) error {
			return store.RecordPartition(ctx, w.pool, row)
		}); dbErr != nil {
			log.Error("recording failed partition", "partition", i, "err", cappedError{dbErr})
		}
		return err
	}
	log.Debug("partition stored", "partition", i)
	return nil
}

// absorb adds a partition's phase times (all but its total) to the attempt's, and
// takes the attempt's record of where it ran from the partition's.
func (all *item) absorb(it *item) {
	for name, d := range it.times.Phases() {
		if name == phase.Total {
			continue
		}
		sum, _ := all.times.Get(name)
		all.times.Set(name, sum+d)
	}
	a, p := &all.att, &it.att
	if p.Backend != "" {
		a.Backend, a.Device, a.Telemetry = p.Backend, p.Device, p.Telemetry
	}
	if p.BatchID != [16]byte{} {
		a.BatchID, a.BatchSize = p.BatchID, p.BatchSize
	}
	a.MemReservedBytes = max(a.MemReservedBytes, p.MemReservedBytes)
	if a.SynthStartedAt.IsZero() {
		a.SynthStartedAt = p.SynthStartedAt
	}
	if a.ProveStartedAt.IsZero() {
		a.ProveStartedAt = p.ProveStartedAt
	}
}
