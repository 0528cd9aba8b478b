package worker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/bench"
	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// BenchmarkBatch4VsSingles compares proving four requests of synthetic-k16 as one
// batch (one prover.Prove call with four solutions on a resident key) against four
// single proofs, on the CPU backend. Each iteration runs both, alternating which goes
// first; each side solves its own inputs (the prover consumes the solutions), as the
// worker does. Timing-only random key: the proofs are not verified here.
//
//	go test ./worker/ -run '^$' -bench Batch4VsSingles -benchtime 3x
func BenchmarkBatch4VsSingles(b *testing.B) {
	const name, k = "synthetic-k16", 4
	ctx := context.Background()
	compiled, err := keys.reg.Get(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	gpk, err := prover.RandomKeyFor(name, compiled.CS)
	if err != nil {
		b.Fatal(err)
	}
	pk, err := prover.NewProvingKey(name, gpk, compiled.NbConstraints())
	if err != nil {
		b.Fatal(err)
	}
	backend := prover.NewCPU()
	key, err := backend.LoadKey(ctx, pk)
	if err != nil {
		b.Fatal(err)
	}
	defer key.Close()
	inputs := make([][]byte, k)
	for i := range inputs {
		if inputs[i], err = synth.Inputs(name, uint64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	solve := func() []*synth.Solution {
		sols := make([]*synth.Solution, k)
		for i := range sols {
			if sols[i], err = synth.Solve(ctx, compiled, inputs[i]); err != nil {
				b.Fatal(err)
			}
		}
		return sols
	}
	batch := func() time.Duration {
		t0 := time.Now()
		if _, _, err := prover.Prove(ctx, backend, pk, key, solve()); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	singles := func() time.Duration {
		t0 := time.Now()
		for _, s := range solve() {
			if _, _, err := prover.Prove(ctx, backend, pk, key, []*synth.Solution{s}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	batch() // warm-up: first-touch page faults, lazily built tables
	singles()

	var bt, st []time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			bt, st = append(bt, batch()), append(st, singles())
		} else {
			st, bt = append(st, singles()), append(bt, batch())
		}
		b.Logf("round %d: batch of %d %s, %d singles %s", i+1, k, bt[i].Round(time.Millisecond), k, st[i].Round(time.Millisecond))
		i++
	}
	mb, ms := bench.Median(bt), bench.Median(st)
	ratio := float64(ms) / float64(mb)
	b.ReportMetric(float64(mb)/float64(time.Millisecond)/k, "ms/proof_batch")
	b.ReportMetric(float64(ms)/float64(time.Millisecond)/k, "ms/proof_single")
	b.ReportMetric(ratio, "batch/single_throughput")
	fmt.Printf("batch of %d vs %d single proofs of %s (median of %d): %s vs %s; batch4_vs_singles_throughput: %.2f\n",
		k, k, name, len(bt), mb.Round(time.Millisecond), ms.Round(time.Millisecond), ratio)
}

// endRecorder notes when each attempt's store transaction has committed: the worker
// calls its Observer after the commit, which no timestamp in the row covers.
type endRecorder struct {
	mu   sync.Mutex
	ends map[string]attemptEnd
}

type attemptEnd struct {
	committed time.Time
	// persist is the whole store: from the start of the store transaction (finished_at
	// minus persist_ms) to its commit.
	persist time.Duration
}

func (r *endRecorder) AttemptFinished(a *store.Attempt) {
	now := time.Now()
	if a.Outcome != "succeeded" || a.PersistMs == nil {
		return
	}
	start := a.FinishedAt.Add(-msDur(*a.PersistMs))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends[a.RequestID] = attemptEnd{committed: now, persist: now.Sub(start)}
}

// BenchmarkQueueOverhead measures what the queue costs each proof of a tiny circuit
// (synthetic-k6, in-process worker on the CPU, default settings but a 100 ms poll):
//
//	overhead = commit of the store transaction − river_job.attempted_at
//	           − (batch_wait + mem_wait + srs + synth + prove_wait + prove + verify)
//
// that is, everything between River marking the job running and the proof being
// durably stored that is neither proving work nor waiting inside the pipeline: River's
// dispatch, the claim transaction (BeginAttempt), the store transaction with its
// commit, and the hand-offs between stages. It is split into claim (overhead − persist)
// and persist (store transaction start to commit). queue_ms, the time a request waits
// for a free worker before it is claimed, is queueing rather than overhead and is
// printed beside it. "trickle": one request at a time (an idle worker); "backlog":
// 200 requests inserted at once.
//
//	go test ./worker/ -run '^$' -bench QueueOverhead -benchtime 1x
func BenchmarkQueueOverhead(b *testing.B) {
	const circuit = "synthetic-k6"
	for b.Loop() {
		db := pgtest.New(b)
		register(b, db.Pool, circuit)
		rec := &endRecorder{ends: map[string]attemptEnd{}}
		startWorker(b, db.Pool, func(c *worker.Config) { c.Observer = rec })

		insertRequests(b, db.Pool, "warm", circuit, 3, 2) // key load and first-use costs
		waitSucceeded(b, db.Pool, "warm", 3)
		for i := range 40 {
			prefix := fmt.Sprintf("trickle%02d", i)
			insertRequests(b, db.Pool, prefix, circuit, 1, 2)
			waitSucceeded(b, db.Pool, prefix, 1)
		}
		insertRequests(b, db.Pool, "backlog", circuit, 200, 2)
		waitSucceeded(b, db.Pool, "backlog", 200)

		for _, mode := range []string{"trickle", "backlog"} {
			reportOverhead(b, db.Pool, rec, mode)
		}
	}
}

func reportOverhead(b *testing.B, pool *pgxpool.Pool, rec *endRecorder, prefix string) {
	rows, err := pool.Query(context.Background(), `
		SELECT a.request_id, j.attempted_at, a.started_at, a.queue_ms, a.persist_ms,
		       a.batch_wait_ms + a.mem_wait_ms + a.srs_ms + a.synth_ms + a.prove_wait_ms + a.prove_ms + a.verify_ms
		  FROM cuzk.proof_attempts a JOIN river_job j ON j.id = a.job_id
		 WHERE a.request_id LIKE $1 || '%' AND a.outcome = 'succeeded' AND a.attempt = 1`, prefix)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var overhead, claim, persist, persistRow, dispatch, queue []float64
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for rows.Next() {
		var rid string
		var attemptedAt, startedAt time.Time
		var queueMs, persistMs, work float64
		if err := rows.Scan(&rid, &attemptedAt, &startedAt, &queueMs, &persistMs, &work); err != nil {
			b.Fatal(err)
		}
		end, ok := rec.ends[rid]
		if !ok {
			b.Fatalf("%s: the observer never saw its commit", rid)
		}
		o := float64(end.committed.Sub(attemptedAt))/float64(time.Millisecond) - work
		p := float64(end.persist) / float64(time.Millisecond)
		overhead, claim, persist = append(overhead, o), append(claim, o-p), append(persist, p)
		persistRow = append(persistRow, persistMs)
		dispatch = append(dispatch, float64(startedAt.Sub(attemptedAt))/float64(time.Millisecond))
		queue = append(queue, queueMs)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	if len(overhead) == 0 {
		b.Fatalf("%s: no attempts", prefix)
	}
	p50, p95 := pct(overhead, 50), pct(overhead, 95)
	b.ReportMetric(p50, prefix+"_overhead_p50_ms")
	b.ReportMetric(p95, prefix+"_overhead_p95_ms")
	fmt.Printf("%s (%d proofs) ms p50/p95: overhead %.2f/%.2f = claim %.2f/%.2f + persist %.2f/%.2f; "+
		"persist_ms column %.2f/%.2f; attempted_at→started_at %.2f/%.2f; queue_ms %.2f/%.2f\n",
		prefix, len(overhead), p50, p95, pct(claim, 50), pct(claim, 95), pct(persist, 50), pct(persist, 95),
		pct(persistRow, 50), pct(persistRow, 95), pct(dispatch, 50), pct(dispatch, 95), pct(queue, 50), pct(queue, 95))
}

// pct is the nearest-rank percentile.
func pct(v []float64, p int) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}
