package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/worker"
)

// Each process start adds a cuzk.workers row; the leader's upkeep deletes those stopped over
// a week ago and keeps the rest.
func TestHeartbeatPrunesLongStoppedWorkers(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.workers (worker, host, pid, backend, started_at, last_seen_at, stopped_at) VALUES
		    ('old/1', 'old', 1, 'cpu', now() - interval '9 days', now() - interval '8 days', now() - interval '8 days'),
		    ('recent/2', 'recent', 2, 'cpu', now() - interval '2 days', now() - interval '1 day', now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	startWorker(t, db.Pool, func(c *worker.Config) {
		c.HeartbeatEvery = 100 * time.Millisecond
		c.DeadAfter = time.Second
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		var old, recent int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE worker = 'old/1'), count(*) FILTER (WHERE worker = 'recent/2')
		                                    FROM cuzk.workers`).Scan(&old, &recent); err != nil {
			t.Fatal(err)
		}
		if recent != 1 {
			t.Fatal("a worker stopped a day ago was deleted")
		}
		if old == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a worker stopped 8 days ago is still in cuzk.workers")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
