package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/store"
)

func TestBudgetNeverOvercommitsUnderConcurrency(t *testing.T) {
	b := NewBudget(100)
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(10 + i%40)
			r, err := b.Reserve(context.Background(), n)
			if err != nil {
				t.Error(err)
				return
			}
			cur := inUse.Add(n)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			// Count bytes as free before the budget does, never after: otherwise
			// another goroutine's grant can be counted while ours still is.
			inUse.Add(-(n - n/2))
			r.Shrink(n / 2) // first release step
			time.Sleep(time.Millisecond)
			inUse.Add(-r.Bytes())
			r.Release()
			r.Release() // idempotent
		}()
	}
	wg.Wait()
	if peak.Load() > 100 {
		t.Fatalf("peak reservation %d exceeded the budget of 100", peak.Load())
	}
	if b.Reserved() != 0 {
		t.Fatalf("%d bytes still reserved after every release", b.Reserved())
	}
}

func TestBudgetTooLargeFailsAtOnceAndCancelUnblocks(t *testing.T) {
	b := NewBudget(100)
	var tl *TooLargeError
	if _, err := b.Reserve(context.Background(), 101); !errors.As(err, &tl) {
		t.Fatalf("reserve beyond the budget: %v, want TooLargeError", err)
	}
	hold, err := b.Reserve(context.Background(), 90)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Reserve(ctx, 50); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked reserve: %v, want deadline exceeded", err)
	}
	// The abandoned waiter must not hold the line: a small request fits now.
	small, err := b.Reserve(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	small.Release()
	hold.Release()
	if b.Reserved() != 0 {
		t.Fatalf("%d bytes left reserved", b.Reserved())
	}
}

func TestCollectorFlushesOnSizeWaitAndPriority(t *testing.T) {
	got := make(chan *batch, 10)
	c := newCollector(3, 50*time.Millisecond, func(b *batch) { got <- b })
	mk := func(circuit string, prio int) *claimed {
		return &claimed{it: &item{req: &store.Request{Circuit: circuit, Priority: prio}}, att: &attempt{clock: newAttemptClock(time.Now(), 0)}}
	}
	// Size: three of one circuit flush at once.
	for range 3 {
		c.add(mk("a", 3))
	}
	select {
	case b := <-got:
		if len(b.reqs) != 3 || b.circuit != "a" {
			t.Fatalf("size flush: %d items of %s", len(b.reqs), b.circuit)
		}
	case <-time.After(30 * time.Millisecond):
		t.Fatal("a full batch was not flushed at once")
	}
	// Wait: one item flushes after the batch wait.
	start := time.Now()
	c.add(mk("b", 3))
	b := <-got
	if len(b.reqs) != 1 || time.Since(start) < 40*time.Millisecond {
		t.Fatalf("wait flush: %d items after %s", len(b.reqs), time.Since(start))
	}
	// Priority: a more urgent arrival flushes the group with it, at once.
	c.add(mk("c", 3))
	c.add(mk("c", 1))
	select {
	case b := <-got:
		if len(b.reqs) != 2 {
			t.Fatalf("priority flush: %d items", len(b.reqs))
		}
		for _, r := range b.reqs {
			if _, ok := r.att.clock.phases(time.Now())[phase.BatchWait]; !ok {
				t.Fatal("batch_wait_ms not recorded")
			}
		}
	case <-time.After(30 * time.Millisecond):
		t.Fatal("an urgent request did not flush its group at once")
	}
}

func TestAllDoneWaitsForEveryContext(t *testing.T) {
	a, cancelA := context.WithCancel(context.Background())
	b, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	ctx, stop := allDone([]context.Context{a, b})
	defer stop()
	cancelA()
	select {
	case <-ctx.Done():
		t.Fatal("cancelled when only one of two was done")
	case <-time.After(20 * time.Millisecond):
	}
	cancelB()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not cancelled after both were done")
	}

	single, cancel := context.WithCancel(context.Background())
	one, stopOne := allDone([]context.Context{single})
	defer stopOne()
	cancel()
	<-one.Done() // a batch of one follows its request
}

