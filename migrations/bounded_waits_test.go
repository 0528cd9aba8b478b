package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// A submitter that leaves a transaction open after an insert holds its own row of
// cuzk.submitters. The fleet's paths through that lock (a worker's claim of the
// submitter's job, the leader's admit_waiting) return while the transaction stays
// open, and another submitter's claims, upkeep and submissions go on; what was skipped
// is admitted by the upkeep once the transaction ends. Before, the claim waited for
// the transaction, and admit_waiting waited too while holding the row of every
// submitter before it, so those could not submit either.
func TestSubmittersOpenTransactionStallsNoOne(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	_, alice := login(t, db, "alice", "cuzk_submitter") // sorts before bob: admit_waiting reaches her first
	_, bob := login(t, db, "bob", "cuzk_submitter")
	_, wk := login(t, db, "wk", "cuzk_worker")
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '1' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	submit := func(who string, rid string) {
		t.Helper()
		pool := alice
		if who == "bob" {
			pool = bob
		}
		if _, err := pool.Exec(ctx, `SELECT cuzk.submit_proof($1, 'c', '{"X": "1"}'::jsonb)`, rid); err != nil {
			t.Fatalf("%s submits %s: %v", who, rid, err)
		}
	}
	submit("alice", "a1")
	submit("alice", "a2") // waits: one admitted per submitter and priority
	submit("bob", "b1")
	submit("bob", "b2") // waits

	// bob's insert in a transaction he leaves open holds his row of cuzk.submitters.
	hold, err := bob.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(context.Background())
	if _, err := hold.Exec(ctx, `SELECT cuzk.submit_proof('b3', 'c', '{"X": "3"}'::jsonb)`); err != nil {
		t.Fatal(err)
	}

	// Each step must return while bob's transaction is open; the bound only keeps a
	// regression from hanging the suite.
	step := func(what, sql string) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := wk.Exec(c, sql); err != nil {
			t.Fatalf("%s while bob's transaction is open: %v", what, err)
		}
	}
	// A worker claims bob's admitted job: his next one's admission is skipped.
	runJob(t, db.Pool, "b1")
	step("the claim of bob's b1", `UPDATE cuzk.proof_requests SET state = 'running', attempts = 1 WHERE request_id = 'b1'`)
	wantJob(t, db.Pool, "b2", "", 0)
	// The leader's upkeep skips bob, and keeps no row of alice's locked behind him.
	step("admit_waiting", `SELECT cuzk.admit_waiting()`)
	submit("alice", "a3")
	// A worker claims alice's a1: a2 is admitted.
	runJob(t, db.Pool, "a1")
	step("the claim of alice's a1", `UPDATE cuzk.proof_requests SET state = 'running', attempts = 1 WHERE request_id = 'a1'`)
	wantJob(t, db.Pool, "a2", "cuzk", 2)

	// Once bob's transaction ends, the upkeep admits what his lock made it skip.
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	step("admit_waiting", `SELECT cuzk.admit_waiting()`)
	wantJob(t, db.Pool, "b2", "cuzk", 2)
}
