package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

// loginAs creates a login role that is a member of group (none when empty), and returns
// a pool connected to db as that role.
func loginAs(t *testing.T, db *pgtest.DB, group string) *pgxpool.Pool {
	t.Helper()
	role := strings.TrimPrefix(group, "cuzk_")
	if role == "" {
		role = "none"
	}
	return pgtest.Login(t, db.Pool, db.URL, db.Name+"_"+role, group) // database names are unique, so are these
}

func wantDenied(t *testing.T, pool *pgxpool.Pool, what, query string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), query, args...)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("%s: got %v, want permission denied (42501)", what, err)
	}
}

func wantAllowed(t *testing.T, pool *pgxpool.Pool, what, query string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), query, args...); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestRolesSubmitterAndWorker(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	sub := loginAs(t, db, "cuzk_submitter")
	wrk := loginAs(t, db, "cuzk_worker")
	nobody := loginAs(t, db, "")

	in1, err := synth.Inputs(circuit, 1)
	if err != nil {
		t.Fatal(err)
	}
	in2, err := synth.Inputs(circuit, 2)
	if err != nil {
		t.Fatal(err)
	}

	// What an orchestrator does.
	wantAllowed(t, sub, "submit_proof", "SELECT cuzk.submit_proof(request_id => 'r-fn', circuit => $1, inputs => $2::jsonb)", circuit, string(in1))
	wantAllowed(t, sub, "plain insert", "INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('r-insert', $1, $2::jsonb)", circuit, string(in2))
	wantAllowed(t, sub, "cancel_proof", "SELECT cuzk.submit_proof('r-cancel', $1, $2::jsonb, priority => 4)", circuit, string(in1))
	for _, q := range []string{
		"SELECT state, attempts, last_error FROM cuzk.proof_status",
		"SELECT request_id, state, attempts FROM cuzk.proof_requests",
		"SELECT proof, public_witness FROM cuzk.proofs",
		"SELECT * FROM cuzk.proof_attempts",
		"SELECT vk FROM cuzk.circuits",
		"SELECT * FROM cuzk.timing_history('1 hour', now() - interval '1 day')",
		"SELECT * FROM cuzk.attempt_phases",
	} {
		wantAllowed(t, sub, "submitter reads: "+q, q)
	}

	// What it must not do.
	denied := []struct{ what, q string }{
		{"read inputs", "SELECT inputs FROM cuzk.proof_requests"},
		{"read witness", "SELECT witness FROM cuzk.proof_requests"},
		{"read whole requests", "SELECT * FROM cuzk.proof_requests"},
		{"change a request", "UPDATE cuzk.proof_requests SET state = 'succeeded'"},
		{"write a proof", "INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend) VALUES ('r-fn', 'x', '', '', 1, 'w', 'cpu')"},
		{"change proofs", "UPDATE cuzk.proofs SET proof = ''"},
		{"delete proofs", "DELETE FROM cuzk.proofs"},
		{"change attempts", "UPDATE cuzk.proof_attempts SET outcome = 'succeeded'"},
		{"delete attempts", "DELETE FROM cuzk.proof_attempts"},
		{"change circuits", "UPDATE cuzk.circuits SET vk = ''"},
		{"add circuits", "INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('evil', 1, 0, 1, '', '')"},
		{"enqueue directly", "SELECT cuzk.enqueue('r-fn')"},
		{"touch River's jobs", "DELETE FROM public.river_job"},
	}
	for _, d := range denied {
		wantDenied(t, sub, "submitter must not "+d.what, d.q)
	}
	wantDenied(t, nobody, "a role outside cuzk must not submit",
		"SELECT cuzk.submit_proof('r-nobody', $1, $2::jsonb)", circuit, string(in1))

	var cancelled bool
	if err := sub.QueryRow(context.Background(), "SELECT cuzk.cancel_proof('r-cancel')").Scan(&cancelled); err != nil || !cancelled {
		t.Fatalf("submitter cancel_proof: %v, %v", cancelled, err)
	}

	// A worker connected as cuzk_worker claims, proves and stores.
	startWorker(t, wrk, nil)
	for _, rid := range []string{"r-fn", "r-insert"} {
		if st, le := waitState(t, db.Pool, rid, "succeeded", "failed"); st != "succeeded" {
			t.Fatalf("%s as cuzk_worker: %s: %s", rid, st, le)
		}
		verifyStored(t, db.Pool, rid)
	}
	waitState(t, db.Pool, "r-cancel", "cancelled")
	var workers int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM cuzk.workers WHERE worker <> ''").Scan(&workers); err != nil || workers == 0 {
		t.Errorf("worker heartbeat as cuzk_worker: %d rows, %v", workers, err)
	}
	// The dashboard of a worker connected as cuzk_worker keeps the hourly rollup, and a
	// submitter reads it.
	wantAllowed(t, wrk, "worker fills the hourly rollup", "SELECT cuzk.fill_attempt_hours(now() - interval '1 day')")
	wantAllowed(t, sub, "submitter reads the hourly rollup", "SELECT * FROM cuzk.attempt_hours")
	wantDenied(t, sub, "submitter must not write the hourly rollup", "SELECT cuzk.fill_attempt_hours(now() - interval '2 days')")
	// The worker role is not an orchestrator's: it cannot submit.
	wantDenied(t, wrk, "worker must not submit", "SELECT cuzk.submit_proof('r-w', $1, $2::jsonb)", circuit, string(in1))

	// Retry through the submitter role after a failure.
	wantAllowed(t, db.Pool, "mark failed", "UPDATE cuzk.proof_requests SET state = 'failed' WHERE request_id = 'r-cancel'")
	var jobID *int64
	if err := sub.QueryRow(context.Background(), "SELECT cuzk.retry_proof('r-cancel')").Scan(&jobID); err != nil || jobID == nil {
		t.Fatalf("submitter retry_proof: %v, %v", jobID, err)
	}
}

