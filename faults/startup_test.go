package faults

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A worker started while PostgreSQL is down waits for it, saying so in its log, and
// proves once it is up; one stopped with SIGTERM while waiting exits 0. `cuzk migrate`,
// a one-shot command, still fails at once.
func TestWorkerStartedBeforePostgresWaits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, cluster := clusterEnv(t, ctx)
	ids := e.submit("early", small, 2, 5)
	if err := cluster.Pause(ctx); err != nil {
		t.Fatal(err)
	}

	a := e.start("early-a")
	b := e.start("early-b")
	const waiting = "database unavailable, waiting"
	for _, p := range []*proc{a, b} {
		e.waitFor(time.Minute, "worker "+p.name+" waits for the database twice", func(context.Context) (bool, string, error) {
			if p.exited() {
				t.Fatalf("worker %s exited (%v) instead of waiting for the database:\n%s", p.name, p.err, p.output())
			}
			return strings.Count(p.output(), waiting) >= 2, "log: " + p.output(), nil
		})
	}
	if _, err := runCmd(ctx, []string{"DATABASE_URL=" + e.url}, "migrate"); err == nil {
		t.Error("cuzk migrate succeeded with the database down")
	}
	b.signal(t, syscall.SIGTERM)
	if code := b.wait(t, 30*time.Second); code != 0 {
		t.Errorf("worker stopped while waiting for the database exited %d, want 0", code)
	}

	if err := cluster.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitStates(90*time.Second, "succeeded", ids)
	a.alive(t)
	e.exactlyOnce(ids)
}
