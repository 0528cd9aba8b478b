// Package phase is the one list of the timed phases of a proof attempt: the name each
// goes by (cuzk.attempt_phases.phase, metric labels, regress series), its place in the
// pipeline (attempt_phases.ord), the cuzk.proof_attempts column that holds it in
// milliseconds, and the phase whose time includes it. The attempt row, metrics, the
// dashboard and regress take the list from here; the timing views in package
// migrations spell it in SQL, and a test holds them to this one.
package phase

// Names of the phases.
const (
	Queue     = "queue"      // from being queued to being claimed
	BatchWait = "batch_wait" // in the batch collector
	MemWait   = "mem_wait"   // for the memory budget, then a synthesis slot
	SRS       = "srs"        // for the proving key (load, or wait on another's load)
	Synth     = "synth"      // witness synthesis and solving
	ProveWait = "prove_wait" // in the bounded channel before a prover took it
	Prove     = "prove"      // on the backend
	H2D       = "h2d"        // host to device transfers
	NTT       = "ntt"        // computing H
	MSM       = "msm"        // all MSMs, wall time
	MSMG1     = "msm_g1"     // G1 MSMs (may overlap the G2 ones)
	MSMG2     = "msm_g2"     // G2 MSMs
	Verify    = "verify"     // checking the proof
	Persist   = "persist"    // storing proof and attempt
	Total     = "total"      // from being queued to being stored
)

// Phase is one timed phase of an attempt.
type Phase struct {
	Name   string
	Ord    int    // pipeline order, from 1: cuzk.attempt_phases.ord
	Column string // the cuzk.proof_attempts column, in milliseconds
	Inside string // the phase whose time includes this one's; "" only for Total
}

// All returns every phase in pipeline order (a fresh slice: callers may keep it). Total
// comes last; a phase inside any other comes after that one, with only that one's
// other inner phases between them.
func All() []Phase {
	return []Phase{
		{Queue, 1, "queue_ms", Total},
		{BatchWait, 2, "batch_wait_ms", Total},
		{MemWait, 3, "mem_wait_ms", Total},
		{SRS, 4, "srs_ms", Total},
		{Synth, 5, "synth_ms", Total},
		{ProveWait, 6, "prove_wait_ms", Total},
		{Prove, 7, "prove_ms", Total},
		{H2D, 8, "h2d_ms", Prove},
		{NTT, 9, "ntt_ms", Prove},
		{MSM, 10, "msm_ms", Prove},
		{MSMG1, 11, "msm_g1_ms", MSM},
		{MSMG2, 12, "msm_g2_ms", MSM},
		{Verify, 13, "verify_ms", Total},
		{Persist, 14, "persist_ms", Total},
		{Total, 15, "total_ms", ""},
	}
}

// Lookup is the phase called name.
func Lookup(name string) (Phase, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// Order is name's Ord, and for a name not in the list one past the last, so that
// sorting by it puts unknown names after every phase.
func Order(name string) int {
	if p, ok := Lookup(name); ok {
		return p.Ord
	}
	return len(All()) + 1
}

// Stacked returns the phases directly inside Total, in order: they follow one another,
// so their times add up to about the total (the dashboard stacks them).
func Stacked() []Phase {
	var out []Phase
	for _, p := range All() {
		if p.Inside == Total {
			out = append(out, p)
		}
	}
	return out
}

// Names returns the names of ps, in their order.
func Names(ps []Phase) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}
