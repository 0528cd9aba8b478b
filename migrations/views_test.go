package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// The timing history lists every phase an attempt recorded, device phases included, in
// pipeline order.
func TestAttemptPhasesInPipelineOrder(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		VALUES ('c', 1, 0, 1, '\x00', 'd');
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('r', 'c', '{}');
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, outcome, finished_at,
		        queue_ms, batch_wait_ms, mem_wait_ms, srs_ms, synth_ms, prove_wait_ms, prove_ms, h2d_ms, ntt_ms,
		        msm_ms, msm_g1_ms, msm_g2_ms, verify_ms, persist_ms, total_ms)
		VALUES ('r', 1, 'c', 'w', 'succeeded', now(), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);`)
	if err != nil {
		t.Fatal(err)
	}
	var phases string
	if err := db.Pool.QueryRow(ctx, `
		SELECT string_agg(phase || '=' || ms, ' ' ORDER BY ord) FROM cuzk.attempt_phases WHERE request_id = 'r'`).
		Scan(&phases); err != nil {
		t.Fatal(err)
	}
	want := "queue=1 batch_wait=2 mem_wait=3 srs=4 synth=5 prove_wait=6 prove=7 h2d=8 ntt=9 msm=10 msm_g1=11 msm_g2=12 verify=13 persist=14 total=15"
	if phases != want {
		t.Fatalf("attempt_phases:\n got %s\nwant %s", phases, want)
	}
	var hist string
	if err := db.Pool.QueryRow(ctx, `
		SELECT string_agg(phase, ' ') FROM cuzk.timing_history('1 hour', now() - interval '1 hour', 'c')`).
		Scan(&hist); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hist, "h2d ntt msm msm_g1 msm_g2") {
		t.Fatalf("timing_history phases %q lack the device phases in order", hist)
	}
}
