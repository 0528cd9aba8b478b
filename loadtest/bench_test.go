package loadtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

// withDB is e pointed at another database (same keys and circuit cache).
func (e *env) withDB(url string) *env {
	c := *e
	c.vars = nil
	for _, kv := range e.vars {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			c.vars = append(c.vars, kv)
		}
	}
	c.vars = append(c.vars, "DATABASE_URL="+url)
	return &c
}

// BenchmarkThroughputWorkers measures small-proof throughput (synthetic-k6, CPU) of one
// and of two `cuzk worker` processes on this host, each configuration on its own
// database with its processes started once and warmed up. Every iteration inserts the
// same number of requests into each (alternating which goes first) and times from the
// insert to the last proof stored (created_at to finished_at in the rows). Workers run
// with default settings except --backend cpu and --poll-interval 100ms.
//
//	go test ./loadtest/ -run '^$' -bench ThroughputWorkers -benchtime 3x
func BenchmarkThroughputWorkers(b *testing.B) {
	const n = 300
	inputs, err := synth.Inputs(loadCircuit, 1)
	if err != nil {
		b.Fatal(err)
	}
	type config struct {
		name  string
		procs int
		db    *pgtest.DB
		rates []float64
	}
	configs := []*config{{name: "1 worker", procs: 1}, {name: "2 workers", procs: 2}}
	base := newEnv(b, "")
	for i, c := range configs {
		c.db = pgtest.New(b)
		e := base.withDB(c.db.URL)
		e.run(b, "setup", "--circuit", loadCircuit, "--keys-dir", e.keysDir, "--cache-dir", e.cacheDir)
		for p := range c.procs {
			e.startWorker(b, fmt.Sprintf("bench-%d-%d", i, p), "--poll-interval", "100ms")
		}
	}
	round := func(c *config, prefix string, count int) float64 {
		_, err := c.db.Pool.Exec(context.Background(), `
			INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
			SELECT $1 || '-' || g, $2, $3::jsonb FROM generate_series(1, $4::int) g`,
			prefix, loadCircuit, string(inputs), count)
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Minute)
		waitFor(b, c.db.Pool, deadline, prefix, `SELECT count(*) FROM cuzk.proof_requests WHERE request_id LIKE $1 || '-%' AND state = 'succeeded'`,
			func(k int) bool { return k == count }, prefix)
		var secs float64
		if err := c.db.Pool.QueryRow(context.Background(), `
			SELECT extract(epoch FROM max(finished_at) - min(created_at)) FROM cuzk.proof_requests WHERE request_id LIKE $1 || '-%'`,
			prefix).Scan(&secs); err != nil {
			b.Fatal(err)
		}
		return float64(count) / secs
	}
	for _, c := range configs {
		round(c, "warm", 20) // keys loaded, first-use costs paid
	}
	i := 0
	for b.Loop() {
		order := configs
		if i%2 == 1 {
			order = []*config{configs[1], configs[0]}
		}
		for _, c := range order {
			r := round(c, fmt.Sprintf("r%d", i), n)
			c.rates = append(c.rates, r)
			b.Logf("round %d, %s: %.1f proofs/s", i+1, c.name, r)
		}
		i++
	}
	one, two := medianF(configs[0].rates), medianF(configs[1].rates)
	b.ReportMetric(one, "proofs/s_1worker")
	b.ReportMetric(two, "proofs/s_2workers")
	fmt.Printf("synthetic-k6 throughput, %d requests per round, median of %d: 1 worker %.1f proofs/s, 2 workers %.1f proofs/s; two_vs_one: %.2f\n",
		n, len(configs[0].rates), one, two, two/one)
}

func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