// A worker that put a request back for a worker with a larger budget stays off it for
// 1 s, doubling with each put back River recorded, and never longer than a minute.
func TestBudgetStayOffIsBounded(t *testing.T) {
	for _, c := range []struct {
		metadata string
		want     time.Duration
	}{
		{`{}`, time.Second},
		{``, time.Second},
		{`{"snoozes": 1}`, 2 * time.Second},
		{`{"snoozes": 5}`, 32 * time.Second},
		{`{"snoozes": 6}`, time.Minute},
		{`{"snoozes": 1000000}`, time.Minute},
		{`{"snoozes": -3}`, time.Second},
	} {
		if got := budgetStayOff([]byte(c.metadata)); got != c.want {
			t.Errorf("metadata %s: %s, want %s", c.metadata, got, c.want)
		}
	}
}

// The jobs a worker stays off are left out until their time, then forgotten.
func TestStayOffForgetsEndedJobs(t *testing.T) {
	var s stayOff
	now := time.Now()
	s.add(1, now.Add(time.Second))
	s.add(2, now.Add(time.Minute))
	if got := s.ids(now); len(got) != 2 {
		t.Fatalf("at once: %v, want jobs 1 and 2", got)
	}
	if got := s.ids(now.Add(2 * time.Second)); !slices.Equal(got, []int64{2}) {
		t.Fatalf("after 2 s: %v, want job 2", got)
	}
	if got := s.ids(now); !slices.Equal(got, []int64{2}) {
		t.Fatalf("job 1 ended before: %v, want it forgotten", got)
	}
}

