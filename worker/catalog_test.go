package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cuzk/cuzk/synth"
)

// A caller that finds a load in progress (a preload, another batch) reports it as
// loading, so its srs_ms is the wait; one that finds the value resident does not.
func TestLoadOnceWaiterCountsAsLoading(t *testing.T) {
	var o loadOnce[int]
	release, started := make(chan struct{}), make(chan struct{})
	first := make(chan bool)
	go func() {
		_, loaded, _ := o.get(context.Background(), "k", func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
		first <- loaded
	}()
	<-started
	waiter := make(chan bool)
	go func() {
		v, loaded, err := o.get(context.Background(), "k", func(context.Context) (int, error) { t.Error("loaded twice"); return 0, nil })
		if v != 1 || err != nil {
			t.Errorf("waiter got %d, %v", v, err)
		}
		waiter <- loaded
	}()
	time.Sleep(50 * time.Millisecond) // let the waiter block on the load in progress
	close(release)
	if !<-first {
		t.Error("the caller that loaded did not say so")
	}
	if !<-waiter {
		t.Error("a caller that waited for a load in progress reported the value as resident")
	}
	if _, loaded, _ := o.get(context.Background(), "k", nil); loaded {
		t.Error("a caller that found the value resident reported a load")
	}
}

// Compiled circuits are counted in the budget while held; when a reservation needs
// room, idle ones are unloaded least recently used first (and dropped from the
// loader's cache), and one in use never is.
func TestCatalogUnloadsIdleCircuitsForRoom(t *testing.T) {
	ctx := context.Background()
	reg := synth.NewRegistry(t.TempDir())
	var unloaded []string
	cat := NewCatalogWith(reg.Get, nil, nil, CatalogOptions{Unload: func(name string) {
		unloaded = append(unloaded, name)
		reg.Unload(name)
	}}).(*catalog)
	a, err := reg.Get(ctx, "synthetic-k8")
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.Get(ctx, "synthetic-k10")
	if err != nil {
		t.Fatal(err)
	}
	// Room for a synthesis of either with its key, and for one circuit more.
	room := max(synth.EstimateBytes(a)+cat.keyHostBytes(a), synth.EstimateBytes(b)+cat.keyHostBytes(b)) + a.HeldBytes() + b.HeldBytes()
	budget := NewBudget(room)
	cat.useBudget(budget, nil)

	_, releaseA, err := cat.Circuit(ctx, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	releaseA()
	_, releaseB, err := cat.Circuit(ctx, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := budget.KindBytes(KindCircuit); n != a.HeldBytes()+b.HeldBytes() {
		t.Fatalf("circuit bytes %d, want both circuits' %d", n, a.HeldBytes()+b.HeldBytes())
	}
	// A reservation that needs a's room: a is idle and goes; b, in use, stays.
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := budget.ReserveFor(wait, KindSynthesis, room-b.HeldBytes())
	if err != nil {
		t.Fatalf("reserve with an idle circuit to unload: %v", err)
	}
	if fmt.Sprint(unloaded) != "[synthetic-k8]" {
		t.Errorf("unloaded %v, want [synthetic-k8]", unloaded)
	}
	if n, _ := budget.KindBytes(KindCircuit); n != b.HeldBytes() {
		t.Errorf("circuit bytes %d, want b's %d", n, b.HeldBytes())
	}
	r.Release()
	// b in use is never unloaded: a reservation that needs its room waits.
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if _, err := budget.ReserveFor(short, KindSynthesis, room); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("reserve the room of a circuit in use: %v, want to wait", err)
	}
	releaseB()
}