// A worker connected as cuzk_worker proves every submitter's requests, and each
// submitter then reads its own request, proof and attempts and none of another's.
func TestRolesWorkerProvesEverySubmittersOwnRows(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	alice := pgtest.Login(t, db.Pool, db.URL, db.Name+"_alice", "cuzk_submitter")
	bob := pgtest.Login(t, db.Pool, db.URL, db.Name+"_bob", "cuzk_submitter")
	wrk := loginAs(t, db, "cuzk_worker")
	submitters := map[string]*pgxpool.Pool{"r-alice": alice, "r-bob": bob}
	for rid, pool := range submitters {
		in, err := synth.Inputs(circuit, uint64(len(rid)))
		if err != nil {
			t.Fatal(err)
		}
		wantAllowed(t, pool, "submit "+rid, "SELECT cuzk.submit_proof($1, $2, $3::jsonb)", rid, circuit, string(in))
	}

	startWorker(t, wrk, nil)
	for rid, pool := range submitters {
		if st, le := waitState(t, pool, rid, "succeeded", "failed"); st != "succeeded" {
			t.Fatalf("%s as cuzk_worker: %s: %s", rid, st, le)
		}
		verifyStored(t, pool, rid) // by its submitter, with gnark alone
	}
	for rid, pool := range submitters {
		for _, q := range []string{
			"SELECT request_id FROM cuzk.proof_status",
			"SELECT request_id FROM cuzk.proofs",
			"SELECT DISTINCT request_id FROM cuzk.proof_attempts",
			"SELECT DISTINCT request_id FROM cuzk.attempt_phases",
		} {
			var got []string
			rows, err := pool.Query(ctx, q)
			if err == nil {
				got, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
			if err != nil || len(got) != 1 || got[0] != rid {
				t.Errorf("the submitter of %s: %s: %v, %v; want only %s", rid, q, got, err, rid)
			}
		}
	}
}
