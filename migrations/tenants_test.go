package migrations_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cuzk/cuzk/internal/pgtest"
)

func scalarText(t *testing.T, q pgxQuerier, sql string, args ...any) string {
	t.Helper()
	var s *string
	if err := q.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if s == nil {
		return "<NULL>"
	}
	return *s
}

type pgxQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Another submitter's request_id is one error whatever the inputs guessed: bob's loop
// over candidate inputs of alice's request (the attack that found her private value)
// gets the same answer for every candidate, the right one included, and nothing that
// mentions inputs. alice's own resubmissions stay idempotent.
func TestSubmitProofIsNoOracleOfAnothersInputs(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	addCircuit(t, db, "d")
	_, alice := login(t, db, "alice", "cuzk_submitter")
	_, bob := login(t, db, "bob", "cuzk_submitter")
	var id int64
	if err := alice.QueryRow(ctx, `SELECT cuzk.submit_proof('alice-pin', 'c', '{"X": "4242"}'::jsonb)`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	var again int64
	if err := alice.QueryRow(ctx, `SELECT cuzk.submit_proof('alice-pin', 'c', '{"X": "4242"}'::jsonb)`).Scan(&again); err != nil || again != id {
		t.Fatalf("alice's identical resubmission: %d, %v; want %d", again, err, id)
	}

	// The reproduction: as bob, every candidate, collecting the distinct answers.
	conn, err := bob.Acquire(ctx) // the temporary table is the connection's
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE answers (candidate int, answer text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `
		DO $$
		BEGIN
			FOR x IN 4200..4300 LOOP
				BEGIN
					PERFORM cuzk.submit_proof('alice-pin', 'c', jsonb_build_object('X', x::text));
					INSERT INTO answers VALUES (x, 'accepted');
				EXCEPTION WHEN OTHERS THEN
					INSERT INTO answers VALUES (x, SQLSTATE || ': ' || SQLERRM);
				END;
			END LOOP;
		END $$`); err != nil {
		t.Fatal(err)
	}
	var answers []string
	rows, err := conn.Query(ctx, `SELECT DISTINCT answer FROM answers`)
	if err == nil {
		answers, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	want := `23505: request "alice-pin" already exists, submitted by another role`
	if len(answers) != 1 || answers[0] != want {
		t.Errorf("bob's 101 guesses got %q, want the one answer %q", answers, want)
	}
	// Nor another circuit, a witness, or the right inputs in another key order.
	for _, q := range []string{
		`SELECT cuzk.submit_proof('alice-pin', 'd', '{"X": "4242"}'::jsonb)`,
		`SELECT cuzk.submit_proof('alice-pin', 'c', witness => '\x00')`,
		`SELECT cuzk.submit_proof('alice-pin', 'c', '{ "X":"4242" }'::jsonb)`,
	} {
		_, err := bob.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code+": "+pe.Message != want || strings.Contains(pe.Hint+pe.Detail, "input") {
			t.Errorf("bob: %s: %v, want %q and nothing about inputs", q, err, want)
		}
	}
	// alice still learns of her own mistakes.
	_, err = alice.Exec(ctx, `SELECT cuzk.submit_proof('alice-pin', 'c', '{"X": "1"}'::jsonb)`)
	wantError(t, err, "23505", `request "alice-pin" already exists with different inputs`)
	var jobs int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs); err != nil || jobs != 1 {
		t.Errorf("%d River jobs, %v; want alice's one", jobs, err)
	}
}

// A submitter cancels and retries only its own requests; cuzk_operator acts on any.
func TestSubmitterActsOnlyOnItsOwnRequests(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	_, alice := login(t, db, "alice", "cuzk_submitter")
	bobName, bob := login(t, db, "bob", "cuzk_submitter")
	opName, op := login(t, db, "op", "cuzk_operator")
	for _, q := range []string{
		`SELECT cuzk.submit_proof('a1', 'c', '{"X": "1"}'::jsonb)`,
		`SELECT cuzk.submit_proof('a2', 'c', '{"X": "2"}'::jsonb)`,
		`SELECT cuzk.submit_proof('a3', 'c', '{"X": "3"}'::jsonb)`,
	} {
		if _, err := alice.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err := bob.Exec(ctx, `SELECT cuzk.cancel_proof('a1')`)
	wantError(t, err, "42501", `request "a1" was submitted by another role: role "`+bobName+`" may cancel only its own requests`)
	if st := scalarText(t, db.Pool, `SELECT state FROM cuzk.proof_requests WHERE request_id = 'a1'`); st != "queued" {
		t.Errorf("a1 after bob's cancel: %s, want queued", st)
	}
	// alice's own cancel; bob may not retry it.
	if _, err := alice.Exec(ctx, `SELECT cuzk.cancel_proof('a1')`); err != nil {
		t.Fatal(err)
	}
	_, err = bob.Exec(ctx, `SELECT cuzk.retry_proof('a1')`)
	wantError(t, err, "42501", `may retry only its own requests`)
	if st := scalarText(t, db.Pool, `SELECT state FROM cuzk.proof_requests WHERE request_id = 'a1'`); st != "cancelled" {
		t.Errorf("a1 after bob's retry: %s, want cancelled", st)
	}
	// The operator acts on alice's requests.
	if _, err := op.Exec(ctx, `SELECT cuzk.retry_proof('a1')`); err != nil {
		t.Errorf("operator retry_proof: %v", err)
	}
	if _, err := op.Exec(ctx, `SELECT cuzk.cancel_proof('a2')`); err != nil {
		t.Errorf("operator cancel_proof: %v", err)
	}
	if le := scalarText(t, db.Pool, `SELECT last_error FROM cuzk.proof_requests WHERE request_id = 'a2'`); le != "cancelled by role "+opName {
		t.Errorf("a2's last_error %q, want cancelled by role %s", le, opName)
	}
	if st := scalarText(t, db.Pool, `SELECT string_agg(request_id || '=' || state, ' ' ORDER BY request_id) FROM cuzk.proof_requests`); st != "a1=queued a2=cancelled a3=queued" {
		t.Errorf("states %s", st)
	}
}

// Priority 1 (urgent) is for roles granted cuzk_urgent (cuzk_operator is), through
// submit_proof and a plain insert alike.
func TestUrgentPriorityOnlyForGrantedRoles(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	bobName, bob := login(t, db, "bob", "cuzk_submitter")
	_, op := login(t, db, "op", "cuzk_operator")
	urgentName, urgent := login(t, db, "urgent", "cuzk_submitter")
	if _, err := db.Pool.Exec(ctx, `GRANT cuzk_urgent TO `+pgx.Identifier{urgentName}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_, err := bob.Exec(ctx, `SELECT cuzk.submit_proof('b1', 'c', '{"X": "1"}'::jsonb, priority => 1)`)
	wantError(t, err, "42501", `request "b1": priority 1 (urgent) is for roles granted cuzk_urgent, which role "`+bobName+`" is not`)
	_, err = bob.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority) VALUES ('b2', 'c', '{"X": "1"}', 1)`)
	wantError(t, err, "42501", `priority 1 (urgent) is for roles granted cuzk_urgent`)
	if _, err := bob.Exec(ctx, `SELECT cuzk.submit_proof('b3', 'c', '{"X": "1"}'::jsonb, priority => 2)`); err != nil {
		t.Errorf("bob at priority 2: %v", err)
	}
	if _, err := op.Exec(ctx, `SELECT cuzk.submit_proof('o1', 'c', '{"X": "1"}'::jsonb, priority => 1)`); err != nil {
		t.Errorf("operator at priority 1: %v", err)
	}
	if _, err := urgent.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority) VALUES ('u1', 'c', '{"X": "1"}', 1)`); err != nil {
		t.Errorf("a role granted cuzk_urgent at priority 1: %v", err)
	}
	if got := scalarText(t, db.Pool, `SELECT string_agg(request_id || ':' || priority, ' ' ORDER BY request_id) FROM cuzk.proof_requests`); got != "b3:2 o1:1 u1:1" {
		t.Errorf("stored %s, want b3:2 o1:1 u1:1", got)
	}
}

// cuzk.submitters.max_queued, set by an operator, caps a submitter's queued requests:
// an insert over it is refused whole, with an error naming the role and the limit;
// others are not limited.
func TestQueuedLimitRefusedAtInsert(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	aliceName, alice := login(t, db, "alice", "cuzk_submitter")
	_, bob := login(t, db, "bob", "cuzk_submitter")
	_, op := login(t, db, "op", "cuzk_operator")
	if _, err := op.Exec(ctx, `INSERT INTO cuzk.submitters (name, max_queued) VALUES ($1, 3)
	                            ON CONFLICT (name) DO UPDATE SET max_queued = EXCLUDED.max_queued`, aliceName); err != nil {
		t.Fatalf("operator sets a limit: %v", err)
	}
	_, err := alice.Exec(ctx, `UPDATE cuzk.submitters SET max_queued = NULL`)
	wantError(t, err, "42501", "permission denied")

	insert := `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
	           SELECT $1 || g, 'c', jsonb_build_object('X', g::text) FROM generate_series(1, $2) g`
	if _, err := alice.Exec(ctx, insert, "a", 2); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Exec(ctx, insert, "b", 2)
	wantError(t, err, "54000", `role "`+aliceName+`" may have at most 3 queued requests: this insert would exceed it`)
	if _, err := alice.Exec(ctx, `SELECT cuzk.submit_proof('c1', 'c', '{"X": "1"}'::jsonb)`); err != nil {
		t.Fatalf("the third: %v", err)
	}
	_, err = alice.Exec(ctx, `SELECT cuzk.submit_proof('c2', 'c', '{"X": "2"}'::jsonb)`)
	wantError(t, err, "54000", "may have at most 3 queued requests")
	if _, err := bob.Exec(ctx, insert, "bob", 10); err != nil {
		t.Errorf("bob has no limit: %v", err)
	}
	// A finished request makes room.
	if _, err := alice.Exec(ctx, `SELECT cuzk.cancel_proof('a1')`); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Exec(ctx, `SELECT cuzk.submit_proof('c2', 'c', '{"X": "2"}'::jsonb)`); err != nil {
		t.Errorf("after a cancel: %v", err)
	}
	if got := scalarText(t, db.Pool, `SELECT count(*)::text FROM cuzk.proof_requests WHERE submitted_by = $1`, aliceName); got != "4" {
		t.Errorf("alice has %s requests, want 4 (a1, a2, c1, c2)", got)
	}
}

// A NULL argument of submit_proof, or a NULL column of a plain insert, is an error
// naming it, with nothing of the request's inputs in the message, detail or hint
// (PostgreSQL's own not-null error prints the whole row, also to the server log).
func TestNullArgumentsNameThemselvesAndLeakNothing(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	_, sub := login(t, db, "sub", "cuzk_submitter")
	const secret = "31415926535897932384626"
	for _, c := range []struct{ q, want string }{
		{`SELECT cuzk.submit_proof('n1', 'c', $1::jsonb, max_attempts => NULL)`, `request "n1": max_attempts must not be NULL`},
		{`SELECT cuzk.submit_proof('n2', 'c', $1::jsonb, priority => NULL)`, `request "n2": priority must not be NULL`},
		{`SELECT cuzk.submit_proof('n3', NULL, $1::jsonb)`, `request "n3": circuit must not be NULL`},
		{`SELECT cuzk.submit_proof(NULL, 'c', $1::jsonb)`, `request_id must not be NULL`},
		{`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority) VALUES ('n4', 'c', $1, NULL)`, `request "n4": priority must not be NULL`},
		{`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, max_attempts) VALUES ('n5', 'c', $1, NULL)`, `request "n5": max_attempts must not be NULL`},
	} {
		_, err := sub.Exec(ctx, c.q, `{"X": "`+secret+`"}`)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23502" || pe.Message != c.want {
			t.Errorf("%s: %v, want 23502 %q", c.q, err, c.want)
			continue
		}
		if strings.Contains(pe.Message+pe.Detail+pe.Hint+pe.Where, secret) {
			t.Errorf("%s: the error shows the inputs: %+v", c.q, pe)
		}
	}
}

