package faults

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// PostgreSQL restarted while two workers are busy: connections are cut (fast
// shutdown), the server is down for two seconds, and comes back. Both workers
// reconnect and finish every request exactly once; neither dies.
func TestPostgresRestartMidRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, cluster := clusterEnv(t, ctx)

	ids := e.submit("restart", small, 24, 5)
	a := e.start("restart-a")
	b := e.start("restart-b")
	e.waitFor(time.Minute, "some proofs stored before the restart", func(ctx context.Context) (bool, string, error) {
		var n int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM cuzk.proofs`).Scan(&n)
		return n >= 4, fmt.Sprintf("%d proofs", n), err
	})
	done := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proofs`)
	if err := cluster.Restart(ctx, 2*time.Second); err != nil {
		t.Fatalf("restart PostgreSQL: %v", err)
	}
	if done == len(ids) {
		t.Fatalf("every request was proven before the restart took effect; the test proves nothing")
	}
	e.waitStates(90*time.Second, "succeeded", ids)
	a.alive(t)
	b.alive(t)
	e.exactlyOnce(ids)
	// Both workers proved something after the restart: each reconnected, not just one.
	for _, w := range []string{"restart-a", "restart-b"} {
		if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE worker = $1 AND outcome = 'succeeded' AND finished_at > (SELECT pg_postmaster_start_time())`, w); n == 0 {
			t.Errorf("worker %s proved nothing after the restart", w)
		}
	}
	// Connection losses are retried inside an attempt, so the restart should cost no
	// attempts; a commit whose answer was lost can still cost one, so this is reported,
	// not required.
	t.Logf("%d of %d proven before the restart; %d attempts counted in all", done, len(ids),
		scalar[int](t, e.pool, `SELECT sum(attempts) FROM cuzk.proof_requests WHERE request_id = ANY($1)`, ids))
	for _, w := range []*proc{a, b} {
		w.signal(t, syscall.SIGTERM)
		if code := w.wait(t, 30*time.Second); code != 0 {
			t.Errorf("worker %s exited %d after SIGTERM, want 0", w.name, code)
		}
	}
}
