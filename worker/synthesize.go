package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/consensys/gnark/constraint/solver"
	"github.com/google/uuid"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/synth"
)

// synthesized is a request solved by its batch's synthesis, what the batch hands the
// provers: the attempt's record (clock, memory hold) with its solution, when the
// solution was done and how long the batch then waited for its key.
type synthesized struct {
	*claimed
	sol      *synth.Solution
	compiled *synth.Compiled // what sol solves; its Check tells a proof that fails verification
	synthEnd time.Time
	keyWait  time.Duration // after synthesis, for the key to be read (Catalog.Prepare)
}

// solvedBatch is a batch's solved requests, queued for the provers with the key the
// batch prepared: the prover makes it resident from there, without fetching it again.
type solvedBatch struct {
	id      uuid.UUID
	circuit string
	key     *PreparedKey
	reqs    []*synthesized
}

// startBatch runs a flushed batch through memory reservation and synthesis, while its
// circuit's proving key is read into memory, then hands the solved part to the provers
// through the bounded channel. The key is read here rather than by the prover, so a
// batch whose key is still loading waits for that load without holding a device that
// a batch of another circuit, whose key is resident, could use.
func (w *Worker) startBatch(b *batch) {
	b.mem = newBatchMemory(w.budget, len(b.reqs))
	for i, r := range b.reqs {
		r.att.mem = b.mem.hold(i)
	}
	go func() {
		ctxs := make([]context.Context, len(b.reqs))
		for i, r := range b.reqs {
			ctxs[i] = r.it.ctx
		}
		keyCtx, stopKey := allDone(ctxs)
		defer stopKey()
		urgent := slices.ContainsFunc(b.reqs, func(r *claimed) bool { return r.it.urgent() })
		// The key's host copy gets its memory before the syntheses get theirs: its read
		// must not wait for memory that requests waiting for the key hold.
		var keyMemWait time.Duration
		if r, ok := w.catalog.(interface {
			reserveHost(context.Context, string) error
		}); ok {
			t := time.Now()
			// A shutdown hands the batch back while it waits here, as before synthesis.
			waitCtx, stopWait := context.WithCancelCause(keyCtx)
			if urgent {
				waitCtx = context.WithValue(waitCtx, urgentRequest{}, true) // ahead of requests not urgent
			}
			stopDrain := context.AfterFunc(w.drainCtx, func() { stopWait(errHandBack) })
			err := r.reserveHost(waitCtx, b.circuit)
			stopDrain()
			if errors.Is(context.Cause(waitCtx), errHandBack) {
				err = errHandBack
			}
			stopWait(nil)
			keyMemWait = time.Since(t)
			if err != nil {
				for _, r := range b.reqs {
					r.att.clock.record(phase.MemWait, keyMemWait)
					r.fail(fmt.Errorf("load proving key of %q: %w", b.circuit, err))
				}
				return
			}
		}
		type prepared struct {
			key    *PreparedKey
			loaded bool      // the key was not in memory: read or waited for
			at     time.Time // when it was
			err    error
		}
		keyDone := make(chan prepared, 1)
		go func() {
			var p prepared
			// A panic reading a key fails the batch's attempts, not the process.
			p.err = w.safely("prepare proving key", func() (err error) {
				var waited time.Duration
				p.key, waited, err = w.catalog.Prepare(keyCtx, b.circuit)
				p.loaded = waited > 0
				return err
			})
			p.at = time.Now()
			keyDone <- p
		}()

		solved := make([]*synthesized, len(b.reqs))
		var wg sync.WaitGroup
		for i, r := range b.reqs {
			r.att.row.BatchID = b.id
			r.att.row.BatchSize = len(b.reqs)
			wg.Go(func() {
				err := w.safely("synthesize", func() (err error) {
					solved[i], err = w.synthesize(r, keyMemWait)
					return err
				})
				if err != nil {
					solved[i] = nil
					r.fail(err)
				}
			})
		}
		wg.Wait()
		solved = slices.DeleteFunc(solved, func(s *synthesized) bool { return s == nil })
		if len(solved) == 0 {
			return
		}
		// The srs phase is what the batch waited for its key once synthesized.
		solvedAt := time.Now()
		k := <-keyDone
		err, wait := k.err, time.Duration(0)
		if k.loaded && k.at.After(solvedAt) {
			wait = k.at.Sub(solvedAt)
		}
		for _, s := range solved {
			s.keyWait = wait
			if err != nil {
				s.att.clock.record(phase.SRS, wait)
				s.fail(fmt.Errorf("load proving key of %q: %w", b.circuit, err))
			}
		}
		if err != nil {
			return
		}
		ch := w.proveCh
		if slices.ContainsFunc(solved, func(s *synthesized) bool { return s.it.urgent() }) {
			ch = w.urgentCh // ahead of the batches already waiting
		}
		ch <- &solvedBatch{id: b.id, circuit: b.circuit, key: k.key, reqs: solved} // blocks when the provers are behind: backpressure
		for _, s := range solved {
			if s.it.queued != nil {
				close(s.it.queued)
			}
		}
	}()
}