// The submitter recorded is the login, also after SET ROLE to a group it belongs to.
func TestSubmittedByIsTheLoginAfterSetRole(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	team, _ := login(t, db, "team", "cuzk_submitter")
	aliceName, alice := login(t, db, "alice", team)
	conn, err := alice.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET ROLE `+pgx.Identifier{team}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('i1', 'c', '{"X": "1"}')`,
		`SELECT cuzk.submit_proof('f1', 'c', '{"X": "1"}'::jsonb)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, `RESET ROLE`); err != nil {
		t.Fatal(err)
	}
	if got := scalarText(t, db.Pool, `SELECT string_agg(DISTINCT submitted_by, ',') FROM cuzk.proof_requests`); got != aliceName {
		t.Errorf("submitted_by %s, want the login %s", got, aliceName)
	}
}

// Workers' hosts, pids and settings are for workers and operators, not submitters.
func TestSubmittersCannotReadWorkers(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.workers (worker, host, pid, backend, config)
	                                 VALUES ('gpu7/99', 'gpu7', 99, 'cuda', '{"keys_dir": "/secret"}')`); err != nil {
		t.Fatal(err)
	}
	_, sub := login(t, db, "sub", "cuzk_submitter")
	_, op := login(t, db, "op", "cuzk_operator")
	_, err := sub.Exec(ctx, `SELECT host, pid, config FROM cuzk.workers`)
	wantError(t, err, "42501", "permission denied")
	if got := scalarText(t, op, `SELECT host FROM cuzk.workers`); got != "gpu7" {
		t.Errorf("operator reads host %s, want gpu7", got)
	}
}
