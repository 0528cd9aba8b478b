package faults

import (
	"strings"
	"testing"
	"time"
)

// A worker killed with SIGKILL while every worker keeps a long --rescue-after (one
// hour, as long proofs need): its heartbeat stops, and a live worker hands its running
// jobs back after --dead-after instead of an hour later.
func TestKill9DeadWorkerRescuedByHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.submit("dead", big, 2, 5)
	flags := []string{"--heartbeat", "300ms", "--dead-after", "1s", "--rescue-after", "1h"}
	a := e.start("dead-a", flags...)
	e.runningCount("dead-a", 2, time.Minute)
	a.kill9(t)
	killed := time.Now()

	b := e.start("dead-b", flags...)
	// The dead worker was River's leader, so the jobs wait for a new leader (River's
	// leader term is 15 s) before its upkeep hands them back: about 20 s, far below
	// --rescue-after's hour, which is what this tells apart.
	e.waitStates(3*time.Minute, "succeeded", ids)
	took := time.Since(killed)
	t.Logf("dead worker's jobs proven %s after the kill", took.Round(100*time.Millisecond))
	if took > 2*time.Minute {
		t.Errorf("rescue took %s: the heartbeat, not --rescue-after, should have found the dead worker", took)
	}
	b.alive(t)
	e.exactlyOnce(ids)
	for _, id := range ids {
		outcome := scalar[string](t, e.pool, `SELECT outcome FROM cuzk.proof_attempts WHERE request_id = $1 AND attempt = 1`, id)
		worker := scalar[string](t, e.pool, `SELECT worker FROM cuzk.proof_attempts WHERE request_id = $1 AND attempt = 1`, id)
		if outcome != "interrupted" || worker != "dead-a" {
			t.Errorf("%s attempt 1: %s by %s, want interrupted by dead-a", id, outcome, worker)
		}
		errs := e.jobErrors(id)
		if !strings.Contains(errs, "worker dead-a stopped heartbeating") {
			t.Errorf("%s: River job errors %q do not say why it was rescued", id, errs)
		}
	}
	if stopped := scalar[bool](t, e.pool, `SELECT stopped_at IS NOT NULL FROM cuzk.workers WHERE worker = 'dead-a'`); !stopped {
		t.Error("the dead worker is not marked stopped in cuzk.workers")
	}
}
