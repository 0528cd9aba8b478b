package worker

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/phase"
)

// Each phase is recorded once; the closing phases and total come with the yield,
// which leaves the clock as it was, so a retried write yields the same phases again.
func TestAttemptClockPhases(t *testing.T) {
	begun := time.Now()
	c := newAttemptClock(begun, 3*time.Millisecond)
	c.record(phase.BatchWait, time.Millisecond)
	c.record(phase.Synth, 5*time.Millisecond)

	at := begun.Add(20 * time.Millisecond)
	got := c.phases(at, phaseTime{phase.Persist, 2 * time.Millisecond})
	want := map[string]time.Duration{phase.BatchWait: time.Millisecond, phase.Synth: 5 * time.Millisecond,
		phase.Persist: 2 * time.Millisecond, phase.Total: 23 * time.Millisecond}
	if !maps.Equal(got, want) {
		t.Fatalf("phases %v, want %v", got, want)
	}
	if again := c.phases(at, phaseTime{phase.Persist, 2 * time.Millisecond}); !maps.Equal(again, want) {
		t.Fatalf("a second yield %v, want %v", again, want)
	}
	if _, ok := c.phases(at)[phase.Persist]; ok {
		t.Fatal("persist kept in the clock after a yield")
	}

	defer func() {
		p := recover()
		if p == nil || !strings.Contains(p.(string), "synth") {
			t.Fatalf("recorded synth twice: %v, want a panic naming it", p)
		}
	}()
	c.record(phase.Synth, time.Millisecond)
}

// The clock of an attempt of partitions sums its partitions' phases, but for their
// totals: its own total spans the attempt.
func TestAttemptClockAbsorbsPartitions(t *testing.T) {
	begun := time.Now()
	all := newAttemptClock(begun, 0)
	for i := range 2 {
		p := newAttemptClock(begun, 0)
		p.record(phase.Synth, time.Duration(i+1)*time.Millisecond)
		all.absorb(p.phases(begun.Add(time.Hour), phaseTime{phase.Persist, time.Millisecond}))
	}
	got := all.phases(begun.Add(10*time.Millisecond), phaseTime{phase.Persist, time.Millisecond})
	want := map[string]time.Duration{phase.Synth: 3 * time.Millisecond, phase.Persist: 3 * time.Millisecond,
		phase.Total: 10 * time.Millisecond}
	if !maps.Equal(got, want) {
		t.Fatalf("phases %v, want %v", got, want)
	}
}
