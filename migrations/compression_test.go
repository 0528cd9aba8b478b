package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// A request's inputs and witness are stored with lz4 on a server built with it (both
// are compressible: JSON text, and witnesses mostly of zeros and ones); on one
// without, the migration leaves pglz and succeeds.
func TestRequestPayloadCompression(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	lz4 := serverHasLZ4(t, db.Pool)

	want := "pglz"
	if lz4 {
		want = "lz4"
	}
	for _, col := range []string{"inputs", "witness"} {
		var m string
		if err := db.Pool.QueryRow(ctx, `SELECT CASE attcompression WHEN 'l' THEN 'lz4' ELSE 'pglz' END
		                                   FROM pg_attribute WHERE attrelid = 'cuzk.proof_requests'::regclass AND attname = $1`, col).Scan(&m); err != nil {
			t.Fatal(err)
		}
		if m != want {
			t.Errorf("proof_requests.%s compression: %s, want %s", col, m, want)
		}
	}

	// A stored request is compressed with that method, and reads back whole.
	addCircuit(t, db, "c")
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.circuits SET secret_inputs = 1, max_inputs_bytes = 1000000 WHERE name = 'c'`); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 4000 {
		fmt.Fprintf(&b, `"Path.%d": "0x%064x",`, i, i%7)
	}
	b.WriteString(`"X": "1"}`)
	in := b.String()
	if _, err := db.Pool.Exec(ctx, `SELECT cuzk.submit_proof('big', 'c', $1::jsonb)`, in); err != nil {
		t.Fatal(err)
	}
	var got string
	var size, raw int64
	if err := db.Pool.QueryRow(ctx, `SELECT pg_column_compression(inputs), pg_column_size(inputs), octet_length(inputs::text)
	                                   FROM cuzk.proof_requests WHERE request_id = 'big'`).Scan(&got, &size, &raw); err != nil {
		t.Fatal(err)
	}
	if got != want || size >= raw/2 {
		t.Errorf("stored inputs: %s, %d bytes of %d as text; want %s and less than half", got, size, raw, want)
	}
	var same bool
	if err := db.Pool.QueryRow(ctx, `SELECT inputs = $1::jsonb FROM cuzk.proof_requests WHERE request_id = 'big'`, in).Scan(&same); err != nil || !same {
		t.Errorf("inputs read back differ (%v)", err)
	}
}

// serverHasLZ4 reports whether the server was built with lz4: only then does it accept
// the setting.
func serverHasLZ4(t *testing.T, db *pgxpool.Pool) bool {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SET LOCAL default_toast_compression = lz4`)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return true
	case errors.As(err, &pe) && pe.Code == "22023": // invalid_parameter_value
		return false
	default:
		t.Fatal(err)
		return false
	}
}
