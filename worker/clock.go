package worker

import (
	"fmt"
	"time"

	"github.com/cuzk/cuzk/phase"
)

// attemptClock is an attempt's time in each phase, by the names of package phase: the
// stage that ends a phase records it, once. A phase the attempt never reached has no
// time. The clock travels with the attempt from stage to stage, so one stage at a time
// writes it. The closing phases, which the write of the attempt row measures (persist,
// total), are not kept in it: phases yields them with the rest, as often as a retried
// write asks. The queue phase is the database's (store.BeginAttempt).
type attemptClock struct {
	begun  time.Time     // when the attempt began (its job was taken)
	queued time.Duration // before begun, counted in total
	d      map[string]time.Duration
}

// newAttemptClock is the clock of an attempt that began at begun after being queued
// for queued.
func newAttemptClock(begun time.Time, queued time.Duration) *attemptClock {
	return &attemptClock{begun: begun, queued: max(queued, 0), d: map[string]time.Duration{}}
}

// record records d as the time in phase name. A phase recorded twice is a bug in
// the pipeline: it panics, and the stage's recover fails the attempt.
func (c *attemptClock) record(name string, d time.Duration) {
	if _, ok := c.d[name]; ok {
		panic(fmt.Sprintf("phase %s of an attempt recorded twice", name))
	}
	c.d[name] = d
}

// absorb adds other's phases, but for total, to c's: the clock of an attempt of several
// partitions sums its partitions' clocks.
func (c *attemptClock) absorb(other map[string]time.Duration) {
	for name, d := range other {
		if name != phase.Total {
			c.d[name] += d
		}
	}
}

// phaseTime is a closing phase's time, measured by the write that ends the attempt.
type phaseTime struct {
	name string
	d    time.Duration
}

// phases is every recorded phase's time, with the closing phases (added to what was
// recorded for them) and total as of at: from being queued to at. The clock is left as
// it was.
func (c *attemptClock) phases(at time.Time, closing ...phaseTime) map[string]time.Duration {
	out := make(map[string]time.Duration, len(c.d)+len(closing)+1)
	for name, d := range c.d {
		out[name] = d
	}
	for _, p := range closing {
		out[p.name] += p.d
	}
	out[phase.Total] = c.queued + at.Sub(c.begun)
	return out
}
