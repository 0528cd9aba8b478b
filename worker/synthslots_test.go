package worker

import (
	"context"
	"testing"
	"time"
)

// Large block-split solves run at most Config.LargeSolves at once within the synthesis
// slots; one waiting for its turn holds no slot that another circuit's solve could
// use, gives everything back when its wait ends, and urgent solves keep their own
// slots whatever their size.
func TestLargeSolvesBoundedWithinSynthSlots(t *testing.T) {
	w := &Worker{
		synthSem:    make(chan struct{}, 4),
		urgentSynth: make(chan struct{}, 1),
		largeSynth:  largeSlots(Config{SynthConcurrency: 4, LargeSolves: 2}),
	}
	ctx := context.Background()
	take := func(what string, large bool) func() {
		t.Helper()
		free, ok := w.synthSlots(ctx, false, large)
		if !ok {
			t.Fatalf("%s: no slot", what)
		}
		return free
	}
	freeL1 := take("large 1", true)
	take("large 2", true)

	// A third large solve waits for one of the two.
	third := make(chan func(), 1)
	go func() {
		free, ok := w.synthSlots(ctx, false, true)
		if ok {
			third <- free
		}
	}()
	// Meanwhile the other two slots go to other circuits' solves: the waiting large
	// one holds none.
	freeS1 := take("small 1", false)
	take("small 2", false)
	select {
	case <-third:
		t.Fatal("a third large solve started beside two")
	default:
	}
	if len(w.synthSem) != 4 || len(w.largeSynth) != 2 {
		t.Fatalf("slots in use %d of 4, large %d of 2; want 4 and 2", len(w.synthSem), len(w.largeSynth))
	}
	// One large solve ends: the third has its large slot and waits for a synthesis
	// slot; a small one ending gives it that.
	freeL1()
	freeS1()
	select {
	case free := <-third:
		free()
	case <-time.After(time.Minute):
		t.Fatal("the third large solve did not start once a large and a synthesis slot were free")
	}

	// A wait that ends (shutdown, cancel) leaves every slot as it found it.
	inUse, largeInUse := len(w.synthSem), len(w.largeSynth)
	cctx, cancel := context.WithCancel(ctx)
	take("large 3", true) // the two large slots are held again
	done := make(chan bool, 1)
	go func() {
		_, ok := w.synthSlots(cctx, false, true)
		done <- ok
	}()
	cancel()
	if <-done {
		t.Fatal("a cancelled wait got a slot")
	}
	if len(w.synthSem) != inUse+1 || len(w.largeSynth) != largeInUse+1 {
		t.Errorf("after a cancelled wait: slots %d, large %d; want %d and %d",
			len(w.synthSem), len(w.largeSynth), inUse+1, largeInUse+1)
	}

	// An urgent solve of a large circuit uses the urgent slot alone.
	freeU, ok := w.synthSlots(ctx, true, true)
	if !ok || len(w.urgentSynth) != 1 || len(w.largeSynth) != largeInUse+1 {
		t.Fatalf("urgent large solve: ok %v, urgent slots %d, large %d", ok, len(w.urgentSynth), len(w.largeSynth))
	}
	freeU()

	// No bound of its own where --synth-concurrency is no more than it.
	if largeSlots(Config{SynthConcurrency: 2, LargeSolves: 2}) != nil || largeSlots(Config{SynthConcurrency: 8}) != nil {
		t.Error("large slots made where they bound nothing")
	}
}
