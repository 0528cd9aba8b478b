package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

func TestSubmitProofIsIdempotent(t *testing.T) {
	db := pgtest.New(t)
	const name = "synthetic-k6"
	register(t, db.Pool, name)
	inputs, err := synth.Inputs(name, 7)
	if err != nil {
		t.Fatal(err)
	}
	call := fmt.Sprintf("SELECT cuzk.submit_proof(request_id => 'dup-1', circuit => '%s', inputs => $json$%s$json$::jsonb, priority => 2);", name, inputs)
	first := psql(t, db.URL, call)
	second := psql(t, db.URL, call)
	if first == "" || first != second {
		t.Fatalf("submit_proof returned %q then %q, want the same id", first, second)
	}
	var jobs int
	if err := db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM river_job WHERE args->>'request_id' = 'dup-1'").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 {
		t.Fatalf("%d River jobs for one request, want 1", jobs)
	}
	startWorker(t, db.Pool, nil)
	if st, le := waitState(t, db.Pool, "dup-1", "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("dup-1 %s: %s", st, le)
	}
	// A third submit after success still creates nothing.
	psql(t, db.URL, call)
	var requests, proofs int
	if err := db.Pool.QueryRow(context.Background(),
		"SELECT (SELECT count(*) FROM cuzk.proof_requests), (SELECT count(*) FROM cuzk.proofs)").Scan(&requests, &proofs); err != nil {
		t.Fatal(err)
	}
	if requests != 1 || proofs != 1 {
		t.Fatalf("%d requests and %d proofs, want 1 and 1", requests, proofs)
	}
}

func TestUnknownCircuitRejectedAtInsert(t *testing.T) {
	db := pgtest.New(t)
	register(t, db.Pool, "synthetic-k6")
	out, err := pgtest.PsqlErr(db.URL, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('x', 'no-such-circuit', '{}');`)
	if err == nil || !strings.Contains(out, `unknown circuit "no-such-circuit"`) || !strings.Contains(out, "synthetic-k6") {
		t.Fatalf("insert of unknown circuit: err=%v out=%s", err, out)
	}
	out, err = pgtest.PsqlErr(db.URL, `SELECT cuzk.submit_proof(request_id => 'y', circuit => 'synthetic-k6');`)
	if err == nil || !strings.Contains(out, "exactly one of inputs") {
		t.Fatalf("submit without inputs: err=%v out=%s", err, out)
	}
	var n int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM cuzk.proof_requests").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d requests stored after rejected inserts", n)
	}
}

// Every kind of bad input ends its request failed after one attempt, with an error
// naming the field or constraint, and the worker goes on to prove a good request.
func TestBadInputCatalogue(t *testing.T) {
	db := pgtest.New(t)
	const merkle = "merkle-poseidon2-d4-c2"
	const syn = "synthetic-k6"
	register(t, db.Pool, merkle)
	register(t, db.Pool, syn)
	good, err := synth.Inputs(syn, 3)
	if err != nil {
		t.Fatal(err)
	}
	goodMerkle, err := synth.Inputs(merkle, 3)
	if err != nil {
		t.Fatal(err)
	}
	field, value := firstField(t, good)
	mfield, _ := firstArrayField(t, goodMerkle)
	const r = "52435875175126190479447740508185965837690552500527637822603658699938581184513"
	cases := []struct {
		id, circuit, payload string // payload: SQL expression for inputs or witness
		want                 string
	}{
		{"missing", syn, jsonWithout(t, good, field), field},
		{"unknown-field", syn, jsonWith(t, good, "NoSuchField", `"1"`), "NoSuchField"},
		{"out-of-range", syn, jsonWith(t, good, field, `"`+r+`"`), field},
		{"non-canonical-hex", syn, jsonWith(t, good, field, `"0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001"`), field},
		{"negative", syn, jsonWith(t, good, field, `"-`+value+`"`), field},
		{"non-numeric", syn, jsonWith(t, good, field, `"twelve"`), field},
		{"wrong-array-length", merkle, jsonWithout(t, goodMerkle, mfield), strings.Split(mfield, ".")[0]},
		{"unsatisfied", merkle, jsonWith(t, goodMerkle, firstPublic(t, goodMerkle), `"12345"`), "constraint"},
	}
	for _, c := range cases {
		psql(t, db.URL, fmt.Sprintf("INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, max_attempts) VALUES ('%s', '%s', $json$%s$json$, 5);", c.id, c.circuit, c.payload))
	}
	psql(t, db.URL, fmt.Sprintf(`INSERT INTO cuzk.proof_requests (request_id, circuit, witness, max_attempts) VALUES ('garbage-witness', '%s', '\xdeadbeef', 5);`, syn))
	psql(t, db.URL, fmt.Sprintf("INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('good-after', '%s', $json$%s$json$);", syn, good))

	startWorker(t, db.Pool, nil)
	cases = append(cases, struct{ id, circuit, payload, want string }{"garbage-witness", syn, "", "witness"})
	for _, c := range cases {
		st, le := waitState(t, db.Pool, c.id, "failed", "succeeded")
		if st != "failed" {
			t.Errorf("%s: %s, want failed", c.id, st)
			continue
		}
		if !strings.Contains(le, c.want) {
			t.Errorf("%s: error %q does not name %q", c.id, le, c.want)
		}
		var attempts int
		if err := db.Pool.QueryRow(context.Background(),
			"SELECT attempts FROM cuzk.proof_status WHERE request_id = $1", c.id).Scan(&attempts); err != nil {
			t.Fatal(err)
		}
		if attempts != 1 {
			t.Errorf("%s: %d attempts, want exactly 1 (bad input is never retried)", c.id, attempts)
		}
	}
	if st, le := waitState(t, db.Pool, "good-after", "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("good request after bad ones: %s: %s", st, le)
	}
	verifyStored(t, db.Pool, "good-after")
}
