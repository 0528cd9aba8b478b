package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A worker killed with SIGKILL while every worker keeps a long --rescue-after (one
// hour, as long proofs need): its heartbeat stops, and a live worker hands its running
// jobs back after --dead-after instead of an hour later.
func TestKill9DeadWorkerRescuedByHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// More requests than the worker holds at once (3), so that it stays inside several
	// attempts for seconds however fast it proves; the ones still running when it dies
	// are the ones the heartbeat must rescue.
	ids := e.submit("dead", big, 8, 5)
	flags := []string{"--heartbeat", "300ms", "--dead-after", "1s", "--rescue-after", "1h"}
	a := e.start("dead-a", flags...)
	e.waitFor(time.Minute, "worker dead-a inside 2 attempts", func(ctx context.Context) (bool, string, error) {
		n := len(e.runningBy(ctx, "dead-a"))
		return n >= 2, fmt.Sprintf("%d running", n), nil
	})
	a.kill9(t)
	killed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	inflight := e.runningBy(ctx, "dead-a") // dead: nothing changes them until the rescue
	cancel()
	if len(inflight) == 0 {
		t.Fatal("dead-a was killed with no attempt running")
	}

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
	for _, id := range inflight {
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

// runningBy is the requests of worker's attempts still marked running, sorted.
func (e *env) runningBy(ctx context.Context, worker string) []string {
	e.t.Helper()
	rows, err := e.pool.Query(ctx, `SELECT request_id FROM cuzk.proof_attempts WHERE worker = $1 AND outcome = 'running'`, worker)
	if err != nil {
		e.t.Fatalf("attempts running by %s: %v", worker, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatalf("attempts running by %s: %v", worker, err)
	}
	slices.Sort(ids)
	return ids
}
