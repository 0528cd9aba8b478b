package worker

import (
	"context"
	"sync"
)

// batchMemory is the memory a batch's syntheses reserve in the worker's budget, one
// part per request. The batch owns it from take to release, and each request holds its
// part through a memHold that travels with its attempt: the request's synthesis takes
// the part before it starts, the batch's proof gives back all but a token of it once
// the solutions are consumed, and the rest goes once the request's attempt is
// recorded, whatever ended it (a proof, a failure, a cancel, a panic in any stage all
// deliver the attempt with its hold).
type batchMemory struct {
	budget *Budget
	mu     sync.Mutex
	parts  []*Reservation // by request of the batch; nil until taken, and once released
}

func newBatchMemory(b *Budget, n int) *batchMemory {
	return &batchMemory{budget: b, parts: make([]*Reservation, n)}
}

// hold is request i's part.
func (m *batchMemory) hold(i int) memHold { return memHold{m: m, i: i} }

// held is what the batch's parts hold now.
func (m *batchMemory) held() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, r := range m.parts {
		if r != nil {
			n += r.Bytes()
		}
	}
	return n
}

func (m *batchMemory) part(i int) *Reservation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[i]
}

// memHold is one request's part of its batch's memory; the zero value holds nothing.
type memHold struct {
	m *batchMemory
	i int
}

// take reserves the part's n bytes of synthesis memory, waiting for them as reserveAs
// does (an urgent request's context goes first).
func (h memHold) take(ctx context.Context, n int64) error {
	res, err := reserveAs(ctx, h.m.budget, KindSynthesis, n)
	if err != nil {
		return err
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.m.parts[h.i] != nil {
		res.Release()
		panic("a request's part of its batch's memory taken twice")
	}
	h.m.parts[h.i] = res
	return nil
}

// shrink is the first release step: the solution's vectors are gone but keep bytes of
// them (the wire values, until the proof is verified), and a token amount stays until
// the proof is stored. It returns the bytes given back.
func (h memHold) shrink(keep int64) int64 {
	r := h.m.part(h.i)
	if r == nil {
		return 0
	}
	n := r.Bytes()
	left := min(n, n/16+max(0, keep))
	r.Shrink(left)
	return n - left
}

// release gives the part back; it is safe to call more than once, and on a hold of
// nothing.
func (h memHold) release() {
	if h.m == nil {
		return
	}
	h.m.mu.Lock()
	r := h.m.parts[h.i]
	h.m.parts[h.i] = nil
	h.m.mu.Unlock()
	if r != nil {
		r.Release()
	}
}
