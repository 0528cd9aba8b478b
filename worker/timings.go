package worker

import "time"

// Timings is an attempt's time in each phase, by the names of package phase, as its
// stages measure it: a phase the attempt never reached has none. The stages fill it
// and store turns it into the attempt row's columns (store.Attempt.SetPhases). The
// zero value is empty and ready to use; like the item it belongs to, it is written by
// one stage at a time.
type Timings struct {
	d map[string]time.Duration
}

// Set records d as the time in phase name.
func (t *Timings) Set(name string, d time.Duration) {
	if t.d == nil {
		t.d = map[string]time.Duration{}
	}
	t.d[name] = d
}

// Get is the time in phase name; ok is false when the attempt never reached it.
func (t *Timings) Get(name string) (d time.Duration, ok bool) {
	d, ok = t.d[name]
	return d, ok
}

// Phases is every recorded phase's time, by name.
func (t *Timings) Phases() map[string]time.Duration { return t.d }
