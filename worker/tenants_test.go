package worker_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// A request that waited without a River job for its submitter's turn counts the wait
// in its attempt's queue phase: here r2, waiting since an hour ago (as if behind a
// backlog) while r1 took the one admission, is claimed with queue_ms over an hour.
func TestQueuePhaseCountsTheWaitForAdmission(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '1' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"r1", "r2"} {
		in, err := synth.Inputs(circuit, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Submit(ctx, db.Pool, &store.Submission{RequestID: id, Circuit: circuit, Inputs: in}); err != nil {
			t.Fatal(err)
		}
	}
	tag, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET updated_at = now() - interval '1 hour'
	                                WHERE request_id = 'r2' AND job_id IS NULL`)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("r2 waiting without a job: %v, %d rows", err, tag.RowsAffected())
	}
	startWorker(t, db.Pool, nil)
	for _, id := range []string{"r1", "r2"} {
		if st, le := waitState(t, db.Pool, id, "succeeded", "failed"); st != "succeeded" {
			t.Fatalf("%s: %s: %s", id, st, le)
		}
	}
	var r1, r2 float64
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT queue_ms FROM cuzk.proof_attempts WHERE request_id = 'r1'),
	                                        (SELECT queue_ms FROM cuzk.proof_attempts WHERE request_id = 'r2')`).Scan(&r1, &r2); err != nil {
		t.Fatal(err)
	}
	if r2 < 3_600_000 || r1 >= 3_600_000 {
		t.Errorf("queue_ms r1 %.0f, r2 %.0f; want r2 over an hour (its wait) and r1 under", r1, r2)
	}
}

// A request whose River job was deleted through River (as River UI's delete does)
// before any worker ran is not stuck: the leader's upkeep gives it a new job, and it
// is proven.
func TestLeaderRequeuesRequestWhoseJobWasDeleted(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	in, err := synth.Inputs(circuit, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Submit(ctx, db.Pool, &store.Submission{RequestID: "orphan", Circuit: circuit, Inputs: in}); err != nil {
		t.Fatal(err)
	}
	var job int64
	if err := db.Pool.QueryRow(ctx, `SELECT job_id FROM cuzk.proof_requests WHERE request_id = 'orphan'`).Scan(&job); err != nil {
		t.Fatal(err)
	}
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.JobDelete(ctx, job); err != nil {
		t.Fatal(err)
	}
	startWorker(t, db.Pool, nil)
	if st, le := waitState(t, db.Pool, "orphan", "succeeded", "failed", "cancelled"); st != "succeeded" {
		t.Fatalf("orphan: %s: %s", st, le)
	}
	verifyStored(t, db.Pool, "orphan")
}