// LargeSolveConstraints is the size from which a circuit the block solver splits
// counts against Config.LargeSolves: at 2^25 and 2^26 constraints one solve on all
// 16 cores of the GPU host outran several at once (docs/performance.md).
const LargeSolveConstraints = 1 << 25

func largeSolve(c *synth.Compiled) bool {
	return c.SolvesInBlocks() && c.NbConstraints() >= LargeSolveConstraints
}

// synthSlots waits for a synthesis slot (--synth-concurrency; an urgent request's
// own), and first, for a large solve, for one of Config.LargeSolves, so that a large
// solve waiting holds no slot another could use. ok is false when ctx ended first.
func (w *Worker) synthSlots(ctx context.Context, urgent, large bool) (release func(), ok bool) {
	sem := w.synthSem
	if urgent {
		sem = w.urgentSynth
	}
	var big chan struct{}
	if large && !urgent {
		big = w.largeSynth // nil: no bound of its own
	}
	if big != nil {
		select {
		case big <- struct{}{}:
		case <-ctx.Done():
			return nil, false
		}
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		if big != nil {
			<-big
		}
		return nil, false
	}
	return func() {
		<-sem
		if big != nil {
			<-big
		}
	}, true
}

// synthesize reserves r's memory, its part of the batch's, and solves its request;
// keyMemWait is what the batch waited for the memory of its key's host copy, which
// the request's mem_wait phase counts.
func (w *Worker) synthesize(r *claimed, keyMemWait time.Duration) (*synthesized, error) {
	it, att := r.it, r.att
	ctx := it.ctx
	if it.urgent() {
		ctx = context.WithValue(ctx, urgentRequest{}, true) // its circuit and key go first too
	}
	compiled, release, err := w.catalog.Circuit(ctx, it.req.Circuit)
	var tooLarge *TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		att.clock.record(phase.MemWait, 0) // it never waits for memory
		return nil, err                    // it says what the request needs
	case err != nil:
		return nil, fmt.Errorf("load circuit %q: %w", it.req.Circuit, err)
	}
	defer release() // the solution is all that is needed of the circuit after Solve

	// Until synthesis starts the request holds only its claim: a shutdown hands it
	// back at once (errHandBack) rather than keep the worker past its grace period.
	waitCtx, stopWait := context.WithCancelCause(ctx)
	defer stopWait(nil)
	defer context.AfterFunc(w.drainCtx, func() { stopWait(errHandBack) })()
	if w.drainCtx.Err() != nil {
		return nil, errHandBack
	}

	need := synth.EstimateBytes(compiled)
	w.memExact.Store(it.req.Circuit, need)
	t := time.Now()
	err = att.mem.take(waitCtx, need)
	if err != nil {
		att.clock.record(phase.MemWait, keyMemWait+time.Since(t))
		if errors.Is(context.Cause(waitCtx), errHandBack) {
			return nil, errHandBack
		}
		return nil, fmt.Errorf("reserve %d bytes: %w", need, err)
	}
	att.row.MemReservedBytes = need

	// The mem_wait phase ends when the solve starts: its memory, then a synthesis slot
	// (--synth-concurrency; a large block-split circuit's within --large-solves).
	// Urgent requests have slots of their own, so an urgent solve never waits for
	// another request's to end; it goes first in line for the cores (synth.Cores).
	freeSlot, ok := w.synthSlots(waitCtx, it.urgent(), largeSolve(compiled))
	att.clock.record(phase.MemWait, keyMemWait+time.Since(t))
	if !ok {
		return nil, context.Cause(waitCtx)
	}
	defer freeSlot()
	if w.drainCtx.Err() != nil {
		return nil, errHandBack
	}
	att.row.SynthStartedAt = time.Now()
	if it.synthStart != nil {
		close(it.synthStart)
	}
	if it.req.Inputs == nil && len(it.req.Witness) == 0 {
		// An empty payload reads as empty inputs JSON to synth; this one is a witness.
		return nil, fmt.Errorf("synthesize: %w", &synth.InputError{Msg: "witness is empty"})
	}
	// The solves take the cores in line (synth.Cores): the first solution, which the
	// device waits for, comes as fast as one solve alone makes it, and an urgent solve
	// takes the cores from the others between their blocks. gnark's solver, for
	// circuits without a block split, runs on its share of the cores: one solve keeps
	// many of them waiting at its level barriers.
	sol, err := func() (*synth.Solution, error) {
		solves := int(w.solving.Add(1))
		defer w.solving.Add(-1) // also when the solver panics
		ctx := synth.WithTurn(it.ctx, w.cores.Turn(it.urgent()))
		return synth.Solve(ctx, compiled, it.req.Payload(),
			solver.WithNbTasks(synth.Tasks(runtime.GOMAXPROCS(0), solves)))
	}()
	done := time.Now()
	att.clock.record(phase.Synth, done.Sub(att.row.SynthStartedAt))
	if err != nil {
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	return &synthesized{claimed: r, sol: sol, compiled: compiled, synthEnd: done}, nil
}
