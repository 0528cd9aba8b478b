package worker_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// corruptFirst is the CPU backend whose first Prove returns a wrong A: a faulty
// device's proof, of a witness that satisfies the circuit.
type corruptFirst struct {
	prover.Backend
	calls atomic.Int32
}

func (c *corruptFirst) Prove(ctx context.Context, k prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	parts, times, err := c.Backend.Prove(ctx, k, sols)
	if err == nil && c.calls.Add(1) == 1 {
		g, _, _, _ := bls12381.Generators()
		parts[0].A.AddAssign(&g)
	}
	return parts, times, err
}

// A proof that fails verification of a witness that satisfies every constraint is the
// prover's fault: the check of the witness finds nothing, the attempt is retryable
// and says the proof failed verification, nothing of it is stored, and the retry's
// proof is.
func TestProofFailingVerificationOfGoodInputsIsRetried(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "merkle-poseidon2-d3-c2" // block-split: its checks are left to verification
	register(t, db.Pool, circuit)
	startWorkerWith(t, db.Pool, []worker.Prover{{Backend: &corruptFirst{Backend: prover.NewCPU()}}}, nil,
		func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })
	insertRequests(t, db.Pool, "corrupt", circuit, 1, 1)
	waitSucceeded(t, db.Pool, "corrupt", 1)
	verifyStored(t, db.Pool, "corrupt-1")
	var outcome, msg string
	var verifyMs *float64
	if err := db.Pool.QueryRow(context.Background(),
		"SELECT outcome, error, verify_ms FROM cuzk.proof_attempts WHERE request_id = 'corrupt-1' AND attempt = 1").
		Scan(&outcome, &msg, &verifyMs); err != nil {
		t.Fatal(err)
	}
	if outcome != "retryable" || !strings.HasPrefix(msg, "proof failed verification") || verifyMs == nil {
		t.Errorf("attempt 1: %s %q (verify_ms %v), want retryable, the proof failed verification, its verify phase timed", outcome, msg, verifyMs)
	}
}
