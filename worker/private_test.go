package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

// An unsatisfied constraint's error, which any submitter can read in proof_status,
// proof_attempts and River's job errors, names the constraint and the public input
// involved but never a value computed from the requester's private inputs; gnark's
// full text goes to the log at debug level only. synthetic-k6 is solved by gnark's
// solver, which fails at synthesis; synthetic-k8 by the block solver, whose proof
// fails verification and whose witness's check then names the constraint.
func TestUnsatisfiedConstraintErrorHidesWitnessValues(t *testing.T) {
	for _, circuit := range []string{"synthetic-k6", "synthetic-k8"} {
		t.Run(circuit, func(t *testing.T) { testUnsatisfiedHidesValues(t, circuit) })
	}
}

func testUnsatisfiedHidesValues(t *testing.T, circuit string) {
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	good, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]string
	if err := json.Unmarshal(good, &in); err != nil {
		t.Fatal(err)
	}
	// Out is the value the circuit computes from the secret X: with Out changed, the
	// last constraint compares that private value with the claimed one.
	computed, ok := new(big.Int).SetString(in["Out"], 0)
	if !ok {
		t.Fatalf("Out %q", in["Out"])
	}
	secret, ok := new(big.Int).SetString(in["X.0"], 0)
	if !ok {
		t.Fatalf("X.0 %q", in["X.0"])
	}
	claimed := new(big.Int).Add(computed, big.NewInt(1))
	bad := jsonWith(t, good, "Out", `"`+claimed.String()+`"`)

	// gnark's own text prints the private value: the test would catch a leak.
	c, err := synth.NewRegistry(t.TempDir()).Get(context.Background(), circuit)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := synth.Solve(context.Background(), c, []byte(bad))
	if err == nil { // the constraint solves no wire: checked once the proof fails verification
		err = c.Check(context.Background(), sol.W, 1)
	}
	var unsat *synth.UnsatisfiedError
	if !errors.As(err, &unsat) || !strings.Contains(unsat.Detail(), computed.String()) {
		t.Fatalf("solve: %v; want an unsatisfied constraint whose gnark text holds %s", err, computed)
	}

	var buf lockedBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if _, err := db.Pool.Exec(context.Background(),
		`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('unsat', $1, $2::jsonb)`, circuit, bad); err != nil {
		t.Fatal(err)
	}
	startWorkerWith(t, db.Pool, nil, log, nil)
	st, lastErr := waitState(t, db.Pool, "unsat", "failed", "succeeded")
	if st != "failed" {
		t.Fatalf("state %s, want failed", st)
	}
	var attemptErr, jobErrs string
	if err := db.Pool.QueryRow(context.Background(), `
		SELECT (SELECT coalesce(string_agg(error, ' | '), '') FROM cuzk.proof_attempts WHERE request_id = 'unsat'),
		       (SELECT coalesce(string_agg(e->>'error', ' | '), '') FROM river_job j, unnest(j.errors) e WHERE j.args->>'request_id' = 'unsat')`,
	).Scan(&attemptErr, &jobErrs); err != nil {
		t.Fatal(err)
	}
	values := map[string]*big.Int{"the value computed from X": computed, "the secret X.0": secret}
	for where, text := range map[string]string{"last_error": lastErr, "proof_attempts.error": attemptErr,
		"River job errors": jobErrs, "the worker's log at info level": buf.String()} {
		for what, v := range values {
			for _, digits := range []string{v.String(), v.Text(16)} {
				// Any 12 digits in a row would do for a leak (gnark may abbreviate).
				for i := 0; i+12 <= len(digits); i += 6 {
					if strings.Contains(strings.ToLower(text), digits[i:i+12]) {
						t.Fatalf("%s holds digits of %s (%s): %q", where, what, digits[i:i+12], text)
					}
				}
			}
		}
	}
	for where, text := range map[string]string{"last_error": lastErr, "proof_attempts.error": attemptErr} {
		if !strings.Contains(text, "inputs do not satisfy circuit "+circuit+": constraint #") ||
			!strings.Contains(text, "is not satisfied") || !strings.Contains(text, "public inputs involved: Out") {
			t.Errorf("%s %q: want it to name the constraint and the public input Out", where, text)
		}
	}
	t.Logf("last_error: %s", lastErr)
}
