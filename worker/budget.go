package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Kinds of memory a budget counts, the labels of its reservations.
const (
	KindSynthesis = "synthesis" // a request's working set: witness, wires, a/b/c vectors
	KindCircuit   = "circuit"   // a compiled constraint system held for synthesis
	KindKey       = "key"       // host copies of proving keys
	KindStaging   = "staging"   // pinned host staging buffers of the GPU backends
	KindProcess   = "process"   // the process itself at start: runtime, code, connection pools
	KindPinned    = "pinned"    // pinned host copies of keys' streamed bases, made by the GPU library, while the key is resident
	KindOther     = "other"     // reservations made with Reserve, which names no kind
)

// Budget is one byte budget for everything a worker holds in memory: requests'
// working sets, compiled circuits, host copies of keys, staging buffers and the
// process itself. Each reservation is labelled with its kind, so that the bytes held
// per kind (and their peaks) can be shown. A synthesis reserves its whole estimate
// before it starts and gives it back in two steps (Reservation.Shrink once the prover
// has consumed the a/b/c vectors, Release once the proof is stored).
//
// Waiters are served in arrival order, so a large request is not starved by a stream
// of small ones, except that urgent waiters (ReserveUrgent) go before every waiter
// that is not. When a reservation must wait, the budget's reclaimer (SetReclaimer) is
// asked to free memory held for later use, such as idle compiled circuits.
type Budget struct {
	total int64

	mu       sync.Mutex
	reserved int64
	live     int // reservations holding bytes
	peak     BudgetPeak
	byKind   map[string]int64
	peakKind map[string]int64
	fixed    int64 // bytes of kinds held for the process's life (staging, process)
	waiters  []*budgetWaiter
	reclaim  func(need int64)
	onPinned func(bytes int64) // told what KindStaging and KindPinned hold when it changes
}

// BudgetPeak is the most a budget has held at once since it was made.
type BudgetPeak struct {
	Bytes        int64 // bytes reserved
	Reservations int   // reservations holding bytes
}

// KindBytes is what one kind of reservation holds now and the most it has held.
type KindBytes struct {
	Kind        string
	Bytes, Peak int64
}

type budgetWaiter struct {
	kind   string
	n      int64
	urgent bool
	ready  chan struct{}
}

// NewBudget returns a budget of total bytes.
func NewBudget(total int64) *Budget {
	return &Budget{total: total, byKind: map[string]int64{}, peakKind: map[string]int64{}}
}

// Total is the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// Room is what the budget can ever give to reservations that come and go: the total
// less what is held for the process's life (staging buffers, the process itself).
func (b *Budget) Room() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total - b.fixed
}

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

// Kinds is the bytes held now and at most per kind, for every kind that has held
// any, by kind.
func (b *Budget) Kinds() []KindBytes {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]KindBytes, 0, len(b.peakKind))
	for _, k := range slices.Sorted(maps.Keys(b.peakKind)) {
		out = append(out, KindBytes{Kind: k, Bytes: b.byKind[k], Peak: b.peakKind[k]})
	}
	return out
}

// Waiting is the number of reservations waiting for bytes.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// SetReclaimer sets f, which a reservation that must wait calls (without the budget's
// lock) with the bytes it lacks: f releases reservations that hold memory only for
// later use, such as idle compiled circuits.
func (b *Budget) SetReclaimer(f func(need int64)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reclaim = f
}

// OnPinned sets f, called (without the budget's lock, from the goroutine that made
// the change) with what reservations of KindStaging and KindPinned hold together,
// memory outside the Go heap, each time that changes, and once now: the process
// lowers the Go runtime's memory limit by it.
func (b *Budget) OnPinned(f func(bytes int64)) {
	b.mu.Lock()
	b.onPinned = f
	n := b.byKind[KindStaging] + b.byKind[KindPinned]
	b.mu.Unlock()
	f(n)
}

// pinnedChanged tells OnPinned's f what kind now means, when kind is outside the Go heap.
func (b *Budget) pinnedChanged(kind string) {
	if kind != KindStaging && kind != KindPinned {
		return
	}
	b.mu.Lock()
	f, n := b.onPinned, b.byKind[KindStaging]+b.byKind[KindPinned]
	b.mu.Unlock()
	if f != nil {
		f(n)
	}
}

// TooLargeError says a reservation can never fit the budget; it fails at once rather
// than waiting forever. Held is what the budget holds for the process's life (staging
// buffers, the process itself), which no reservation can use.
type TooLargeError struct{ Need, Total, Held int64 }

func (e *TooLargeError) Error() string {
	if e.Held == 0 {
		return fmt.Sprintf("needs %d bytes of memory, more than the whole budget of %d bytes (raise --mem-budget)", e.Need, e.Total)
	}
	return fmt.Sprintf("needs %d bytes of memory, more than the budget of %d bytes leaves (%d bytes, beside %d held by the process and its staging buffers; raise --mem-budget)",
		e.Need, e.Total, e.Total-e.Held, e.Held)
}

// Reserve is ReserveFor of kind KindOther.
func (b *Budget) Reserve(ctx context.Context, n int64) (*Reservation, error) {
	return b.reserve(ctx, KindOther, n, false)
}

