package worker

import (
	"context"
	"sync"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// Urgent requests (priority 1) overtake the work of others wherever it waits: they are
// claimed through a queue of their own (jobs.UrgentQueue, Config.UrgentSlots), go
// first at the memory budget (Budget.ReserveUrgent) and at the provers (Worker.urgentCh),
// and a request of several partitions starts no further partition while an urgent
// request is on its way to a prover (urgentGate). What is already running (a
// partition's synthesis or proof) is not interrupted.

// urgent says whether the item's request is urgent.
func (it *item) urgent() bool { return isUrgent(it.req) }

// isUrgent says whether req is urgent.
func isUrgent(req *store.Request) bool { return req.Priority == jobs.UrgentPriority }

// urgentGate counts the urgent requests on their way to a prover (claimed, not yet
// in a prover's queue); partitions of other requests wait at it until there is none.
type urgentGate struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed while n is 0; nil until the first enter
}

func (g *urgentGate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.none = make(chan struct{})
	}
	g.n++
}

func (g *urgentGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 {
		close(g.none)
	}
}

// wait returns once no urgent request is on its way to a prover, or with ctx's cause.
func (g *urgentGate) wait(ctx context.Context) error {
	g.mu.Lock()
	none, n := g.none, g.n
	g.mu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-none:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// enqueue hands an item, with its attempt's record, to the collector; an urgent one is
// counted at the gate until it is in a prover's queue or done.
func (w *Worker) enqueue(it *item, att *attempt) {
	if it.urgent() {
		if it.queued == nil {
			it.queued = make(chan struct{})
		}
		w.urgent.enter()
		go func() {
			select {
			case <-it.queued:
			case <-it.done:
			}
			w.urgent.leave()
		}()
	}
	w.collector.add(&claimed{it: it, att: att})
}

// urgentRequest, as a context value, marks the reservations made under the context
// for an urgent request by code that does not see the request (the catalog's).
type urgentRequest struct{}

// reserveAs reserves n bytes of kind in b, as an urgent reservation when ctx is an
// urgent request's.
func reserveAs(ctx context.Context, b *Budget, kind string, n int64) (*Reservation, error) {
	if ctx.Value(urgentRequest{}) != nil {
		return b.ReserveUrgent(ctx, kind, n)
	}
	return b.ReserveFor(ctx, kind, n)
}
