package worker

import (
	"context"
	"errors"
	"testing"
)

// A batch's memory is taken part by part, shrunk to a token once proven, and given
// back part by part; a release is safe twice and on a part never taken, and a take
// that gives up waiting holds nothing.
func TestBatchMemoryTakeShrinkRelease(t *testing.T) {
	b := NewBudget(1000)
	m := newBatchMemory(b, 3)
	ctx := context.Background()
	for i, n := range []int64{320, 160} {
		if err := m.hold(i).take(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if m.held() != 480 || b.Reserved() != 480 {
		t.Fatalf("batch holds %d, budget %d, want 480", m.held(), b.Reserved())
	}
	if now, _ := b.KindBytes(KindSynthesis); now != 480 {
		t.Fatalf("synthesis holds %d, want 480", now)
	}

	// The third part does not fit while the others hold theirs: it gives up.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.hold(2).take(short, 600); !errors.Is(err, context.Canceled) {
		t.Fatalf("take past the budget: %v, want cancelled", err)
	}
	if m.held() != 480 || b.Waiting() != 0 {
		t.Fatalf("after a cancelled take: batch holds %d, %d waiting", m.held(), b.Waiting())
	}

	m.hold(0).shrink(0)
	if m.held() != 320/16+160 {
		t.Fatalf("after shrinking part 0: %d, want %d", m.held(), 320/16+160)
	}
	for range 2 {
		m.hold(0).release()
		m.hold(2).release()
	}
	memHold{}.release()
	if m.held() != 160 || b.Reserved() != 160 {
		t.Fatalf("after releasing part 0: batch %d, budget %d, want 160", m.held(), b.Reserved())
	}
	m.hold(1).release()
	if m.held() != 0 || b.Reserved() != 0 {
		t.Fatalf("after releasing every part: batch %d, budget %d", m.held(), b.Reserved())
	}
}
