package synth

import (
	"container/heap"
	"context"
	"fmt"
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
// passes the core on between tasks when a solve ahead of its own waits (Turn.yield);
// gnark's solver cannot be paused, so a solve on it holds its cores to the end.
type Cores struct {
	n int

	mu      sync.Mutex
	free    int
	next    uint64 // the next turn's place
	waiting waiters
	// collecting is the waiter first in line that holds part of what it asked for, if
	// any; only the first may hold part (grant).
	collecting *waiter
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
	k     int           // cores asked for
	need  int           // cores still to be granted
	ready chan struct{} // closed once need reaches 0
	index int           // in the heap; -1 once granted or removed
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

// grant gives free cores to the waiters in order. The first in line collects cores
// until it has all it asked for, so one that needs several is not passed over forever
// by those that need one; when a turn ahead of it comes, what it collected goes back,
// or waiters each holding part would wait on each other. Called with c.mu held.
func (c *Cores) grant() {
	if w := c.collecting; w != nil && (len(c.waiting) == 0 || c.waiting[0] != w) {
		c.free += w.k - w.need
		w.need = w.k
		c.collecting = nil
	}
	for c.free > 0 && len(c.waiting) > 0 {
		w := c.waiting[0]
		k := min(c.free, w.need)
		w.need -= k
		c.free -= k
		if w.need > 0 {
			c.collecting = w
			return
		}
		c.collecting = nil
		heap.Pop(&c.waiting)
		close(w.ready)
	}
}

// acquire waits until t holds k cores (1 <= k <= Size), or ctx is done; then it holds
// none.
func (t *Turn) acquire(ctx context.Context, k int) error {
	c := t.c
	if k < 1 || k > c.n {
		return fmt.Errorf("synth: %d cores asked of a line of %d", k, c.n)
	}
	c.mu.Lock()
	if len(c.waiting) == 0 && c.free >= k {
		c.free -= k
		c.mu.Unlock()
		return nil
	}
	w := &waiter{t: t, k: k, need: k, ready: make(chan struct{})}
	heap.Push(&c.waiting, w)
	c.grant()
	c.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := k - w.need // granted so far, all of it if ready closed meanwhile
	if w.index >= 0 {
		heap.Remove(&c.waiting, w.index)
	}
	if c.collecting == w {
		c.collecting = nil
	}
	c.free += held
	c.grant()
	return context.Cause(ctx)
}

// release gives back k cores that t holds.
func (t *Turn) release(k int) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.free += k
	if c.free > c.n {
		panic("synth: more cores released than acquired")
	}
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
	return t.acquire(ctx, 1)
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
