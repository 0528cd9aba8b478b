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

	provenAfterPanic(t, db, circuit, "p", "panic: injected backend fault")
}

// provenAfterPanic submits request rid of circuit and checks that it is proven, its
// first attempt retryable with an error naming the panic want.
func provenAfterPanic(t *testing.T, db *pgtest.DB, circuit, rid, want string) {
	t.Helper()
	in, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	psql(t, db.URL, fmt.Sprintf("INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('%s', '%s', $j$%s$j$);", rid, circuit, in))
	if st, le := waitState(t, db.Pool, rid, "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("after a panic: %s: %s", st, le)
	}
	verifyStored(t, db.Pool, rid)
	var outcome, msg string
	if err := db.Pool.QueryRow(context.Background(),
		"SELECT outcome, error FROM cuzk.proof_attempts WHERE request_id = $1 AND attempt = 1", rid).Scan(&outcome, &msg); err != nil {
		t.Fatal(err)
	}
	if outcome != "retryable" || !strings.Contains(msg, want) {
		t.Errorf("attempt 1: %s %q, want retryable naming the panic", outcome, msg)
	}
}

// panicPrepare is the worker's catalog with a fault injected: its first Prepare
// panics, as a decoder bug on a damaged key might.
type panicPrepare struct {
	worker.Catalog
	calls atomic.Int32
}

func (p *panicPrepare) Prepare(ctx context.Context, name string) (*worker.PreparedKey, time.Duration, error) {
	if p.calls.Add(1) == 1 {
		panic("injected key fault")
	}
	return p.Catalog.Prepare(ctx, name)
}

// A panic while a batch prepares its key fails that attempt (retried) instead of
// ending the process.
func TestPanicPreparingKeyFailsTheAttemptNotTheWorker(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	cat := &panicPrepare{Catalog: worker.NewCatalog(keys.reg.Get, keys.load, nil)}
	startWorkerCatalog(t, db.Pool, cat, nil, nil, func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })
	provenAfterPanic(t, db, circuit, "k", "panic: injected key fault")
}

// The memory a request's synthesis reserves goes back however its attempt ends: a
// proof stored, a prover that panics (the attempt retried), inputs that fail after the
// reservation was taken (a constraint that solves no wire: their proof fails
// verification). p goes first, so that the prover's one panic is p's.
func TestSynthesisMemoryReleasedOnEveryPath(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	rw := startWorkerWith(t, db.Pool, []worker.Prover{{Backend: &panicFirst{Backend: prover.NewCPU()}}}, nil,
		func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })

	good, err := synth.Inputs(circuit, 3)
	if err != nil {
		t.Fatal(err)
	}
	bad := jsonWith(t, good, "Out", `"1"`) // the last constraint fails
	insert := func(id, in string) {
		psql(t, db.URL, fmt.Sprintf("INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('%s', '%s', $j$%s$j$);", id, circuit, in))
	}
	insert("p", string(good))
	if st, le := waitState(t, db.Pool, "p", "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("p: %s: %s", st, le)
	}
	insert("unsat", bad)
	if st, le := waitState(t, db.Pool, "unsat", "succeeded", "failed"); st != "failed" || !strings.Contains(le, "is not satisfied") {
		t.Fatalf("unsat: %s %q, want failed in the solver", st, le)
	}
	if n := scalar(t, db.Pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = 'p' AND outcome = 'retryable' AND error LIKE '%panic%'`); n != 1 {
		t.Fatalf("%d attempts of p failed by the prover's panic, want 1", n)
	}
	waitSynthesisReleased(t, rw.w.Budget())
}

// waitSynthesisReleased waits until b holds no synthesis memory, having held some: an
// attempt's row is written before the attempt lets go of its memory.
func waitSynthesisReleased(t *testing.T, b *worker.Budget) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		now, peak := b.KindBytes(worker.KindSynthesis)
		if peak == 0 {
			t.Fatal("no synthesis memory was ever reserved")
		}
		if now == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of synthesis memory still reserved after every attempt ended", now)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
