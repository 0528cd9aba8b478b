package worker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// A collection starts once the consumed bytes reach the threshold, one at a time;
// bytes consumed while it runs start one more after it, and none is left pending.
func TestHeapSweeper(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	release := make(chan struct{})
	s := newHeapSweeper(100)
	s.gc = func() {
		mu.Lock()
		calls++
		mu.Unlock()
		<-release
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
	idle := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.running
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	s.consumed(60)
	if !idle() || count() != 0 {
		t.Fatalf("below the threshold: %d collections, running %v", count(), !idle())
	}
	s.consumed(40) // 100: one starts
	waitFor("the first collection", func() bool { return count() == 1 })
	s.consumed(150) // while it runs: none more now, one after it
	s.consumed(150)
	if count() != 1 {
		t.Fatalf("a second collection started beside the first: %d", count())
	}
	release <- struct{}{}
	waitFor("the follow-up collection", func() bool { return count() == 2 })
	release <- struct{}{}
	waitFor("the sweeper to stop", idle)
	if count() != 2 {
		t.Fatalf("collections: %d, want 2", count())
	}
	s.consumed(99) // below again after the reset
	if !idle() {
		t.Fatal("a collection started 1 byte short of the threshold")
	}
}

func TestSweepThreshold(t *testing.T) {
	for _, c := range []struct{ budget, want int64 }{
		{4 << 30, 1 << 30},
		{110 << 30, (110 << 30) / 16},
	} {
		if got := sweepThreshold(c.budget); got != c.want {
			t.Errorf("sweepThreshold(%d) = %d, want %d", c.budget, got, c.want)
		}
	}
}

// A proof's check drops the wire values kept for it, and counts their bytes as
// consumed, whether the proof verifies or not: the rest of the solution was counted
// when the proof was made.
func TestCheckProofCountsTheWitness(t *testing.T) {
	var collections atomic.Int32
	const wires = 1000
	w := &Worker{sweeper: newHeapSweeper(wires * fr.Bytes)}
	w.sweeper.gc = func() { collections.Add(1) }
	p := &proved{proof: new(groth16bls.Proof), vk: new(groth16bls.VerifyingKey), w: make([]fr.Element, wires)}
	att := &attempt{clock: newAttemptClock(time.Now(), 0)}
	if _, err := w.checkProof(context.Background(), att, p); err == nil || !strings.HasPrefix(err.Error(), "proof failed verification") {
		t.Fatalf("checkProof of an empty proof: %v, want it to fail verification", err)
	}
	if p.w != nil {
		t.Error("the wire values are still held after the check")
	}
	deadline := time.Now().Add(10 * time.Second)
	for collections.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no collection: the wire values' bytes were not counted as consumed")
		}
		time.Sleep(time.Millisecond)
	}
}
