package worker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// A value just over the digits of any field element (79 decimal, 65 hex, a 79-digit
// JSON number) fails its request at once with a short error naming the field, and the
// worker goes on to the next request. A value far longer (8M digits, a 100k-digit
// number, -1e100000 as jsonb writes it) never reaches the worker: such inputs are
// longer than any valid inputs of the circuit, and the insert refuses them.
func TestOverlongValuesFailNamingTheField(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	good, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	field, _ := firstField(t, good)
	ctx := context.Background()
	limit := scalar(t, db.Pool, `SELECT max_inputs_bytes FROM cuzk.circuits WHERE name = $1`, circuit)
	for id, raw := range map[string]string{
		"decimal-8m": `"` + strings.Repeat("1", 8_000_000) + `"`,
		// jsonb keeps numbers as numeric, at most 131072 digits; -1e100000 is written
		// out, 100001 digits.
		"number-100k": strings.Repeat("9", 100_000),
		"exponent":    `-1e100000`,
	} {
		_, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ($1, $2, $3::jsonb)`,
			id, circuit, jsonWith(t, good, field, raw))
		var pe *pgconn.PgError
		want := fmt.Sprintf(`the %d-byte limit for circuit "%s"`, limit, circuit)
		if !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Message, want) {
			t.Errorf("insert %s: %v; want refused (SQLSTATE 54000) over %s", id, err, want)
		}
	}
	cases := []struct{ id, raw, want string }{
		{"decimal-79", `"` + strings.Repeat("1", 79) + `"`, "value has 79 decimal digits, a field element at most 78"},
		{"hex-65", `"0x` + strings.Repeat("f", 65) + `"`, "value has 65 hex digits, a field element at most 64"},
		{"number-79", strings.Repeat("9", 79), "value has 79 decimal digits, a field element at most 78"},
	}
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
	if n := scalar(t, db.Pool, `SELECT count(*) FROM cuzk.proof_requests`); n != len(cases)+1 {
		t.Errorf("%d requests stored, want %d (none of the refused ones)", n, len(cases)+1)
	}
}

// A circuit's recorded limits are those of its real requests: its full-witness binary
// is exactly max_witness_bytes (one more byte is refused at insert), and its inputs in
// the usual flat form are well under max_inputs_bytes.
func TestRequestLimitsOfARegisteredCircuit(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "merkle-poseidon2-d4-c2"
	register(t, db.Pool, circuit)
	c, _, _ := keys.setup(t, circuit)
	inputs, err := synth.Inputs(circuit, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Witness(inputs)
	if err != nil {
		t.Fatal(err)
	}
	wit, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if n := scalar(t, db.Pool, `SELECT max_witness_bytes FROM cuzk.circuits WHERE name = $1`, circuit); n != len(wit) {
		t.Errorf("max_witness_bytes %d, the witness binary is %d bytes", n, len(wit))
	}
	if n := scalar(t, db.Pool, `SELECT max_inputs_bytes FROM cuzk.circuits WHERE name = $1`, circuit); int64(n) != c.MaxInputsBytes() || n < len(inputs) {
		t.Errorf("max_inputs_bytes %d; want synth's %d, over the %d bytes of real inputs", n, c.MaxInputsBytes(), len(inputs))
	}
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, witness) VALUES ('w', $1, $2)`, circuit, wit); err != nil {
		t.Errorf("the witness binary: %v", err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('i', $1, $2::jsonb)`, circuit, string(inputs)); err != nil {
		t.Errorf("the inputs: %v", err)
	}
	_, err = db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, witness) VALUES ('w+1', $1, $2)`, circuit, append(wit, 0))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Message, fmt.Sprintf("witness of %d bytes exceeds the %d-byte limit", len(wit)+1, len(wit))) {
		t.Errorf("a witness one byte longer: %v; want refused (SQLSTATE 54000)", err)
	}
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
// any error text over store.MaxErrorBytes is stored cut and marked so.
func TestGiantErrorsAreStoredCut(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	good, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Longer than any valid inputs: it reaches the worker only for a circuit whose
	// limit is not recorded (registered before limits were), so this one's is cleared.
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.circuits SET secret_inputs = NULL, max_inputs_bytes = NULL WHERE name = $1`, circuit); err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("k", 1<<20)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('giant-key', $1, $2::jsonb)`,
		circuit, jsonWith(t, good, key, `"1"`)); err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	startWorkerWith(t, db.Pool, nil, log, nil)
	st, le := waitState(t, db.Pool, "giant-key", "failed", "succeeded")
	if st != "failed" || !strings.Contains(le, "unknown field") || len(le) > store.MaxErrorBytes {
		t.Errorf("giant key: %s with a %d-byte error %.300q; want failed, unknown field, at most %d bytes", st, len(le), le, store.MaxErrorBytes)
	}
	if n := scalar(t, db.Pool, `SELECT max(octet_length(error)) FROM cuzk.proof_attempts`); n > store.MaxErrorBytes {
		t.Errorf("attempt error of %d bytes", n)
	}
	if n := scalar(t, db.Pool, `SELECT coalesce(max(octet_length(e->>'error')), 0) FROM river_job j, unnest(j.errors) e`); n > store.MaxErrorBytes+64 {
		t.Errorf("River job error of %d bytes", n)
	}
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(sc.Text()) > 3*store.MaxErrorBytes {
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
		if err := store.FinishAttempt(ctx, tx, &store.Attempt{RequestID: "giant-error", Attempt: 1, Outcome: "failed", Error: giant}); err != nil {
			return err
		}
		return store.SetRequestOutcome(ctx, tx, "giant-error", 1, giant, true)
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
		if len(s) > store.MaxErrorBytes || !strings.HasSuffix(s, mark) || !strings.HasPrefix(s, "éé") {
			t.Errorf("%s: %d bytes ending %q; want at most %d ending %q", q, len(s), s[max(0, len(s)-40):], store.MaxErrorBytes, mark)
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
