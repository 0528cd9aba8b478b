package migrations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// An inputs array is a request of that many partitions, each element held to the
// circuit's limit of one request; what is not an array of objects, or longer than
// max_partitions, is refused naming what is wrong. The count is derived, never given.
func TestPartitionedInsertChecks(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.circuits SET secret_inputs = 1, max_inputs_bytes = 16 WHERE name = 'c';
	                                 UPDATE cuzk.settings SET value = '3' WHERE name = 'max_partitions'`); err != nil {
		t.Fatal(err)
	}
	_, sub := login(t, db, "submitter", "cuzk_submitter")

	// Each element within 16 bytes, the array over it: three partitions.
	three := `[{"X": "1"}, {"X": "22"}, {"X": "333"}]`
	var id, again int64
	if err := sub.QueryRow(ctx, `SELECT cuzk.submit_proof('p3', 'c', $1::jsonb)`, three).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := sub.QueryRow(ctx, `SELECT cuzk.submit_proof('p3', 'c', $1::jsonb)`, three).Scan(&again); err != nil || again != id {
		t.Errorf("identical resubmission of a partitioned request: %d, %v; want %d", again, err, id)
	}
	if _, err := sub.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('p1', 'c', '{"X": "1"}')`); err != nil {
		t.Fatal(err)
	}
	if got := scalarText(t, sub, `SELECT string_agg(request_id || '=' || partitions, ' ' ORDER BY request_id) FROM cuzk.proof_requests`); got != "p1=1 p3=3" {
		t.Errorf("partitions: %s, want p1=1 p3=3", got)
	}

	for _, c := range []struct{ sql, code, text string }{
		{`SELECT cuzk.submit_proof('p4', 'c', '[{"X": "1"}, {"X": "2"}, {"X": "3"}, {"X": "4"}]'::jsonb)`,
			"23514", `request "p4": inputs has 4 partitions, not 1 to 3`},
		{`SELECT cuzk.submit_proof('p0', 'c', '[]'::jsonb)`, "23514", `request "p0": inputs has 0 partitions, not 1 to 3`},
		{`SELECT cuzk.submit_proof('pn', 'c', '[{"X": "1"}, [1]]'::jsonb)`,
			"23514", `request "pn": partition 1 of the inputs array is a JSON array, not an object`},
		{`SELECT cuzk.submit_proof('pl', 'c', '[{"X": "1"}, {"X": "123456789"}]'::jsonb)`,
			"54000", `request "pl": inputs (partition 1) of 18 bytes exceed the 16-byte limit for circuit "c"`},
		{`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, partitions) VALUES ('pp', 'c', '{"X": "1"}', 5)`,
			"42501", "permission denied"},
	} {
		_, err := sub.Exec(ctx, c.sql)
		wantError(t, err, c.code, c.text)
	}
	// The owner, who may write the column, gets the derived count all the same.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, partitions) VALUES ('po', 'c', '[{"X": "1"}]', 5)`); err != nil {
		t.Fatal(err)
	}
	if got := scalarText(t, db.Pool, `SELECT partitions::text FROM cuzk.proof_requests WHERE request_id = 'po'`); got != "1" {
		t.Errorf("owner's insert with partitions 5 of a one-element array: %s, want 1", got)
	}
}

