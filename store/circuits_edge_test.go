package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// pgCode is the PostgreSQL error code err wraps, "" when it wraps none.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// wantErr fails t unless err starts with the text that says what failed and wraps
// PostgreSQL's error code.
func wantErr(t *testing.T, err error, prefix, code string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) || pgCode(err) != code {
		t.Fatalf("got %v (code %q), want an error starting %q with code %s", err, pgCode(err), prefix, code)
	}
}

// testCircuit is a circuit row with one secret input and every limit recorded.
func testCircuit(name string, vk byte) *Circuit {
	return &Circuit{Name: name, Constraints: 10, SecretInputs: 1, Wires: 12, VK: []byte{vk}, PKDigest: "pk-" + name,
		MemEstimateBytes: 1 << 20, MaxInputsBytes: 1000}
}

func mustRegister(t *testing.T, db DB, c *Circuit) {
	t.Helper()
	if err := RegisterCircuit(context.Background(), db, c); err != nil {
		t.Fatal(err)
	}
}

func TestCircuitQueriesWithNoRows(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if names, err := CircuitNames(ctx, db.Pool); err != nil || len(names) != 0 {
		t.Errorf("CircuitNames: %v, %v; want none", names, err)
	}
	if sizes, err := CircuitSizes(ctx, db.Pool); err != nil || sizes == nil || len(sizes) != 0 {
		t.Errorf("CircuitSizes: %v, %v; want an empty map", sizes, err)
	}
	if v, vk, ok, err := CurrentKey(ctx, db.Pool, "nope"); err != nil || ok || v != 0 || vk != nil {
		t.Errorf("CurrentKey of an unknown circuit: %d, %x, %t, %v", v, vk, ok, err)
	}
	if d, ok, err := PKDigest(ctx, db.Pool, "nope"); err != nil || ok || d != "" {
		t.Errorf("PKDigest of an unknown circuit: %q, %t, %v", d, ok, err)
	}
	if v, err := keyVersion(ctx, db.Pool, "nope", ""); err != nil || v != nil {
		t.Errorf("keyVersion with no digest: %v, %v; want nil (the current version)", v, err)
	}
	_, err := keyVersion(ctx, db.Pool, "nope", VKDigest([]byte{1}))
	if err == nil || !strings.Contains(err.Error(), `proof of circuit "nope" was made with a key the database never registered`) {
		t.Errorf("keyVersion of an unknown key: %v", err)
	}
}

// A second registration under a name updates the row (the conflict on name); a new
// vk adds a key version and keeps the old one; the same vk adds none.
func TestRegisterCircuitConflicts(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	c := testCircuit("c", 1)
	mustRegister(t, db.Pool, c)
	c.Constraints = 20
	mustRegister(t, db.Pool, c) // same vk
	if v, vk, ok, err := CurrentKey(ctx, db.Pool, "c"); err != nil || !ok || v != 1 || string(vk) != "\x01" {
		t.Fatalf("after registering the same vk twice: version %d, vk %x, %t, %v; want version 1", v, vk, ok, err)
	}
	if sizes, err := CircuitSizes(ctx, db.Pool); err != nil || sizes["c"].Constraints != 20 {
		t.Fatalf("CircuitSizes %v, %v: want the second registration's 20 constraints", sizes, err)
	}
	var source string
	if err := db.Pool.QueryRow(ctx, "SELECT source FROM cuzk.circuits WHERE name = 'c'").Scan(&source); err != nil || source != "builtin" {
		t.Fatalf("source %q, %v; an empty Source registers as builtin", source, err)
	}

	c.VK, c.PKDigest = []byte{2}, "pk-2"
	mustRegister(t, db.Pool, c)
	if v, vk, _, err := CurrentKey(ctx, db.Pool, "c"); err != nil || v != 2 || string(vk) != "\x02" {
		t.Fatalf("after a new vk: version %d, vk %x, %v; want version 2", v, vk, err)
	}
	if d, ok, err := PKDigest(ctx, db.Pool, "c"); err != nil || !ok || d != "pk-2" {
		t.Fatalf("PKDigest %q, %t, %v", d, ok, err)
	}
	for vk, want := range map[byte]int{1: 1, 2: 2} {
		if v, err := keyVersion(ctx, db.Pool, "c", VKDigest([]byte{vk})); err != nil || v == nil || *v != want {
			t.Fatalf("key version of vk %x: %v, %v; want %d", vk, v, err, want)
		}
	}
	mustRegister(t, db.Pool, testCircuit("a", 1))
	if names, err := CircuitNames(ctx, db.Pool); err != nil || strings.Join(names, ",") != "a,c" {
		t.Fatalf("CircuitNames %v, %v; want a,c in order", names, err)
	}
}

// What the schema refuses comes back wrapped with the circuit's name and PostgreSQL's
// code: a name against the naming rule, and limits recorded for only half a circuit.
func TestRegisterCircuitRefused(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	wantErr(t, RegisterCircuit(ctx, db.Pool, testCircuit("Bad Name", 1)), `register circuit "Bad Name": `, "23514")
	c := testCircuit("c", 1)
	c.MaxInputsBytes = 0 // a circuit with inputs has a positive limit
	wantErr(t, RegisterCircuit(ctx, db.Pool, c), `register circuit "c": `, "23514")
	if names, err := CircuitNames(ctx, db.Pool); err != nil || len(names) != 0 {
		t.Fatalf("refused registrations left %v, %v", names, err)
	}
}
