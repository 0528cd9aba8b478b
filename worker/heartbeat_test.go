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

// A worker writes its first heartbeat before it claims anything: the row, with its
// River client ID, is what other workers hand its running jobs back by if it dies, so
// one killed before a late first heartbeat would leave them for --rescue-after.
func TestFirstHeartbeatBeforeAnyClaim(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	register(t, db.Pool, "synthetic-k6")
	insertRequests(t, db.Pool, "hb", "synthetic-k6", 1, 1)
	// Hold heartbeats back: a SHARE lock lets reads of cuzk.workers through and makes
	// the heartbeat's upsert wait.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, "LOCK TABLE cuzk.workers IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	startWorker(t, db.Pool, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
		                                  WHERE relation = 'cuzk.workers'::regclass AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat waited on cuzk.workers within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A started River fetches at once and then every poll interval (100 ms).
	time.Sleep(time.Second)
	var state string
	if err := db.Pool.QueryRow(ctx, `SELECT j.state FROM river_job j JOIN cuzk.proof_requests r ON r.job_id = j.id
	                                  WHERE r.request_id = 'hb-1'`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "available" {
		t.Fatalf("job %s while the worker's first heartbeat waits: claimed before the worker is in cuzk.workers", state)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if st, le := waitState(t, db.Pool, "hb-1", "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("hb-1: %s: %s", st, le)
	}
}
