package worker

import (
	"context"
	"fmt"
	"sync"
)

// Budget is one byte budget for everything a worker holds in memory on behalf of
// requests. A synthesis reserves its whole estimate before it starts and gives it back
// in two steps (Reservation.Shrink once the prover has consumed the a/b/c vectors,
// Release once the proof is stored). Waiters are served in arrival order, so a large
// request is not starved by a stream of small ones.
type Budget struct {
	total int64

	mu       sync.Mutex
	reserved int64
	live     int // reservations holding bytes
	peak     BudgetPeak
	waiters  []*budgetWaiter
}

// BudgetPeak is the most a budget has held at once since it was made.
type BudgetPeak struct {
	Bytes        int64 // bytes reserved
	Reservations int   // reservations holding bytes
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// NewBudget returns a budget of total bytes.
func NewBudget(total int64) *Budget { return &Budget{total: total} }

// Total is the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// Reserved is the number of bytes currently reserved.
func (b *Budget) Reserved() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserved
}

// Peak is the most the budget has held at once.
func (b *Budget) Peak() BudgetPeak {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// Waiting is the number of reservations waiting for bytes.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// TooLargeError says a request can never fit the budget; it fails at once rather than
// waiting forever.
type TooLargeError struct{ Need, Total int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("needs %d bytes of memory, more than the whole budget of %d bytes (raise --mem-budget)", e.Need, e.Total)
}

// Reserve blocks until n bytes are available (or ctx ends) and returns the reservation.
func (b *Budget) Reserve(ctx context.Context, n int64) (*Reservation, error) {
	if n > b.total {
		return nil, &TooLargeError{Need: n, Total: b.total}
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.reserved+n <= b.total {
		b.grantLocked(n)
		b.mu.Unlock()
		return &Reservation{b: b, n: n}, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return &Reservation{b: b, n: n}, nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted while we were giving up: hand it back
			b.releaseLocked(n, n > 0)
		default:
			for i, x := range b.waiters {
				if x == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
			b.wakeLocked() // we may have been blocking the head of the line
		}
		return nil, ctx.Err()
	}
}

// release gives back n bytes of a reservation; last says it holds none after.
func (b *Budget) release(n int64, last bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(n, last)
}

func (b *Budget) releaseLocked(n int64, last bool) {
	b.reserved -= n
	if last {
		b.live--
	}
	b.wakeLocked()
}

func (b *Budget) grantLocked(n int64) {
	b.reserved += n
	if n > 0 {
		b.live++
	}
	b.peak.Bytes = max(b.peak.Bytes, b.reserved)
	b.peak.Reservations = max(b.peak.Reservations, b.live)
}

func (b *Budget) wakeLocked() {
	for len(b.waiters) > 0 && b.reserved+b.waiters[0].n <= b.total {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.grantLocked(w.n)
		close(w.ready)
	}
}

// Reservation is bytes held in a Budget.
type Reservation struct {
	b  *Budget
	mu sync.Mutex
	n  int64
}

// Bytes is what the reservation still holds.
func (r *Reservation) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Shrink gives back all but keep bytes (the first release step).
func (r *Reservation) Shrink(keep int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if keep < r.n {
		r.b.release(r.n-keep, keep <= 0)
		r.n = keep
	}
}

// Release gives everything back; it is safe to call more than once.
func (r *Reservation) Release() { r.Shrink(0) }
