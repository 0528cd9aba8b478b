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

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/synth"
)

// startBatch runs a flushed batch through memory reservation and synthesis, while its
// circuit's proving key is read into memory, then hands the solved part to the provers
// through the bounded channel. The key is read here rather than by the prover, so a
// batch whose key is still loading waits for that load without holding a device that
// a batch of another circuit, whose key is resident, could use.
func (w *Worker) startBatch(b *batch) {
	go func() {
		ctxs := make([]context.Context, len(b.items))
		for i, it := range b.items {
			ctxs[i] = it.ctx
		}
		keyCtx, stopKey := allDone(ctxs)
		defer stopKey()
		// The key's host copy gets its memory before the syntheses get theirs: its read
		// must not wait for memory that requests waiting for the key hold.
		if r, ok := w.catalog.(interface {
			reserveHost(context.Context, string) error
		}); ok {
			t := time.Now()
			// A shutdown hands the batch back while it waits here, as before synthesis.
			waitCtx, stopWait := context.WithCancelCause(keyCtx)
			if slices.ContainsFunc(b.items, (*item).urgent) {
				waitCtx = context.WithValue(waitCtx, urgentRequest{}, true) // ahead of requests not urgent
			}
			stopDrain := context.AfterFunc(w.drainCtx, func() { stopWait(errHandBack) })
			err := r.reserveHost(waitCtx, b.circuit)
			stopDrain()
			if errors.Is(context.Cause(waitCtx), errHandBack) {
				err = errHandBack
			}
			stopWait(nil)
			for _, it := range b.items {
				it.keyMemWait = time.Since(t)
				if err != nil {
					it.clock.record(phase.MemWait, it.keyMemWait)
					it.drop(fmt.Errorf("load proving key of %q: %w", b.circuit, err))
				}
			}
			if err != nil {
				return
			}
		}
		type prepared struct {
			loaded bool      // the key was not in memory: read or waited for
			at     time.Time // when it was
			err    error
		}
		keyDone := make(chan prepared, 1)
		go func() {
			waited, err := w.catalog.Prepare(keyCtx, b.circuit)
			keyDone <- prepared{waited > 0, time.Now(), err}
		}()

		var wg sync.WaitGroup
		for _, it := range b.items {
			it.att.BatchID = b.id
			it.att.BatchSize = len(b.items)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.safely("synthesize", func() error { return w.synthesize(it) }); err != nil {
					it.drop(err)
				}
			}()
		}
		wg.Wait()
		solved := b.items[:0:0]
		for _, it := range b.items {
			if it.sol != nil {
				solved = append(solved, it)
			}
		}
		if len(solved) == 0 {
			return
		}
		// The srs phase is what the batch waited for its key once synthesized.
		synthesized := time.Now()
		k := <-keyDone
		err, wait := k.err, time.Duration(0)
		if k.loaded && k.at.After(synthesized) {
			wait = k.at.Sub(synthesized)
		}
		for _, it := range solved {
			it.keyWait = wait
			if err != nil {
				it.clock.record(phase.SRS, wait)
				it.drop(fmt.Errorf("load proving key of %q: %w", b.circuit, err))
			}
		}
		if err != nil {
			return
		}
		b.items = solved
		ch := w.proveCh
		if slices.ContainsFunc(b.items, (*item).urgent) {
			ch = w.urgentCh // ahead of the batches already waiting
		}
		ch <- b // blocks when the provers are behind: backpressure
		for _, it := range b.items {
			if it.queued != nil {
				close(it.queued)
			}
		}
	}()
}

func (w *Worker) synthesize(it *item) error {
	ctx := it.ctx
	if it.urgent() {
		ctx = context.WithValue(ctx, urgentRequest{}, true) // its circuit and key go first too
	}
	compiled, release, err := w.catalog.Circuit(ctx, it.req.Circuit)
	var tooLarge *TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		it.clock.record(phase.MemWait, 0) // it never waits for memory
		return err                        // it says what the request needs
	case err != nil:
		return fmt.Errorf("load circuit %q: %w", it.req.Circuit, err)
	}
	defer release() // the solution is all that is needed of the circuit after Solve

	// Until synthesis starts the request holds only its claim: a shutdown hands it
	// back at once (errHandBack) rather than keep the worker past its grace period.
	waitCtx, stopWait := context.WithCancelCause(ctx)
	defer stopWait(nil)
	defer context.AfterFunc(w.drainCtx, func() { stopWait(errHandBack) })()
	if w.drainCtx.Err() != nil {
		return errHandBack
	}

	need := synth.EstimateBytes(compiled)
	t := time.Now()
	res, err := reserveAs(waitCtx, w.budget, KindSynthesis, need)
	it.clock.record(phase.MemWait, it.keyMemWait+time.Since(t))
	if err != nil {
		if errors.Is(context.Cause(waitCtx), errHandBack) {
			return errHandBack
		}
		return fmt.Errorf("reserve %d bytes: %w", need, err)
	}
	it.res = res
	it.att.MemReservedBytes = need

	select {
	case w.synthSem <- struct{}{}:
	case <-waitCtx.Done():
		return context.Cause(waitCtx)
	}
	defer func() { <-w.synthSem }()
	if w.drainCtx.Err() != nil {
		return errHandBack
	}
	it.att.SynthStartedAt = time.Now()
	if it.synthStart != nil {
		close(it.synthStart)
	}
	if it.req.Inputs == nil && len(it.req.Witness) == 0 {
		// An empty payload reads as empty inputs JSON to synth; this one is a witness.
		return fmt.Errorf("synthesize: %w", &synth.InputError{Msg: "witness is empty"})
	}
	// gnark runs one goroutine per core in each solve; with SynthSplit the solves under
	// way share the cores instead.
	sol, err := func() (*synth.Solution, error) {
		solves := int(w.solving.Add(1))
		defer w.solving.Add(-1) // also when the solver panics
		var opts []solver.Option
		if w.cfg.SynthSplit {
			opts = append(opts, solver.WithNbTasks(synth.Tasks(runtime.GOMAXPROCS(0), solves)))
		}
		return synth.Solve(it.ctx, compiled, it.req.Payload(), opts...)
	}()
	it.synthDone = time.Now()
	it.clock.record(phase.Synth, it.synthDone.Sub(it.att.SynthStartedAt))
	if err != nil {
		return fmt.Errorf("synthesize: %w", err)
	}
	it.sol = sol
	return nil
}
