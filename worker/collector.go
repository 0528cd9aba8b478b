package worker

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cuzk/cuzk/phase"
)

// batch is a group of requests for one circuit proven together, as the collector
// flushes it: its first stage (startBatch) gives it its memory.
type batch struct {
	id      uuid.UUID
	circuit string
	reqs    []*claimed
	mem     *batchMemory
}

// collector groups claimed requests by circuit. A group is flushed when it reaches
// maxBatch, when its oldest request has waited `wait`, or at once when a request more
// urgent than everything in the group arrives (it rides with the group rather than
// waiting behind it) or an urgent one (priority 1) does.
type collector struct {
	maxBatch int
	wait     time.Duration
	flush    func(*batch)

	mu     sync.Mutex
	groups map[string]*pendingGroup
}

type pendingGroup struct {
	reqs     []*claimed
	arrived  []time.Time // when each of reqs arrived
	priority int         // most urgent (lowest) priority in the group
	timer    *time.Timer
}

func newCollector(maxBatch int, wait time.Duration, flush func(*batch)) *collector {
	return &collector{maxBatch: maxBatch, wait: wait, flush: flush, groups: make(map[string]*pendingGroup)}
}

func (c *collector) add(r *claimed) {
	now := time.Now()
	it := r.it
	circuit := it.req.Circuit

	c.mu.Lock()
	g := c.groups[circuit]
	urgent := false
	if g == nil {
		g = &pendingGroup{priority: it.req.Priority}
		c.groups[circuit] = g
		if c.maxBatch > 1 {
			g.timer = time.AfterFunc(c.wait, func() { c.flushGroup(circuit, g) })
		}
	} else if it.req.Priority < g.priority {
		urgent = true
		g.priority = it.req.Priority
	}
	g.reqs = append(g.reqs, r)
	g.arrived = append(g.arrived, now)
	// An urgent request does not wait for company either.
	urgent = urgent || it.urgent()
	full := len(g.reqs) >= c.maxBatch
	c.mu.Unlock()

	if full || urgent {
		c.flushGroup(circuit, g)
	}
}

// flushGroup hands g to the pipeline unless it was flushed already.
func (c *collector) flushGroup(circuit string, g *pendingGroup) {
	c.mu.Lock()
	if c.groups[circuit] != g {
		c.mu.Unlock()
		return
	}
	delete(c.groups, circuit)
	if g.timer != nil {
		g.timer.Stop()
	}
	c.mu.Unlock()

	now := time.Now()
	for i, r := range g.reqs {
		r.att.clock.record(phase.BatchWait, now.Sub(g.arrived[i]))
	}
	c.flush(&batch{id: uuid.New(), circuit: circuit, reqs: g.reqs})
}
