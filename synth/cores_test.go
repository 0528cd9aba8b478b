package synth

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint/solver"
)

// waitWaiting waits until n acquires wait in c's line.
func waitWaiting(t *testing.T, c *Cores, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.waiting)
		c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acquires waiting, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// acquireAsync starts t.acquire and returns a channel that receives its error.
func acquireAsync(ctx context.Context, t *Turn) <-chan error {
	done := make(chan error, 1)
	go func() { done <- t.acquire(ctx) }()
	return done
}

func mustNotBeDone(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s acquired (err %v) while it should wait", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

func mustBeDone(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits", what)
	}
}

func TestCoresGrantInTurnOrder(t *testing.T) {
	ctx := context.Background()
	c := NewCores(1)
	first, second, third := c.Turn(false), c.Turn(false), c.Turn(false)
	urgent := c.Turn(true)
	if err := third.acquire(ctx); err != nil { // the only core, held by the last turn
		t.Fatal(err)
	}
	// Waiters arrive latest first; the core must still go urgent, first, second.
	s := acquireAsync(ctx, second)
	waitWaiting(t, c, 1)
	f := acquireAsync(ctx, first)
	waitWaiting(t, c, 2)
	u := acquireAsync(ctx, urgent)
	waitWaiting(t, c, 3)

	third.release()
	mustBeDone(t, u, "urgent")
	mustNotBeDone(t, f, "first")
	urgent.release()
	mustBeDone(t, f, "first")
	mustNotBeDone(t, s, "second")
	first.release()
	mustBeDone(t, s, "second")
	second.release()
	if c.free != 1 {
		t.Fatalf("free = %d after every release, want 1", c.free)
	}
}

