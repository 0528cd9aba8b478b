package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

// A request whose row another transaction keeps locked (its submitter's cancel or
// retry left open) is put back by a worker whose sessions run with lock_timeout, and
// that worker proves the next request meanwhile. Once the row is let go, the request
// is proven with the attempt it was going to have: the put-backs used none.
func TestClaimOfALockedRequestPutsItBack(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	for i, rid := range []string{"held", "free"} {
		in, err := synth.Inputs(circuit, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `SELECT cuzk.submit_proof($1, $2, $3::jsonb)`, rid, circuit, string(in)); err != nil {
			t.Fatal(err)
		}
	}
	hold, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(context.Background())
	if _, err := hold.Exec(ctx, `SELECT 1 FROM cuzk.proof_requests WHERE request_id = 'held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200ms" // as the worker command sets it
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the worker's stop, which startWorker registers next
	startWorker(t, pool, nil)

	if st, le := waitState(t, db.Pool, "free", "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("the other request while one is held: %s (%s)", st, le)
	}
	// The held request is tried and put back (River counts the snooze); no attempt of
	// it begins.
	const snoozes = `SELECT coalesce((metadata->>'snoozes')::int, 0) FROM river_job
	                  WHERE id = (SELECT job_id FROM cuzk.proof_requests WHERE request_id = 'held')`
	for deadline := time.Now().Add(3 * time.Minute); scalar(t, db.Pool, snoozes) < 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held request's job was not put back while its row was held")
		}
	}
	if n := scalar(t, db.Pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = 'held'`); n != 0 {
		t.Errorf("%d attempts of the held request while it was held, want 0", n)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if st, le := waitState(t, db.Pool, "held", "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("the held request once let go: %s (%s)", st, le)
	}
	if n := scalar(t, db.Pool, `SELECT attempts FROM cuzk.proof_requests WHERE request_id = 'held'`); n != 1 {
		t.Errorf("the held request took %d attempts, want 1", n)
	}

}