// The peak counts bytes and the reservations holding them, across both release steps
// and a waiter that gives up.
func TestBudgetPeakAndWaiting(t *testing.T) {
	b := NewBudget(100)
	r1, _ := b.Reserve(context.Background(), 60)
	r2, _ := b.Reserve(context.Background(), 30)
	if p := b.Peak(); p != (BudgetPeak{Bytes: 90, Reservations: 2}) {
		t.Fatalf("peak %+v after 60 and 30 bytes, want 90 bytes in 2", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := b.Reserve(ctx, 50)
		got <- err
	}()
	for b.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	r1.Shrink(10) // first release step: still a reservation
	r3, _ := b.Reserve(context.Background(), 60)
	if p := b.Peak(); p != (BudgetPeak{Bytes: 100, Reservations: 3}) {
		t.Fatalf("peak %+v, want 100 bytes in 3 reservations", p)
	}
	for _, r := range []*Reservation{r1, r2, r3} {
		r.Release()
		r.Release()
	}
	if b.Reserved() != 0 || b.live != 0 || b.Waiting() != 0 {
		t.Fatalf("after every release: %d bytes in %d reservations, %d waiting", b.Reserved(), b.live, b.Waiting())
	}
}

// An urgent reservation waits only behind other urgent ones: it is granted before
// reservations that were waiting before it came, in arrival order among the urgent.
func TestBudgetUrgentGoesFirst(t *testing.T) {
	b := NewBudget(100)
	hold, err := b.ReserveFor(context.Background(), KindSynthesis, 100)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	reserve := func(name string, urgent bool) {
		defer wg.Done()
		f := b.ReserveFor
		if urgent {
			f = b.ReserveUrgent
		}
		r, err := f(context.Background(), KindSynthesis, 60)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		r.Release()
	}
	for i, w := range []struct {
		name   string
		urgent bool
	}{{"normal-1", false}, {"normal-2", false}, {"urgent-1", true}, {"urgent-2", true}} {
		wg.Add(1)
		go reserve(w.name, w.urgent)
		for b.Waiting() != i+1 { // in this arrival order
			time.Sleep(time.Millisecond)
		}
	}
	hold.Release()
	wg.Wait()
	if got := fmt.Sprint(order); got != "[urgent-1 urgent-2 normal-1 normal-2]" {
		t.Errorf("granted in order %s, want the urgent ones first, each kind in arrival order", got)
	}
}

// Each kind's bytes and peak are counted apart; a fixed kind (staging, process)
// shrinks the room of every reservation, and one larger than the room fails at once
// naming what is held.
func TestBudgetKindsAndRoom(t *testing.T) {
	b := NewBudget(1000)
	if _, err := b.ReserveFor(context.Background(), KindProcess, 300); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReserveFor(context.Background(), KindStaging, 100); err != nil {
		t.Fatal(err)
	}
	if b.Room() != 600 {
		t.Errorf("room %d, want 600", b.Room())
	}
	var tl *TooLargeError
	_, err := b.ReserveFor(context.Background(), KindSynthesis, 601)
	if !errors.As(err, &tl) || tl.Held != 400 {
		t.Fatalf("reserve beyond the room: %v, want TooLargeError holding 400", err)
	}
	if want := "needs 601 bytes of memory, more than the budget of 1000 bytes leaves (600 bytes, beside 400 held by the process and its staging buffers"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	s, err := b.ReserveFor(context.Background(), KindSynthesis, 500)
	if err != nil {
		t.Fatal(err)
	}
	s.Shrink(100)
	k, err := b.Reserve(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(b.Kinds())
	want := "[{other 50 50} {process 300 300} {staging 100 100} {synthesis 100 500}]"
	if got != want {
		t.Errorf("kinds %s, want %s", got, want)
	}
	k.Release()
	s.Release()
	if b.Reserved() != 400 || b.PeakBytes() != 900 {
		t.Errorf("reserved %d, peak %d; want 400 (process and staging), 900", b.Reserved(), b.PeakBytes())
	}
}

// A reservation that must wait asks the reclaimer for what it lacks; what the
// reclaimer releases lets it through.
func TestBudgetReclaimerFreesRoom(t *testing.T) {
	b := NewBudget(100)
	idle, err := b.ReserveFor(context.Background(), KindCircuit, 70)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	b.SetReclaimer(func(need int64) {
		asked.Store(need)
		idle.Release()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := b.ReserveFor(ctx, KindSynthesis, 50)
	if err != nil {
		t.Fatalf("reserve with an idle circuit to reclaim: %v", err)
	}
	if asked.Load() != 20 {
		t.Errorf("reclaimer asked for %d bytes, want the 20 lacking", asked.Load())
	}
	r.Release()
}

// The urgent gate holds waiters while an urgent request is on its way and lets them go
// when none is; a waiter whose context ends returns its cause.
func TestUrgentGate(t *testing.T) {
	var g urgentGate
	if err := g.wait(context.Background()); err != nil {
		t.Fatalf("wait with no urgent request: %v", err)
	}
	g.enter()
	g.enter()
	done := make(chan error, 1)
	go func() { done <- g.wait(context.Background()) }()
	g.leave()
	select {
	case err := <-done:
		t.Fatalf("wait returned (%v) while an urgent request is still on its way", err)
	case <-time.After(20 * time.Millisecond):
	}
	g.leave()
	if err := <-done; err != nil {
		t.Fatalf("wait once none is on its way: %v", err)
	}
	g.enter()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stopping")
	cancel(cause)
	if err := g.wait(ctx); !errors.Is(err, cause) {
		t.Errorf("wait with an ended context: %v, want its cause", err)
	}
	g.leave()
}

// OnPinned hears what staging buffers and pinned memory (outside the Go heap) hold,
// at once and on each change, and nothing of other kinds.
func TestBudgetOnPinned(t *testing.T) {
	b := NewBudget(1000)
	if _, err := b.ReserveFor(context.Background(), KindStaging, 100); err != nil {
		t.Fatal(err)
	}
	var heard []int64
	b.OnPinned(func(n int64) { heard = append(heard, n) })
	p, err := b.ReserveFor(context.Background(), KindPinned, 50)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.ReserveFor(context.Background(), KindSynthesis, 200)
	if err != nil {
		t.Fatal(err)
	}
	s.Release()
	p.Shrink(20)
	p.Release()
	if got := fmt.Sprint(heard); got != "[100 150 120 100]" {
		t.Errorf("heard %s, want [100 150 120 100]", got)
	}
}
