package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// runProver proves the batches next gives on device i until next says there are no
// more or the device is lost.
func (w *Worker) runProver(i int, next func() (*solvedBatch, bool)) {
	d := &w.devices[i]
	for {
		b, ok := next()
		if !ok {
			return
		}
		if w.lost[i].Load() {
			// Every device is lost (else this prover has returned) and the worker is
			// stopping: what still waits for a prover goes back to the queue now.
			failAll(b.reqs, errHandBack)
			continue
		}
		err := w.safely("prove on "+d.Backend.Name(), func() error { w.proveBatch(d, b); return nil })
		if err != nil {
			failAll(b.reqs, err)
		}
		if w.lost[i].Load() && !w.allLost() {
			return
		}
	}
}

// nextBatch is the next batch to prove: an urgent one when one waits, else the oldest
// of the others; false once the provers' channel is closed.
func (w *Worker) nextBatch() (*solvedBatch, bool) {
	select {
	case b := <-w.urgentCh:
		return b, true
	default:
	}
	select {
	case b := <-w.urgentCh:
		return b, true
	case b, ok := <-w.proveCh:
		if !ok {
			// Stopping: an urgent batch queued meanwhile is still proven (the
			// urgent lanes may have stopped already).
			select {
			case b := <-w.urgentCh:
				return b, true
			default:
			}
		}
		return b, ok
	}
}

// nextUrgent is the next urgent batch, for a device's urgent lane; false once the
// provers are stopping (the other lanes take what is left: nextBatch).
func (w *Worker) nextUrgent() (*solvedBatch, bool) {
	select {
	case b := <-w.urgentCh:
		return b, true
	case <-w.proversStop:
		return nil, false
	}
}

func (w *Worker) allLost() bool {
	for i := range w.lost {
		if !w.lost[i].Load() {
			return false
		}
	}
	return true
}

// deviceLost records that d failed with prover.ErrDeviceLost: its prover takes no more
// batches, and when no device is left the worker stops (Run returns err).
func (w *Worker) deviceLost(d *Prover, err error) {
	left := 0
	for i := range w.devices {
		if &w.devices[i] == d {
			if w.lost[i].Swap(true) {
				return
			}
		}
		if !w.lost[i].Load() {
			left++
		}
	}
	w.catalog.DeviceReset(d.Backend, err)
	w.log.Error("device lost, no more proofs on it", "device", d.Backend.Name(), "devices_left", left, "err", err)
	if left == 0 {
		<-w.stopReady
		w.stop(err)
	}
}

// proved is a request's proof, what the prover hands completion with the attempt's
// record: the proof, its public witness, and the verifying key it verifies with and
// that key's digest, stored with it.
type proved struct {
	proof    *groth16bls.Proof
	public   []byte
	vk       *groth16bls.VerifyingKey
	vkDigest string

	// The solution's wire values and circuit, kept until the proof is verified: the
	// block solver leaves the constraints that solve no wire unchecked, so a proof
	// that fails verification is told apart from a fault by checking them (badInputs).
	w        []fr.Element
	compiled *synth.Compiled
}

// badInputs says why a proof failed verification when its witness is at fault: the
// input error of the first constraint that the witness fails; nil when every one holds
// (the fault is then the prover's) or when there is nothing to check.
func (p *proved) badInputs(ctx context.Context) error {
	if p.w == nil || p.compiled == nil {
		return nil
	}
	err := p.compiled.Check(ctx, p.w, runtime.GOMAXPROCS(0))
	if !synth.IsBadInput(err) {
		return nil
	}
	return err
}