// Submitters read the partition proofs and timings of their own requests only, and
// change none; workers and operators read them all.
func TestPartitionRowsAreTheirSubmittersOnly(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	_, alice := login(t, db, "alice", "cuzk_submitter")
	_, bob := login(t, db, "bob", "cuzk_submitter")
	_, op := login(t, db, "op", "cuzk_operator")
	_, worker := login(t, db, "worker", "cuzk_worker")
	for who, p := range map[string]pgxQuerier{"alice": alice, "bob": bob} {
		var id int64
		if err := p.QueryRow(ctx, `SELECT cuzk.submit_proof($1, 'c', '[{"X": "1"}, {"X": "2"}]'::jsonb)`, who).Scan(&id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker) VALUES ('alice', 1, 'c', 'w'), ('bob', 1, 'c', 'w');
		INSERT INTO cuzk.partition_proofs (request_id, partition, proof, public_witness, key_version, attempt, worker, backend)
		VALUES ('alice', 0, '\x01', '\x02', 1, 1, 'w', 'cpu'), ('bob', 0, '\x01', '\x02', 1, 1, 'w', 'cpu');
		INSERT INTO cuzk.partition_attempts (request_id, attempt, partition, outcome, started_at)
		VALUES ('alice', 1, 0, 'succeeded', now()), ('bob', 1, 0, 'succeeded', now())`); err != nil {
		t.Fatal(err)
	}
	const seen = `SELECT (SELECT string_agg(request_id, ',' ORDER BY request_id) FROM cuzk.partition_proofs) || ' ' ||
	                     (SELECT string_agg(request_id, ',' ORDER BY request_id) FROM cuzk.partition_attempts)`
	for name, c := range map[string]struct {
		p    pgxQuerier
		want string
	}{"alice": {alice, "alice alice"}, "bob": {bob, "bob bob"}, "operator": {op, "alice,bob alice,bob"}, "worker": {worker, "alice,bob alice,bob"}} {
		if got := scalarText(t, c.p, seen); got != c.want {
			t.Errorf("%s sees %q, want %q", name, got, c.want)
		}
	}
	_, err := alice.Exec(ctx, `UPDATE cuzk.partition_proofs SET proof = '\x00'`)
	wantError(t, err, "42501", "permission denied")
	_, err = alice.Exec(ctx, `INSERT INTO cuzk.partition_attempts (request_id, attempt, partition, outcome, started_at)
	                          VALUES ('alice', 1, 1, 'succeeded', now())`)
	wantError(t, err, "42501", "permission denied")
}

// A partitioned request's digest is sha256 of its inputs' text, as for any request,
// whatever its elements hold (escapes, other scripts, nested arrays, numbers); of
// equally long partitions the first is the one named over the limit; and an UPDATE
// that gives a request inputs of another shape than its partitions is refused.
func TestPartitionedDigestAndShape(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.circuits SET secret_inputs = 1, max_inputs_bytes = 64 WHERE name = 'c'`); err != nil {
		t.Fatal(err)
	}
	_, sub := login(t, db, "submitter", "cuzk_submitter")
	for i, in := range []string{
		`[{"X": "1"}, {"X": "2"}]`,
		`[{"X": "a\"b\\c\n", "Y": "é€😀"}, {"Z": [1, [2, 3], {"k": null}]}, {"W": 1.50, "V": true}]`,
		`[{}, {"X": "0x1f"}]`,
	} {
		rid := fmt.Sprintf("d%d", i)
		var id int64
		if err := sub.QueryRow(ctx, `SELECT cuzk.submit_proof($1, 'c', $2::jsonb)`, rid, in).Scan(&id); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := scalarText(t, db.Pool, `SELECT (payload_digest = sha256(convert_to(inputs::text, 'UTF8')))::text
		                                   FROM cuzk.proof_requests WHERE request_id = $1`, rid); got != "true" {
			t.Errorf("%s: digest is not sha256 of the inputs' text", in)
		}
	}
	_, err := sub.Exec(ctx, `SELECT cuzk.submit_proof('tie', 'c', $1::jsonb)`,
		`[{"X": "1"}, {"X": "`+strings.Repeat("9", 60)+`"}, {"X": "`+strings.Repeat("8", 60)+`"}]`)
	wantError(t, err, "54000", `request "tie": inputs (partition 1) of 69 bytes exceed the 64-byte limit`)

	_, err = db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET inputs = '[{"X": "1"}]' WHERE request_id = 'd0'`)
	wantError(t, err, "23514", `request "d0": inputs must be a JSON object, or an array of partitions objects (2)`)
	_, err = db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET partitions = 3 WHERE request_id = 'd0'`)
	wantError(t, err, "23514", `inputs must be a JSON object`)
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET inputs = '[{"X": "5"}, {"X": "6"}]' WHERE request_id = 'd0'`); err != nil {
		t.Errorf("inputs of the same shape: %v", err)
	}
}
