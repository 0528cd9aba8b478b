package worker_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// insertRequests inserts n requests of circuit in one SQL statement, as an
// orchestrator would, named prefix-1..prefix-n.
func insertRequests(t testing.TB, pool *pgxpool.Pool, prefix, circuit string, n, priority int) {
	t.Helper()
	inputs, err := synth.Inputs(circuit, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := pool.Exec(context.Background(), `
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority)
		SELECT $1 || '-' || g, $2, $3::jsonb, $5 FROM generate_series(1, $4::int) g`,
		prefix, circuit, string(inputs), n, priority)
	if err != nil {
		t.Fatalf("insert %d requests: %v", n, err)
	}
	if tag.RowsAffected() != int64(n) {
		t.Fatalf("inserted %d requests, want %d", tag.RowsAffected(), n)
	}
}

// waitSucceeded polls until every request named prefix-* has succeeded; it fails the
// test at once if one fails.
func waitSucceeded(t testing.TB, pool *pgxpool.Pool, prefix string, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var ok, failed int
		err := pool.QueryRow(context.Background(), `
			SELECT count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state IN ('failed', 'cancelled'))
			  FROM cuzk.proof_status WHERE request_id LIKE $1 || '-%'`, prefix).Scan(&ok, &failed)
		if err != nil {
			t.Fatal(err)
		}
		if failed > 0 {
			t.Fatalf("%d requests %s-* failed", failed, prefix)
		}
		if ok == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests %s-* succeeded before the deadline", ok, n, prefix)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// attemptRow is what the pipeline tests read back from cuzk.proof_attempts.
type attemptRow struct {
	requestID, outcome string
	errText            *string
	batchID            *uuid.UUID
	batchSize          *int
	memReserved        *int64
	batchWait, memWait *float64
	synthMs, proveMs   *float64
	synthAt, proveAt   *time.Time
}

func (a attemptRow) synthEnd() time.Time { return a.synthAt.Add(msDur(*a.synthMs)) }
func (a attemptRow) proveEnd() time.Time { return a.proveAt.Add(msDur(*a.proveMs)) }

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// overlaps says whether [a0, a1) and [b0, b1) share an instant.
func overlaps(a0, a1, b0, b1 time.Time) bool { return a0.Before(b1) && b0.Before(a1) }

func loadAttempts(t testing.TB, pool *pgxpool.Pool, prefix string) []attemptRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT request_id, outcome, error, batch_id, batch_size, mem_reserved_bytes, batch_wait_ms, mem_wait_ms,
		       synth_ms, prove_ms, synth_started_at, prove_started_at
		  FROM cuzk.proof_attempts WHERE request_id LIKE $1 || '-%' ORDER BY request_id, attempt`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []attemptRow
	for rows.Next() {
		var a attemptRow
		if err := rows.Scan(&a.requestID, &a.outcome, &a.errText, &a.batchID, &a.batchSize, &a.memReserved,
			&a.batchWait, &a.memWait, &a.synthMs, &a.proveMs, &a.synthAt, &a.proveAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// requireTimed fails unless every attempt succeeded with its pipeline timestamps and
// phases, and synthesized before it was proven.
func requireTimed(t testing.TB, atts []attemptRow, n int) {
	t.Helper()
	if len(atts) != n {
		t.Fatalf("%d attempts, want %d", len(atts), n)
	}
	for _, a := range atts {
		if a.outcome != "succeeded" || a.synthAt == nil || a.proveAt == nil || a.synthMs == nil || a.proveMs == nil ||
			a.batchID == nil || a.batchSize == nil || a.batchWait == nil || a.memWait == nil || a.memReserved == nil {
			t.Fatalf("%s: outcome %s, incomplete attempt row %+v", a.requestID, a.outcome, a)
		}
		if a.synthEnd().After(*a.proveAt) {
			t.Errorf("%s: synthesis ended %s after its own proving started", a.requestID, a.synthEnd().Sub(*a.proveAt))
		}
	}
}

// One request's synthesis runs while another batch is being proven: the pipeline's
// point. Synthesis slots (2) and queue slots (2) are enough for requests claimed while
// the prover is busy to be synthesized meanwhile.
func TestPipelineSynthesisOverlapsProving(t *testing.T) {
	const circuit, n = "synthetic-k13", 8
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	insertRequests(t, db.Pool, "overlap", circuit, n, 2)
	startWorker(t, db.Pool, func(c *worker.Config) {
		c.MaxBatch, c.SynthConcurrency, c.QueueDepth = 1, 2, 2
	})
	waitSucceeded(t, db.Pool, "overlap", n)

	atts := loadAttempts(t, db.Pool, "overlap")
	requireTimed(t, atts, n)
	found := 0
	for _, s := range atts {
		for _, p := range atts {
			if *s.batchID == *p.batchID || !overlaps(*s.synthAt, s.synthEnd(), *p.proveAt, p.proveEnd()) {
				continue
			}
			if found == 0 {
				t.Logf("%s synthesized %s..%s while %s was proven %s..%s", s.requestID,
					s.synthAt.Format("15:04:05.000"), s.synthEnd().Format("15:04:05.000"), p.requestID,
					p.proveAt.Format("15:04:05.000"), p.proveEnd().Format("15:04:05.000"))
			}
			found++
		}
	}
	if found == 0 {
		t.Fatal("no synthesis overlapped the proving of another batch")
	}
	t.Logf("%d (synthesis, other batch's proving) pairs overlap", found)
}

// A batch is flushed when it is full, when its oldest request has waited --batch-wait,
// and at once when a more urgent request arrives; each attempt row shows which.
func TestPipelineBatchFlushesInAttemptRows(t *testing.T) {
	const circuit = "synthetic-k6"
	const wait = 1500 * time.Millisecond
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	startWorker(t, db.Pool, func(c *worker.Config) {
		c.MaxBatch, c.BatchWait, c.SynthConcurrency, c.QueueDepth = 3, wait, 2, 1
	})
	waitMs := float64(wait / time.Millisecond)

	// Full: three requests arrive together and go as one batch before the wait is over.
	insertRequests(t, db.Pool, "full", circuit, 3, 2)
	waitSucceeded(t, db.Pool, "full", 3)
	full := loadAttempts(t, db.Pool, "full")
	requireTimed(t, full, 3)
	for _, a := range full {
		// One Backend.Prove call for the whole batch: the same proving interval.
		if !a.proveAt.Equal(*full[0].proveAt) || *a.proveMs != *full[0].proveMs {
			t.Errorf("full: %s proven at %s for %.1f ms, %s at %s for %.1f ms: want one proving call", a.requestID,
				a.proveAt, *a.proveMs, full[0].requestID, full[0].proveAt, *full[0].proveMs)
		}
		if *a.batchID != *full[0].batchID || *a.batchSize != 3 {
			t.Errorf("full: %s in batch %s of %d, want all three in one batch of 3", a.requestID, a.batchID, *a.batchSize)
		}
		if *a.batchWait >= waitMs {
			t.Errorf("full: %s waited %.1f ms for its batch, want less than --batch-wait %.0f ms", a.requestID, *a.batchWait, waitMs)
		}
	}

	// Wait: a lone request goes alone once --batch-wait has passed.
	insertRequests(t, db.Pool, "alone", circuit, 1, 2)
	waitSucceeded(t, db.Pool, "alone", 1)
	alone := loadAttempts(t, db.Pool, "alone")
	requireTimed(t, alone, 1)
	if *alone[0].batchSize != 1 || *alone[0].batchWait < waitMs {
		t.Errorf("alone: batch of %d after %.1f ms, want a batch of 1 after at least %.0f ms", *alone[0].batchSize, *alone[0].batchWait, waitMs)
	}

	// Priority: a low-priority request is waiting for company; an urgent one arrives and
	// both go at once.
	insertRequests(t, db.Pool, "low", circuit, 1, 4)
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := db.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = 'low-1'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the low-priority request was never claimed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	insertRequests(t, db.Pool, "high", circuit, 1, 1)
	waitSucceeded(t, db.Pool, "low", 1)
	waitSucceeded(t, db.Pool, "high", 1)
	low, high := loadAttempts(t, db.Pool, "low"), loadAttempts(t, db.Pool, "high")
	requireTimed(t, low, 1)
	requireTimed(t, high, 1)
	if *low[0].batchID != *high[0].batchID || *low[0].batchSize != 2 {
		t.Errorf("priority: low in batch %s of %d, high in batch %s: want one batch of 2",
			low[0].batchID, *low[0].batchSize, high[0].batchID)
	}
	if *low[0].batchWait >= waitMs {
		t.Errorf("priority: the waiting request was flushed after %.1f ms, not at once when the urgent one came (--batch-wait %.0f ms)",
			*low[0].batchWait, waitMs)
	}

	// An urgent request alone does not wait for company.
	insertRequests(t, db.Pool, "urgent", circuit, 1, 1)
	waitSucceeded(t, db.Pool, "urgent", 1)
	urgent := loadAttempts(t, db.Pool, "urgent")
	requireTimed(t, urgent, 1)
	if *urgent[0].batchWait >= waitMs {
		t.Errorf("urgent: alone, flushed after %.1f ms, not at once (--batch-wait %.0f ms)", *urgent[0].batchWait, waitMs)
	}
	t.Logf("batch_wait_ms: full %.1f, alone %.1f, low %.1f, high %.1f, urgent %.1f",
		*full[0].batchWait, *alone[0].batchWait, *low[0].batchWait, *high[0].batchWait, *urgent[0].batchWait)
}

// A request whose memory estimate exceeds the whole budget fails at once, says so, and
// is not retried.
func TestPipelineRequestLargerThanMemoryFailsAtOnce(t *testing.T) {
	const circuit = "synthetic-k8"
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	compiled, _, _ := keys.setup(t, circuit)
	need := synth.EstimateBytes(compiled) + worker.HeldBytes(compiled, nil)
	startWorker(t, db.Pool, func(c *worker.Config) { c.MemBudget = need - 1 })
	insertRequests(t, db.Pool, "huge", circuit, 1, 2)

	state, lastErr := waitState(t, db.Pool, "huge-1", "failed", "succeeded")
	if state != "failed" {
		t.Fatalf("a request larger than the budget ended %s", state)
	}
	wantMsg := fmt.Sprintf("needs %d bytes of memory, more than the whole budget of %d bytes", need, need-1)
	if !strings.Contains(lastErr, wantMsg) {
		t.Errorf("last_error %q does not say %q", lastErr, wantMsg)
	}
	atts := loadAttempts(t, db.Pool, "huge")
	if len(atts) != 1 || atts[0].outcome != "failed" {
		t.Fatalf("attempts %+v, want exactly one, failed", atts)
	}
	a := atts[0]
	if a.errText == nil || !strings.Contains(*a.errText, wantMsg) {
		t.Errorf("attempt error %v does not say %q", a.errText, wantMsg)
	}
	if a.memReserved != nil || a.synthAt != nil {
		t.Errorf("the attempt reserved %v bytes / synthesized at %v; it must do neither", a.memReserved, a.synthAt)
	}
	if a.memWait == nil || *a.memWait > 1000 {
		t.Errorf("mem_wait_ms = %v, want recorded and no real wait", a.memWait)
	}
	// River records the job's end after the attempt row is written: poll for it.
	var jobState string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := db.Pool.QueryRow(context.Background(),
			`SELECT state FROM river_job WHERE args->>'request_id' = 'huge-1'`).Scan(&jobState); err != nil {
			t.Fatal(err)
		}
		if jobState != "running" || time.Now().After(deadline) {
			break
		}
	}
	if jobState != "discarded" {
		t.Errorf("River job is %s, want discarded (failed, no retry)", jobState)
	}
}

// With a budget that holds one synthesis, syntheses run one at a time even with two
// synthesis slots, and each attempt records what it reserved and how long it waited.
func TestPipelineMemoryForOneSynthesisSerializes(t *testing.T) {
	const circuit, n = "synthetic-k12", 4
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	compiled, _, _ := keys.setup(t, circuit)
	need := synth.EstimateBytes(compiled)
	insertRequests(t, db.Pool, "mem", circuit, n, 2)
	rw := startWorker(t, db.Pool, func(c *worker.Config) {
		c.MemBudget = worker.HeldBytes(compiled, nil) + need + need/2
		c.MaxBatch, c.SynthConcurrency, c.QueueDepth = 1, 2, 2
	})
	waitSucceeded(t, db.Pool, "mem", n)
	// Every reservation is given back once its proof is stored (just after the commit).
	synthesis := func() int64 { n, _ := rw.w.Budget().KindBytes(worker.KindSynthesis); return n }
	for deadline := time.Now().Add(10 * time.Second); synthesis() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of synthesis still reserved after every proof was stored", synthesis())
		}
	}

	atts := loadAttempts(t, db.Pool, "mem")
	requireTimed(t, atts, n)
	minProve, maxWait := *atts[0].proveMs, 0.0
	for i, a := range atts {
		if *a.memReserved != need {
			t.Errorf("%s: mem_reserved_bytes %d, want the estimate %d", a.requestID, *a.memReserved, need)
		}
		minProve, maxWait = min(minProve, *a.proveMs), max(maxWait, *a.memWait)
		for _, b := range atts[i+1:] {
			if overlaps(*a.synthAt, a.synthEnd(), *b.synthAt, b.synthEnd()) {
				t.Errorf("syntheses of %s and %s overlap under a budget for one", a.requestID, b.requestID)
			}
		}
	}
	// Requests claimed together could only start as proofs finished.
	if maxWait < minProve/2 {
		t.Errorf("longest mem_wait_ms %.1f, want at least half a proof (%.1f ms): nobody waited for the budget", maxWait, minProve/2)
	}
	t.Logf("budget %d bytes for an estimate of %d; longest mem_wait %.1f ms, shortest prove %.1f ms", rw.w.Budget().Total(), need, maxWait, minProve)
}

// Backpressure: a worker holds no more claimed jobs than its pipeline can start soon
// (a batch per queue slot and per device, plus one per synthesis slot); the rest stay
// available in the queue for other hosts.
func TestPipelineClaimsNoMoreThanItCanStart(t *testing.T) {
	const circuit, n = "synthetic-k12", 8
	const maxBatch, queueDepth, synthConc = 1, 1, 1
	const limit = maxBatch*(queueDepth+1) + synthConc // one CPU device
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	insertRequests(t, db.Pool, "bp", circuit, n, 2)
	startWorker(t, db.Pool, func(c *worker.Config) {
		c.MaxBatch, c.QueueDepth, c.SynthConcurrency = maxBatch, queueDepth, synthConc
	})
	peak, sawWaiting := 0, false
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var running, available, done int
		if err := db.Pool.QueryRow(context.Background(), `
			SELECT count(*) FILTER (WHERE state = 'running'), count(*) FILTER (WHERE state = 'available'),
			       count(*) FILTER (WHERE state = 'completed') FROM river_job`).Scan(&running, &available, &done); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, running)
		sawWaiting = sawWaiting || running > 0 && available > 0
		if running > limit {
			t.Fatalf("%d jobs claimed at once, more than the pipeline's %d", running, limit)
		}
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs completed before the deadline", done, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawWaiting {
		t.Error("never saw jobs left available while the worker was busy")
	}
	if peak < 2 {
		t.Errorf("at most %d job claimed at once: the pipeline was never filled", peak)
	}
	t.Logf("peak %d jobs claimed (limit %d) of %d", peak, limit, n)
}

// A worker collects garbage itself once the solutions it has proven reach its sweep
// threshold, and a worker of small proofs (a sixteenth of its budget is far off)
// leaves collecting to the runtime.
func TestPipelineSweepsProvenSolutions(t *testing.T) {
	const circuit, n = "synthetic-k12", 3
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	keys.setup(t, circuit)
	for _, c := range []struct {
		name  string
		sweep bool
	}{{"default", false}, {"swept", true}} {
		before := forcedCollections()
		insertRequests(t, db.Pool, c.name, circuit, n, 2)
		rw := startWorker(t, db.Pool, func(cfg *worker.Config) {
			cfg.MaxBatch = 1
			if c.sweep {
				worker.SweepAfter(cfg, 1)
			}
		})
		waitSucceeded(t, db.Pool, c.name, n)
		rw.stop(t)
		// A collection runs in the background: give the last one a moment.
		for deadline := time.Now().Add(10 * time.Second); c.sweep && forcedCollections() == before && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		got := forcedCollections() - before
		switch {
		case c.sweep && got == 0:
			t.Errorf("%s: no collection after %d proofs past a 1-byte threshold", c.name, n)
		case !c.sweep && got != 0:
			t.Errorf("%s: %d forced collections for %d small proofs under an 8 GiB budget", c.name, got, n)
		}
	}
}

// forcedCollections is the number of garbage collections forced so far (runtime.GC).
func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// failingProver is the CPU backend whose every Prove fails, after the solutions are made.
type failingProver struct{ prover.Backend }

func (failingProver) Prove(context.Context, prover.Key, []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	return nil, prover.PhaseTimes{}, errors.New("injected prove failure")
}

// Solutions that are never proven are garbage too: a failed prove counts them for the
// heap sweeper, which collects past its threshold as it does for proven ones.
func TestPipelineSweepsUnprovenSolutions(t *testing.T) {
	const circuit = "synthetic-k12"
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	keys.setup(t, circuit)
	// Collections started before this test (another's sweeper) end first.
	before := forcedCollections()
	for {
		time.Sleep(200 * time.Millisecond)
		if now := forcedCollections(); now != before {
			before = now
			continue
		}
		break
	}
	rw := startWorkerWith(t, db.Pool, []worker.Prover{{Backend: failingProver{prover.NewCPU()}}}, nil,
		func(cfg *worker.Config) {
			cfg.MaxBatch = 1
			worker.SweepAfter(cfg, 1)
		})
	insertRequests(t, db.Pool, "unproven", circuit, 1, 2)
	waitAttemptOutcome(t, db.Pool, "unproven-1", 1, "retryable")
	if msg := scalarString(t, db.Pool,
		"SELECT error FROM cuzk.proof_attempts WHERE request_id = 'unproven-1' AND attempt = 1"); !strings.Contains(msg, "injected prove failure") {
		t.Fatalf("attempt 1 failed with %q, not the injected prove failure", msg)
	}
	rw.stop(t)
	for deadline := time.Now().Add(10 * time.Second); forcedCollections() == before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if forcedCollections() == before {
		t.Error("no collection after a failed prove dropped its solution past a 1-byte threshold")
	}
}