// ReserveFor blocks until n bytes are available (or ctx ends) and returns the
// reservation, labelled kind. Reservations of KindStaging and KindProcess are held for
// the process's life: they shrink the room of every other reservation.
func (b *Budget) ReserveFor(ctx context.Context, kind string, n int64) (*Reservation, error) {
	return b.reserve(ctx, kind, n, false)
}

// ReserveUrgent is ReserveFor for an urgent request: it waits only behind other
// urgent reservations.
func (b *Budget) ReserveUrgent(ctx context.Context, kind string, n int64) (*Reservation, error) {
	return b.reserve(ctx, kind, n, true)
}

// ReserveHeld counts n bytes of kind that are allocated already (by a library, before
// they could be reserved): it grants them at once, ahead of every waiter and past the
// total if need be. While the budget is over its total no waiter is granted, so the
// caller can make room (releasing what it may drop) and keep what that frees, or give
// the reservation back when the budget stays over.
func (b *Budget) ReserveHeld(kind string, n int64) *Reservation {
	b.mu.Lock()
	b.grantLocked(kind, n)
	b.mu.Unlock()
	b.pinnedChanged(kind)
	return &Reservation{b: b, kind: kind, n: n}
}

func fixedKind(kind string) bool { return kind == KindStaging || kind == KindProcess }

func (b *Budget) reserve(ctx context.Context, kind string, n int64, urgent bool) (*Reservation, error) {
	b.mu.Lock()
	if room := b.total - b.fixed; n > room {
		b.mu.Unlock()
		return nil, &TooLargeError{Need: n, Total: b.total, Held: b.total - room}
	}
	if len(b.waiters) == 0 && b.reserved+n <= b.total {
		b.grantLocked(kind, n)
		b.mu.Unlock()
		b.pinnedChanged(kind)
		return &Reservation{b: b, kind: kind, n: n}, nil
	}
	w := &budgetWaiter{kind: kind, n: n, urgent: urgent, ready: make(chan struct{})}
	at := len(b.waiters)
	if urgent {
		at = 0
		for at < len(b.waiters) && b.waiters[at].urgent {
			at++
		}
	}
	b.waiters = slices.Insert(b.waiters, at, w)
	b.wakeLocked() // an urgent waiter at the head may fit where the old head did not
	// What it lacks counts the waiters served before it.
	lack := int64(0)
	if i := slices.Index(b.waiters, w); i >= 0 {
		lack = b.reserved - b.total
		for _, x := range b.waiters[:i+1] {
			lack += x.n
		}
	}
	reclaim := b.reclaim
	b.mu.Unlock()
	if reclaim != nil && lack > 0 {
		reclaim(lack)
	}

	select {
	case <-w.ready:
		b.pinnedChanged(kind)
		return &Reservation{b: b, kind: kind, n: n}, nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted while we were giving up: hand it back
			b.releaseLocked(kind, n, n > 0)
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

// release gives back n bytes of a reservation of kind; last says it holds none after.
func (b *Budget) release(kind string, n int64, last bool) {
	b.mu.Lock()
	b.releaseLocked(kind, n, last)
	b.mu.Unlock()
	b.pinnedChanged(kind)
}

func (b *Budget) releaseLocked(kind string, n int64, last bool) {
	b.reserved -= n
	b.byKind[kind] -= n
	if fixedKind(kind) {
		b.fixed -= n
	}
	if last {
		b.live--
	}
	b.wakeLocked()
}

func (b *Budget) grantLocked(kind string, n int64) {
	b.reserved += n
	b.byKind[kind] += n
	if fixedKind(kind) {
		b.fixed += n
	}
	if n > 0 {
		b.live++
	}
	b.peak.Bytes = max(b.peak.Bytes, b.reserved)
	b.peak.Reservations = max(b.peak.Reservations, b.live)
	b.peakKind[kind] = max(b.peakKind[kind], b.byKind[kind])
}

func (b *Budget) wakeLocked() {
	for len(b.waiters) > 0 && b.reserved+b.waiters[0].n <= b.total {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.grantLocked(w.kind, w.n)
		close(w.ready)
	}
}

// Reservation is bytes held in a Budget.
type Reservation struct {
	b    *Budget
	kind string
	mu   sync.Mutex
	n    int64
}

// Bytes is what the reservation still holds.
func (r *Reservation) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Kind is the reservation's label.
func (r *Reservation) Kind() string { return r.kind }

// Shrink gives back all but keep bytes (the first release step).
func (r *Reservation) Shrink(keep int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if keep < r.n {
		r.b.release(r.kind, r.n-keep, keep <= 0)
		r.n = keep
	}
}

// Release gives everything back; it is safe to call more than once.
func (r *Reservation) Release() { r.Shrink(0) }

// EachKind calls f with each kind's bytes held now and at most (Kinds), for metrics.
func (b *Budget) EachKind(f func(kind string, bytes, peak int64)) {
	for _, k := range b.Kinds() {
		f(k.Kind, k.Bytes, k.Peak)
	}
}

// PeakBytes is the most bytes the budget has held at once (Peak().Bytes).
func (b *Budget) PeakBytes() int64 { return b.Peak().Bytes }
