package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// panicFirst is the CPU backend with a fault injected: its first Prove panics, as a
// backend bug or a driver fault might.
type panicFirst struct {
	prover.Backend
	calls atomic.Int32
}

func (p *panicFirst) Prove(ctx context.Context, k prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	if p.calls.Add(1) == 1 {
		panic("injected backend fault")
	}
	return p.Backend.Prove(ctx, k, sols)
}

// A panic while proving fails that attempt (retried) instead of ending the process.
func TestPanicInProverFailsTheAttemptNotTheWorker(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	startWorkerWith(t, db.Pool, []worker.Prover{{Backend: &panicFirst{Backend: prover.NewCPU()}}}, nil,
		func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })

	in, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	psql(t, db.URL, fmt.Sprintf("INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('p', '%s', $j$%s$j$);", circuit, in))
	if st, le := waitState(t, db.Pool, "p", "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("after a prover panic: %s: %s", st, le)
	}
	verifyStored(t, db.Pool, "p")
	var outcome, msg string
	if err := db.Pool.QueryRow(context.Background(),
		"SELECT outcome, error FROM cuzk.proof_attempts WHERE request_id = 'p' AND attempt = 1").Scan(&outcome, &msg); err != nil {
		t.Fatal(err)
	}
	if outcome != "retryable" || !strings.Contains(msg, "panic: injected backend fault") {
		t.Errorf("attempt 1: %s %q, want retryable naming the panic", outcome, msg)
	}
}
