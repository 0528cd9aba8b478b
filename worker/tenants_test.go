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