func (w *Worker) proveBatch(d *Prover, b *solvedBatch) {
	picked := time.Now()
	live := b.reqs[:0:0]
	for _, s := range b.reqs {
		s.att.row.Backend = d.Backend.Name()
		s.att.row.Device = d.Label
		if err := context.Cause(s.it.ctx); err != nil {
			s.att.clock.record(phase.ProveWait, picked.Sub(s.synthEnd)-s.keyWait)
			w.dropSolution(s)
			s.fail(err)
			continue
		}
		live = append(live, s)
	}
	if len(live) == 0 {
		return
	}
	// The prove_wait phase ends where the proof starts: on the device once it is free
	// of another lane's batch (the backend says how long it waited), or at a failure
	// (a panic too) before that. The key's srs phase after synthesis is not in it.
	var deviceWait time.Duration
	proveWaitEnds := sync.OnceFunc(func() {
		for _, s := range live {
			s.att.clock.record(phase.ProveWait, picked.Sub(s.synthEnd)-s.keyWait+deviceWait)
		}
	})
	defer proveWaitEnds()
	fail := func(err error) {
		proveWaitEnds()
		for _, s := range live {
			w.dropSolution(s)
		}
		failAll(live, err)
	}

	// The key is shared by the batch; loading it (reading it after synthesis, then
	// making it resident here) is the srs phase of every attempt in it.
	// One request's cancel must not abort the others' proofs; when all are cancelled
	// (a shutdown past its grace period), the batch's proof stops.
	ctxs := make([]context.Context, len(live))
	for i, s := range live {
		ctxs[i] = s.it.ctx
	}
	ctx, stop := allDone(ctxs)
	defer stop()
	if slices.ContainsFunc(live, func(s *synthesized) bool { return s.it.urgent() }) {
		ctx = prover.WithUrgent(ctx) // the device's next step is its
	}
	key, loaded, err := w.catalog.Resident(ctx, b.key, d.Backend)
	for _, s := range live {
		s.att.clock.record(phase.SRS, s.keyWait+loaded)
	}
	if err != nil {
		fail(fmt.Errorf("load proving key of %q on %s: %w", b.circuit, d.Backend.Name(), err))
		if errors.Is(err, prover.ErrDeviceLost) {
			w.deviceLost(d, err)
		}
		return
	}

	sols := make([]*synth.Solution, len(live))
	for i, s := range live {
		sols[i] = s.sol
	}
	start := time.Now()
	release := sync.OnceFunc(key.Release)
	defer release() // also when Prove panics: a key left in use could never be evicted
	sums, times, err := prover.ProveSums(ctx, d.Backend, key.PK, key.Key, sols)
	elapsed := time.Since(start)
	clear(sols) // the batch's vectors: garbage once each s.sol below is dropped too
	release()
	deviceWait = times.Wait
	proveWaitEnds()
	switch {
	case errors.Is(err, prover.ErrDeviceReset):
		// The device lost every key resident on it: the retry loads them again.
		w.catalog.DeviceReset(d.Backend, err)
	case errors.Is(err, prover.ErrDeviceLost):
		defer w.deviceLost(d, err) // after this batch's attempts are failed (retryable)
	}
	var telemetry []byte
	if d.Telemetry != nil {
		telemetry = d.Telemetry()
	}
	inside := devicePhases(times)
	// The time the backend waited for its device behind another lane's batch is
	// waiting for a prover, not proving.
	start = start.Add(times.Wait)
	elapsed -= times.Wait
	for _, s := range live {
		s.att.row.Telemetry = telemetry
		s.att.row.ProveStartedAt = start
		for name, t := range inside {
			s.att.clock.record(name, t)
		}
	}
	if err != nil {
		for _, s := range live {
			s.att.clock.record(phase.Prove, elapsed)
		}
		fail(fmt.Errorf("prove on %s: %w", d.Backend.Name(), err))
		return
	}
	done := make([]*claimed, len(live))
	made := make([]proved, len(live))
	var consumed int64
	for i, s := range live {
		done[i] = s.claimed
		made[i] = proved{public: s.sol.Public, vk: key.VK, vkDigest: key.VKDigest, w: s.sol.W, compiled: s.compiled}
		wBytes := int64(len(s.sol.W)) * fr.Bytes
		s.sol = nil
		consumed += s.att.mem.shrink(wBytes) // A and B are consumed; W stays until the proof is verified
	}
	w.sweeper.consumed(consumed)
	// The proofs are assembled (a few scalar multiplications each, on the CPU) beside
	// the device's next batch, not before it: in a worker's execution trace a batch of
	// 16 small proofs spent 1.5 of its 40 ms there with the device idle. The prove
	// phase still ends when its proofs are assembled.
	w.assembling.Add(1)
	go func() {
		defer w.assembling.Done()
		err := w.safely("assemble proofs", func() error {
			proofs := sums.Assemble()
			took := time.Since(start)
			for i, r := range done {
				r.att.clock.record(phase.Prove, took)
				p := made[i]
				p.proof = proofs[i]
				r.it.deliver(outcome{att: r.att, proved: &p})
			}
			return nil
		})
		if err != nil {
			failAll(done, err)
		}
	}()
}

// dropSolution lets go of the solution of a request that will not be proven, its
// vectors counted as consumed for the heap sweeper as a proven one's are.
func (w *Worker) dropSolution(s *synthesized) {
	if s.sol == nil {
		return
	}
	w.sweeper.consumed(int64(len(s.sol.W)+cap(s.sol.A)+cap(s.sol.B)) * fr.Bytes)
	s.sol = nil
}

// devicePhases are the phases inside prove that the backend measured, by name: a
// backend that does not separate a phase reports no time for it.
func devicePhases(t prover.PhaseTimes) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, d := range map[string]time.Duration{
		phase.NTT: t.NTT, phase.MSM: t.MSM, phase.H2D: t.H2D, phase.MSMG1: t.MSMG1, phase.MSMG2: t.MSMG2,
	} {
		if d > 0 {
			out[name] = d
		}
	}
	return out
}
