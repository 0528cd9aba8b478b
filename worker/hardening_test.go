package worker_test

import (
	"bufio"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	cuzksql "github.com/cuzk/cuzk/sql"
	"github.com/cuzk/cuzk/synth"
)

// A value with far more digits than any field element (8M decimal digits, 100 hex
// digits) or a huge JSON number (as jsonb writes -1e100000) fails its request at once with a short error naming
// the field, and the worker goes on to the next request.
func TestOverlongValuesFailNamingTheField(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	good, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	field, _ := firstField(t, good)
	cases := []struct{ id, raw, want string }{
		{"decimal-8m", `"` + strings.Repeat("1", 8_000_000) + `"`, "value has 8000000 decimal digits, a field element at most 78"},
		{"hex-100", `"0x` + strings.Repeat("f", 100) + `"`, "value has 100 hex digits, a field element at most 64"},
		// jsonb keeps numbers as numeric, at most 131072 digits; -1e100000 comes back
		// written out, 100001 digits.
		{"number-100k", strings.Repeat("9", 100_000), "value has 100000 decimal digits, a field element at most 78"},
		{"exponent", `-1e100000`, "negative value -10000000000"},
	}
	ctx := context.Background()
	for _, c := range cases {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ($1, $2, $3::jsonb)`,
			c.id, circuit, jsonWith(t, good, field, c.raw)); err != nil {
			t.Fatalf("insert %s: %v", c.id, err)
		}
	}
	insertRequests(t, db.Pool, "good-after", circuit, 1, 2)
	startWorker(t, db.Pool, nil)
	for _, c := range cases {
		st, le := waitState(t, db.Pool, c.id, "failed", "succeeded")
		if st != "failed" || !strings.Contains(le, c.want) || !strings.Contains(le, field) || len(le) > 300 {
			t.Errorf("%s: %s with %d-byte error %.300q; want failed, naming %s and saying %q", c.id, st, len(le), le, field, c.want)
		}
		if n := scalar(t, db.Pool, `SELECT attempts FROM cuzk.proof_requests WHERE request_id = $1`, c.id); n != 1 {
			t.Errorf("%s: %d attempts, want 1 (bad input is not retried)", c.id, n)
		}
	}
	waitSucceeded(t, db.Pool, "good-after", 1)
}

func scalar(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// Error texts are bounded wherever they are kept: an input's megabyte field name is
// not repeated into last_error, the attempt's error, River's job errors or the log, and
// any error text over cuzksql.MaxErrorBytes is stored cut and marked so.
func TestGiantErrorsAreStoredCut(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	good, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := strings.Repeat("k", 1<<20)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('giant-key', $1, $2::jsonb)`,
		circuit, jsonWith(t, good, key, `"1"`)); err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	startWorkerWith(t, db.Pool, nil, log, nil)
	st, le := waitState(t, db.Pool, "giant-key", "failed", "succeeded")
	if st != "failed" || !strings.Contains(le, "unknown field") || len(le) > cuzksql.MaxErrorBytes {
		t.Errorf("giant key: %s with a %d-byte error %.300q; want failed, unknown field, at most %d bytes", st, len(le), le, cuzksql.MaxErrorBytes)
	}
	if n := scalar(t, db.Pool, `SELECT max(octet_length(error)) FROM cuzk.proof_attempts`); n > cuzksql.MaxErrorBytes {
		t.Errorf("attempt error of %d bytes", n)
	}
	if n := scalar(t, db.Pool, `SELECT coalesce(max(octet_length(e->>'error')), 0) FROM river_job j, unnest(j.errors) e`); n > cuzksql.MaxErrorBytes+64 {
		t.Errorf("River job error of %d bytes", n)
	}
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(sc.Text()) > 3*cuzksql.MaxErrorBytes {
			t.Errorf("log line of %d bytes: %.300s", len(sc.Text()), sc.Text())
		}
	}

	// Whatever the error, what is stored is cut, and says so.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('giant-error', $1, $2::jsonb)`, circuit, string(good)); err != nil {
		t.Fatal(err)
	}
	waitState(t, db.Pool, "giant-error", "succeeded", "failed")
	giant := strings.Repeat("é", 1<<19) // 1 MiB of two-byte characters
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE cuzk.proof_requests SET state = 'running' WHERE request_id = 'giant-error'`); err != nil {
			return err
		}
		if err := cuzksql.FinishAttempt(ctx, tx, &cuzksql.Attempt{RequestID: "giant-error", Attempt: 1, Outcome: "failed", Error: giant}); err != nil {
			return err
		}
		return cuzksql.SetRequestOutcome(ctx, tx, "giant-error", 1, giant, true)
	})
	if err != nil {
		t.Fatal(err)
	}
	const mark = "… [cut, 1048576 bytes total]"
	for _, q := range []string{
		`SELECT last_error FROM cuzk.proof_requests WHERE request_id = 'giant-error'`,
		`SELECT error FROM cuzk.proof_attempts WHERE request_id = 'giant-error'`,
	} {
		var s string
		if err := db.Pool.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if len(s) > cuzksql.MaxErrorBytes || !strings.HasSuffix(s, mark) || !strings.HasPrefix(s, "éé") {
			t.Errorf("%s: %d bytes ending %q; want at most %d ending %q", q, len(s), s[max(0, len(s)-40):], cuzksql.MaxErrorBytes, mark)
		}
	}
}

// A request whose witness has no bytes fails saying so, not that inputs JSON is empty.
func TestEmptyWitnessSaysWitness(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	if _, err := db.Pool.Exec(context.Background(), `INSERT INTO cuzk.proof_requests (request_id, circuit, witness) VALUES ('empty-witness', $1, '')`, circuit); err != nil {
		t.Fatal(err)
	}
	startWorker(t, db.Pool, nil)
	st, le := waitState(t, db.Pool, "empty-witness", "failed", "succeeded")
	if st != "failed" || !strings.Contains(le, "witness is empty") || strings.Contains(le, "JSON") {
		t.Errorf("empty witness: %s: %q; want failed, \"witness is empty\"", st, le)
	}
	if n := scalar(t, db.Pool, `SELECT attempts FROM cuzk.proof_requests WHERE request_id = 'empty-witness'`); n != 1 {
		t.Errorf("empty witness: %d attempts, want 1 (bad input is not retried)", n)
	}
}
