package phase_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/phase"
)

// ExampleAll reads the timings of a request's latest attempt from cuzk.proof_attempts,
// one column per phase, as an orchestrator written in Go does. A phase the attempt
// never reached is NULL; the device phases sit inside prove.
func ExampleAll() {
	ctx := context.Background()

	// Out of example scope: a private database holding one finished attempt of a
	// request submitted by a login in the cuzk_submitter role (a submitter reads only
	// its own requests' attempts).
	tb := pgtest.NewExampleTB()
	defer tb.Close()
	db := pgtest.New(tb)
	recordAttempts(ctx, db.Pool, 1)
	login := db.Name + "_orchestrator"
	pool := pgtest.Login(tb, db.Pool, db.URL, login, "cuzk_submitter")
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET submitted_by = $1`, login); err != nil {
		panic(err)
	}

	all := phase.All()
	cols := make([]string, len(all))
	for i, p := range all {
		cols[i] = p.Column
	}
	ms := make([]*float64, len(all))
	dest := make([]any, len(all))
	for i := range ms {
		dest[i] = &ms[i]
	}
	if err := pool.QueryRow(ctx, `
		SELECT `+strings.Join(cols, ", ")+` FROM cuzk.proof_attempts
		 WHERE request_id = $1 ORDER BY attempt DESC LIMIT 1`, "sector-1").Scan(dest...); err != nil {
		panic(err)
	}
	for i, p := range all {
		if ms[i] == nil {
			continue
		}
		fmt.Printf("%-10s %7.1f ms", p.Name, *ms[i])
		if p.Inside != "" && p.Inside != phase.Total {
			fmt.Printf(" (inside %s)", p.Inside)
		}
		fmt.Println()
	}

	// Output:
	// queue         12.0 ms
	// batch_wait    50.0 ms
	// mem_wait       0.5 ms
	// srs            3.0 ms
	// synth       1500.0 ms
	// prove_wait     2.0 ms
	// prove        800.0 ms
	// ntt          200.0 ms (inside prove)
	// msm          520.0 ms (inside prove)
	// msm_g1       480.0 ms (inside msm)
	// msm_g2       350.0 ms (inside msm)
	// verify         6.0 ms
	// persist        4.0 ms
	// total       2380.0 ms
}

// Example_timingHistory reads a circuit's timing history: per period and phase, the
// count, p50, p95 and mean of succeeded attempts, in the phases' order. Here, the
// phases that follow one another, and their total.
func Example_timingHistory() {
	ctx := context.Background()

	// Out of example scope: a private database holding three finished attempts, and a
	// login in the cuzk_submitter role (timings are the fleet's: it submitted none).
	tb := pgtest.NewExampleTB()
	defer tb.Close()
	db := pgtest.New(tb)
	recordAttempts(ctx, db.Pool, 3)
	pool := pgtest.Login(tb, db.Pool, db.URL, db.Name+"_orchestrator", "cuzk_submitter")

	rows, err := pool.Query(ctx, `
		SELECT phase, n, p50_ms, p95_ms FROM cuzk.timing_history(bucket => '1 day', since => now() - interval '1 day',
		                                                         for_circuit => 'synthetic-k10')`)
	if err != nil {
		panic(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int64
		var p50, p95 float64
		if err := rows.Scan(&name, &n, &p50, &p95); err != nil {
			panic(err)
		}
		if p, _ := phase.Lookup(name); p.Inside == phase.Total || name == phase.Total {
			fmt.Printf("%-10s n=%d p50 %7.1f ms  p95 %7.1f ms\n", name, n, p50, p95)
		}
	}
	if err := rows.Err(); err != nil {
		panic(err)
	}

	// Output:
	// queue      n=3 p50    13.2 ms  p95    14.3 ms
	// batch_wait n=3 p50    55.0 ms  p95    59.5 ms
	// mem_wait   n=3 p50     0.6 ms  p95     0.6 ms
	// srs        n=3 p50     3.3 ms  p95     3.6 ms
	// synth      n=3 p50  1650.0 ms  p95  1785.0 ms
	// prove_wait n=3 p50     2.2 ms  p95     2.4 ms
	// prove      n=3 p50   880.0 ms  p95   952.0 ms
	// verify     n=3 p50     6.6 ms  p95     7.1 ms
	// persist    n=3 p50     4.4 ms  p95     4.8 ms
	// total      n=3 p50  2618.0 ms  p95  2832.2 ms
}

// recordAttempts stands in for a worker: it sets a circuit up and records n succeeded
// GPU attempts (requests sector-1 .. sector-n), the k-th with times k·10% longer than
// the first, as the database owner. A worker proving here would make the times, and
// the examples' output, vary.
func recordAttempts(ctx context.Context, pool *pgxpool.Pool, n int) {
	first := map[string]float64{
		phase.Queue: 12, phase.BatchWait: 50, phase.MemWait: 0.5, phase.SRS: 3, phase.Synth: 1500,
		phase.ProveWait: 2, phase.Prove: 800, phase.NTT: 200, phase.MSM: 520, phase.MSMG1: 480,
		phase.MSMG2: 350, phase.Verify: 6, phase.Persist: 4, phase.Total: 2380,
	} // h2d stays NULL, as from a backend that does not time its transfers apart
	if _, err := pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		VALUES ('synthetic-k10', 1024, 1, 1024, '\x00', 'digest')`); err != nil {
		panic(err)
	}
	for k := range n {
		req := fmt.Sprintf("sector-%d", k+1)
		var cols, vals []string
		for _, p := range phase.All() {
			if v, ok := first[p.Name]; ok {
				cols = append(cols, p.Column)
				vals = append(vals, fmt.Sprint(v*(1+float64(k)/10)))
			}
		}
		if _, err := pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ($1, 'synthetic-k10', '{}')`,
			req); err != nil {
			panic(err)
		}
		if _, err := pool.Exec(ctx, `
			INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, backend, outcome, started_at, finished_at, `+
			strings.Join(cols, ", ")+`)
			VALUES ($1, 1, 'synthetic-k10', 'prover-1/4242', 'cuda', 'succeeded', now(), now(), `+strings.Join(vals, ", ")+`)`,
			req); err != nil {
			panic(err)
		}
	}
}
