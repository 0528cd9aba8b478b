package jobs_test

import (
	"context"
	"fmt"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/jobs"
)

// Example_submitProof submits a proof request through cuzk.submit_proof with pgx, as
// an orchestrator written in Go does, and follows it in cuzk.proof_status. Its login
// needs only the cuzk_submitter role. The request becomes a River job of Kind in
// Queue, which a cuzk worker claims.
func Example_submitProof() {
	ctx := context.Background()

	// Out of example scope: a private database, migrated, with a circuit set up (as
	// cuzk setup records it) and a login in the cuzk_submitter role.
	tb := pgtest.NewExampleTB()
	defer tb.Close()
	db := pgtest.New(tb)
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		VALUES ('sha256-preimage-b32', 1, 1, 1, '\x00', 'digest')`); err != nil {
		panic(err)
	}
	pool := pgtest.Login(tb, db.Pool, db.URL, db.Name+"_orchestrator", "cuzk_submitter")

	const submit = `SELECT cuzk.submit_proof(request_id => $1, circuit => $2, inputs => $3::jsonb, priority => 2)`
	inputs := `{"Digest": "0x6a09e667", "Preimage": "0x00"}`
	var id int64
	if err := pool.QueryRow(ctx, submit, "sector-1234", "sha256-preimage-b32", inputs).Scan(&id); err != nil {
		panic(err)
	}
	// Submitting the same request again (say, after a lost connection) returns the same
	// id and enqueues nothing.
	var again int64
	if err := pool.QueryRow(ctx, submit, "sector-1234", "sha256-preimage-b32", inputs).Scan(&again); err != nil {
		panic(err)
	}
	fmt.Println("same request:", again == id)

	var state string
	var attempts int
	if err := pool.QueryRow(ctx, `SELECT state, attempts FROM cuzk.proof_status WHERE request_id = $1`,
		"sector-1234").Scan(&state, &attempts); err != nil {
		panic(err)
	}
	fmt.Printf("state %s, %d attempts\n", state, attempts)

	// The River job is the workers' to read; the database owner looks here.
	var n int
	var kind, queue string
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), min(kind), min(queue) FROM river_job`).
		Scan(&n, &kind, &queue); err != nil {
		panic(err)
	}
	fmt.Printf("%d job of kind %s in queue %s: %v\n", n, kind, queue, kind == jobs.Kind && queue == jobs.Queue)

	// Output:
	// same request: true
	// state queued, 0 attempts
	// 1 job of kind cuzk_prove in queue cuzk: true
}
