package synth

import (
	"container/heap"
	"context"
	"sync"
)

// Cores lines up concurrent solves for the process's cores: urgent solves first, then
// the others in the order they started. Solves that start together and split the cores
// evenly each take as long as all of them together, so the prover waits for the first
// solution as long as for the last; in line, the first is done in about the time it
// takes alone, and the later ones run on what it leaves idle (its serial prefix and
// suffix, its last blocks), so the cores stay as busy as before.
//
// The block solver holds a core for each goroutine while it solves a task of blocks and
// passes the core on between tasks when a solve ahead of its own waits (Turn.yield).
// gnark's solver (circuits without a block split) stays out of the line: it cannot
// pause, so a solve ahead of it in line (an urgent one) would wait for all of it.
type Cores struct {
	n int

	mu      sync.Mutex
	free    int
	next    uint64 // the next turn's place
	waiting waiters
}

// NewCores returns a line for n cores (at least 1).
func NewCores(n int) *Cores {
	n = max(1, n)
	return &Cores{n: n, free: n}
}

// Size is how many cores the line hands out.
func (c *Cores) Size() int { return c.n }

// Turn is one solve's place in line, fixed when it is made.
type Turn struct {
	c      *Cores
	urgent bool
	seq    uint64
}

// Turn returns the place of a solve that starts now; urgent solves go before every
// solve that is not.
func (c *Cores) Turn(urgent bool) *Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &Turn{c: c, urgent: urgent, seq: c.next}
	c.next++
	return t
}

// ahead reports whether t goes before u.
func (t *Turn) ahead(u *Turn) bool {
	if t.urgent != u.urgent {
		return t.urgent
	}
	return t.seq < u.seq
}

type waiter struct {
	t     *Turn
	ready chan struct{} // closed when the waiter is given a core
	index int           // in the heap; -1 once given a core or removed
}

type waiters []*waiter

func (h waiters) Len() int           { return len(h) }
func (h waiters) Less(i, j int) bool { return h[i].t.ahead(h[j].t) }
func (h waiters) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiters) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}

// grant gives free cores to the waiters in line. Called with c.mu held.
func (c *Cores) grant() {
	for c.free > 0 && len(c.waiting) > 0 {
		w := heap.Pop(&c.waiting).(*waiter)
		c.free--
		close(w.ready)
	}
}

// acquire waits until t holds a core, or ctx is done; then it holds none.
func (t *Turn) acquire(ctx context.Context) error {
	c := t.c
	c.mu.Lock()
	if c.free > 0 { // then no one waits: grant leaves no free core beside a waiter
		c.free--
		c.mu.Unlock()
		return nil
	}
	w := &waiter{t: t, ready: make(chan struct{})}
	heap.Push(&c.waiting, w)
	c.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.index >= 0 {
		heap.Remove(&c.waiting, w.index)
	} else { // given a core meanwhile: pass it on
		c.free++
		c.grant()
	}
	return context.Cause(ctx)
}

// release gives back the core t holds.
func (t *Turn) release() {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.free == c.n {
		panic("synth: more cores released than acquired")
	}
	c.free++
	c.grant()
}

// yield passes t's core on when a solve ahead of t waits, and waits for one again;
// otherwise t keeps it. On an error t holds no core.
func (t *Turn) yield(ctx context.Context) error {
	c := t.c
	c.mu.Lock()
	if len(c.waiting) == 0 || !c.waiting[0].t.ahead(t) {
		c.mu.Unlock()
		return nil
	}
	c.free++
	c.grant()
	c.mu.Unlock()
	return t.acquire(ctx)
}

type turnKey struct{}

// WithTurn returns ctx with the solve's place in line: Solve under it takes the cores
// from t's line.
func WithTurn(ctx context.Context, t *Turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

func turnFrom(ctx context.Context) *Turn {
	t, _ := ctx.Value(turnKey{}).(*Turn)
	return t
}