func TestCoresYieldOnlyToTurnsAhead(t *testing.T) {
	ctx := context.Background()
	c := NewCores(1)
	older, younger := c.Turn(false), c.Turn(false)
	if err := older.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	y := acquireAsync(ctx, younger)
	waitWaiting(t, c, 1)
	// A turn behind waits: the older keeps its core across yields.
	for range 3 {
		if err := older.yield(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustNotBeDone(t, y, "younger")
	older.release()
	mustBeDone(t, y, "younger")

	// Now the younger holds the core and the older waits: the younger's yield hands
	// it over and waits for it again.
	o := acquireAsync(ctx, older)
	waitWaiting(t, c, 1)
	yielded := make(chan error, 1)
	go func() { yielded <- younger.yield(ctx) }()
	mustBeDone(t, o, "older")
	mustNotBeDone(t, yielded, "younger's yield")
	older.release()
	mustBeDone(t, yielded, "younger's yield")
	younger.release()
}

// A cancelled wait leaves the line; the core goes to the next in line.
func TestCoresCancelledWaitLeavesTheLine(t *testing.T) {
	c := NewCores(1)
	holder, first, later := c.Turn(false), c.Turn(false), c.Turn(false)
	if err := holder.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	f := acquireAsync(ctx, first)
	waitWaiting(t, c, 1)
	l := acquireAsync(context.Background(), later)
	waitWaiting(t, c, 2)
	stop := errors.New("stopped")
	cancel(stop)
	select {
	case err := <-f:
		if !errors.Is(err, stop) {
			t.Fatalf("cancelled acquire: %v, want %v", err, stop)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled acquire did not return")
	}
	waitWaiting(t, c, 1)
	holder.release()
	mustBeDone(t, l, "later")
	later.release()
	if c.free != 1 || len(c.waiting) != 0 {
		t.Fatalf("free = %d, waiting %d; want 1, 0", c.free, len(c.waiting))
	}
}

// Many goroutines of several turns acquiring, yielding and releasing never hold more
// cores than the line has (run with -race).
func TestCoresNeverOverGranted(t *testing.T) {
	const n = 3
	c := NewCores(n)
	var (
		mu           sync.Mutex
		running, top int
		wg           sync.WaitGroup
	)
	enter := func(k int) {
		mu.Lock()
		running += k
		top = max(top, running)
		mu.Unlock()
	}
	for s := range 5 {
		turn := c.Turn(s == 3)
		for range 4 {
			wg.Go(func() {
				ctx := context.Background()
				if err := turn.acquire(ctx); err != nil {
					t.Error(err)
					return
				}
				for range 50 {
					enter(1)
					runtime.Gosched()
					enter(-1)
					if err := turn.yield(ctx); err != nil {
						t.Error(err)
						return
					}
				}
				turn.release()
			})
		}
	}
	wg.Wait()
	if top > n {
		t.Fatalf("%d cores held at once, line of %d", top, n)
	}
	if c.free != n || len(c.waiting) != 0 {
		t.Fatalf("free = %d, waiting %d; want %d, 0", c.free, len(c.waiting), n)
	}
}

// equalSolutions fails t unless a and b have the same W, A and B.
func equalSolutions(t *testing.T, what string, a, b *Solution) {
	t.Helper()
	for _, v := range [...]struct {
		name string
		a, b fr.Vector
	}{{"W", a.W, b.W}, {"A", a.A, b.A}, {"B", a.B, b.B}} {
		if len(v.a) != len(v.b) {
			t.Fatalf("%s: %s has %d values, want %d", what, v.name, len(v.a), len(v.b))
		}
		for i := range v.a {
			if !v.a[i].Equal(&v.b[i]) {
				t.Fatalf("%s: %s[%d] differs", what, v.name, i)
			}
		}
	}
}

// Solves in a line give the solutions they give alone: the block solver (porep-k18,
// synthetic-k12) and gnark's (sha256-preimage-b3, which does not split and so stays
// out of the line), several at once on a line of 2 cores.
func TestSolvesInLineMatch(t *testing.T) {
	c := NewCores(2)
	var wg sync.WaitGroup
	for _, name := range []string{"porep-k18", "synthetic-k12", "sha256-preimage-b3"} {
		comp := mustCompile(t, name)
		in := mustInputs(t, name, 2)
		want, err := Solve(t.Context(), comp, in, solver.WithNbTasks(2))
		if err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			wg.Go(func() {
				ctx := WithTurn(t.Context(), c.Turn(k == 1))
				got, err := Solve(ctx, comp, in, solver.WithNbTasks(2))
				if err != nil {
					t.Errorf("%s in line: %v", name, err)
					return
				}
				equalSolutions(t, name+" in line", got, want)
			})
		}
	}
	wg.Wait()
	if c.free != 2 || len(c.waiting) != 0 {
		t.Fatalf("after the solves: free = %d, waiting %d; want 2, 0", c.free, len(c.waiting))
	}
}

// The solve ahead in line finishes first even when it starts last: on one core, the
// younger solve's blocks wait until the older's are done.
func TestSolvesInLineOlderFirst(t *testing.T) {
	comp := mustCompile(t, "porep-k18")
	in := mustInputs(t, "porep-k18", 1)
	c := NewCores(1)
	holder := c.Turn(true)
	if err := holder.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	older, younger := c.Turn(false), c.Turn(false)
	order := make(chan string, 2)
	solve := func(name string, turn *Turn) {
		if _, err := Solve(WithTurn(t.Context(), turn), comp, in); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		order <- name
	}
	go solve("younger", younger)
	waitWaiting(t, c, 1)
	go solve("older", older)
	waitWaiting(t, c, 2)
	holder.release()
	if first, second := <-order, <-order; first != "older" || second != "younger" {
		t.Fatalf("finished %s, then %s; want older, then younger", first, second)
	}
}

// A solve on gnark's solver does not wait in line: it cannot pause, so an urgent solve
// would otherwise wait behind the whole of it.
func TestGnarkSolveStaysOutOfLine(t *testing.T) {
	comp := mustCompile(t, "sha256-preimage-b3")
	if comp.SolvesInBlocks() {
		t.Fatal("sha256-preimage-b3 splits into blocks now: pick a circuit that does not")
	}
	c := NewCores(1)
	holder := c.Turn(true)
	if err := holder.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer holder.release()
	if _, err := Solve(WithTurn(t.Context(), c.Turn(false)), comp, mustInputs(t, "sha256-preimage-b3", 1)); err != nil {
		t.Fatalf("with every core of the line held: %v", err)
	}
}

// A solve waiting in line for a core stops when its context is cancelled, and leaves
// the line as it found it.
func TestSolveInLineCancelled(t *testing.T) {
	for _, name := range []string{"porep-k18"} {
		comp := mustCompile(t, name)
		in := mustInputs(t, name, 1)
		c := NewCores(1)
		holder := c.Turn(true)
		if err := holder.acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := Solve(WithTurn(ctx, c.Turn(false)), comp, in)
			done <- err
		}()
		waitWaiting(t, c, 1)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: cancelled solve: %v, want context.Canceled", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: cancelled solve still waits", name)
		}
		holder.release()
		if c.free != 1 || len(c.waiting) != 0 {
			t.Fatalf("%s: free = %d, waiting %d; want 1, 0", name, c.free, len(c.waiting))
		}
	}
}
