package migrations_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// A request whose own values break a CHECK of proof_requests is refused with a message
// naming the request and the rule, and a hint, not with the constraint's name and the
// whole row; the same through a plain INSERT and through submit_proof.
func TestRequestChecksSayWhatIsWrong(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	cases := []struct {
		name, sql, text, column string
	}{
		{"insert priority", `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority) VALUES ('r1', 'c', '{}', 7)`,
			`request "r1": priority must be 1 (most urgent) to 4, not 7`, "priority"},
		{"submit priority", `SELECT cuzk.submit_proof('r2', 'c', '{}'::jsonb, priority => 0)`,
			`request "r2": priority must be 1 (most urgent) to 4, not 0`, "priority"},
		{"max_attempts", `SELECT cuzk.submit_proof('r3', 'c', '{}'::jsonb, max_attempts => 101)`,
			`request "r3": max_attempts must be 1 to 100, not 101`, "max_attempts"},
		{"empty request_id", `SELECT cuzk.submit_proof('', 'c', '{}'::jsonb)`,
			`request_id must be 1 to 256 characters, not 0`, "request_id"},
		{"long request_id", `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES (repeat('x', 257), 'c', '{}')`,
			`request_id must be 1 to 256 characters, not 257`, "request_id"},
		{"inputs array of numbers", `SELECT cuzk.submit_proof('r4', 'c', '[{}, 2]'::jsonb)`,
			`request "r4": partition 1 of the inputs array is a JSON number, not an object`, "inputs"},
		{"empty inputs array", `SELECT cuzk.submit_proof('r5', 'c', '[]'::jsonb)`,
			`request "r5": inputs has 0 partitions, not 1 to 64`, "inputs"},
		{"inputs string", `SELECT cuzk.submit_proof('r6', 'c', '"x"'::jsonb)`,
			`request "r6": inputs must be a JSON object (or an array of them, one per partition), not a JSON string`, "inputs"},
	}
	for _, c := range cases {
		_, err := db.Pool.Exec(ctx, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want a check_violation", c.name, err)
			continue
		}
		if pe.Code != "23514" || pe.Message != c.text || pe.ColumnName != c.column || pe.ConstraintName != "" {
			t.Errorf("%s: got SQLSTATE %s %q (column %q, constraint %q), want 23514 %q on column %q",
				c.name, pe.Code, pe.Message, pe.ColumnName, pe.ConstraintName, c.text, c.column)
		}
		if strings.Contains(pe.Detail, "Failing row") {
			t.Errorf("%s: the error still carries the row: %s", c.name, pe.Detail)
		}
		if c.column != "request_id" && pe.Hint == "" {
			t.Errorf("%s: no hint", c.name)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM cuzk.proof_requests").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d requests were stored (%v), want none", n, err)
	}
	// The bounds themselves are accepted.
	if _, err := db.Pool.Exec(ctx, `SELECT cuzk.submit_proof('ok1', 'c', '{}'::jsonb, priority => 1, max_attempts => 1);
	                                 SELECT cuzk.submit_proof('ok4', 'c', '{}'::jsonb, priority => 4, max_attempts => 100)`); err != nil {
		t.Fatal(err)
	}
}

// A cancelled request's last_error names the role that cancelled it as a role.
func TestCancelledByRole(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	var ok, again bool
	var lastErr, user string
	if err := db.Pool.QueryRow(ctx, `SELECT cuzk.submit_proof('r', 'c', '{}'::jsonb) > 0, session_user`).Scan(&ok, &user); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT cuzk.cancel_proof('r')`).Scan(&ok); err != nil || !ok {
		t.Fatalf("cancel_proof: %v %v", ok, err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT cuzk.cancel_proof('r'), (SELECT last_error FROM cuzk.proof_status WHERE request_id = 'r')`).
		Scan(&again, &lastErr); err != nil {
		t.Fatal(err)
	}
	if again {
		t.Error("cancel_proof of a cancelled request returned true")
	}
	if want := "cancelled by role " + user; lastErr != want {
		t.Errorf("last_error %q, want %q", lastErr, want)
	}
}

// timing_history's p50, p95 and mean are rounded to 3 decimals (microseconds), in
// psql's text and as the double precision a client reads.
func TestTimingHistoryRounded(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
		SELECT 'r' || i, 'c', '{}' FROM generate_series(1, 3) i;
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, outcome, finished_at, synth_ms, total_ms)
		VALUES ('r1', 1, 'c', 'w', 'succeeded', now(), 108.65899999999999, 1),
		       ('r2', 1, 'c', 'w', 'succeeded', now(), 108.65899999999999, 2),
		       ('r3', 1, 'c', 'w', 'succeeded', now(), 108.65899999999999, 2)`); err != nil {
		t.Fatal(err)
	}
	var synth, totalText string
	var p50, p95, mean float64
	if err := db.Pool.QueryRow(ctx, `
		SELECT (SELECT p50_ms::text FROM cuzk.timing_history('1 hour', now() - interval '1 hour') WHERE phase = 'synth'),
		       (SELECT concat_ws(' ', p50_ms, p95_ms, mean_ms) FROM cuzk.timing_daily WHERE phase = 'total'),
		       p50_ms, p95_ms, mean_ms
		  FROM cuzk.timing_history('1 hour', now() - interval '1 hour') WHERE phase = 'total'`).
		Scan(&synth, &totalText, &p50, &p95, &mean); err != nil {
		t.Fatal(err)
	}
	if synth != "108.659" {
		t.Errorf("p50 of synth reads %s, want 108.659", synth)
	}
	if totalText != "2 2 1.667" {
		t.Errorf("timing_daily's total reads %q, want \"2 2 1.667\"", totalText)
	}
	if p50 != 2 || p95 != 2 || mean != 1.667 {
		t.Errorf("total p50 %v p95 %v mean %v, want 2 2 1.667", p50, p95, mean)
	}
}
