package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// seedSpread writes attempts of two circuits spread over the last 60 hours: successes
// with log-spread totals (some with no total), failures and retries.
func seedSpread(t *testing.T, db *pgtest.DB) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
	      VALUES ('c1', 1024, 1, 1100, '\x00', 'd'), ('c2', 2048, 1, 2100, '\x00', 'd')`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		c := []string{"c1", "c2"}[i%2]
		rid := fmt.Sprintf("r%d", i)
		secsAgo := rng.Float64() * 60 * 3600
		total := math.Exp(math.Log(50) + rng.Float64()*math.Log(100)) // 50 ms .. 5 s
		outcome := "succeeded"
		switch x := rng.IntN(100); {
		case x < 3:
			outcome = "failed"
		case x < 5:
			outcome = "retryable"
		}
		var tot any = total
		if outcome == "succeeded" && rng.IntN(50) == 0 {
			tot = nil // a success without timings
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ($1, $2, '{}')`,
			rid, c); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, finished_at,
			       queue_ms, synth_ms, prove_ms, persist_ms, total_ms)
			VALUES ($1, 1, $2, $3, 'w/1', now() - make_interval(secs => $4), $5::float8 * 0.1, $5::float8 * 0.3,
			        $5::float8 * 0.5, CASE WHEN $6 THEN 2.5 END, $5)`,
			rid, c, outcome, secsAgo, tot, i%3 == 0); err != nil {
			t.Fatal(err)
		}
	}
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

// The hourly path (aggregates from the attempt rows before any fill, then from filled
// hours) gives the counts and means of the exact path, and p50/p95 within the
// histogram's resolution.
func TestHistoryByHourMatchesAttempts(t *testing.T) {
	db := pgtest.New(t)
	seedSpread(t, db)
	ctx := context.Background()
	const window = 72 * time.Hour

	exact := func() *Data {
		d := &Data{Window: window, Bucket: 6 * time.Hour}
		if err := db.Pool.QueryRow(ctx, "SELECT now()").Scan(&d.Now); err != nil {
			t.Fatal(err)
		}
		byCircuit := map[string]*CircuitHistory{}
		get := func(n string) *CircuitHistory {
			if byCircuit[n] == nil {
				byCircuit[n] = &CircuitHistory{Circuit: n}
			}
			return byCircuit[n]
		}
		points := map[string]map[time.Time]*Point{}
		if err := historyFromAttempts(ctx, db.Pool, d, get, points); err != nil {
			t.Fatal(err)
		}
		for n, c := range byCircuit {
			for _, p := range points[n] {
				c.Points = append(c.Points, *p)
			}
			d.Circuits = append(d.Circuits, *c)
		}
		return d
	}
	discrete := map[string][2]float64{} // circuit and period -> percentile_disc(0.5), (0.95) of the total
	check := func(label string) {
		t.Helper()
		rows, err := db.Pool.Query(ctx, `
			SELECT circuit, date_bin('6 hours', finished_at, timestamptz '2000-01-01'),
			       percentile_disc(0.5) WITHIN GROUP (ORDER BY total_ms), percentile_disc(0.95) WITHIN GROUP (ORDER BY total_ms)
			  FROM cuzk.proof_attempts WHERE outcome = 'succeeded' AND total_ms IS NOT NULL GROUP BY 1, 2`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			var p time.Time
			var v [2]float64
			if err := rows.Scan(&c, &p, &v[0], &v[1]); err != nil {
				t.Fatal(err)
			}
			discrete[c+" "+p.UTC().String()] = v
		}
		rows.Close()
		want := exact()
		got, err := load(ctx, db.Pool, window, 20)
		if err != nil {
			t.Fatal(err)
		}
		if got.Bucket != 6*time.Hour {
			t.Fatalf("%s: bucket %v, want 6h (the hourly path)", label, got.Bucket)
		}
		for _, wc := range want.Circuits {
			var gc *CircuitHistory
			for i := range got.Circuits {
				if got.Circuits[i].Circuit == wc.Circuit {
					gc = &got.Circuits[i]
				}
			}
			if gc == nil || gc.Succeeded != wc.Succeeded || gc.Failed != wc.Failed || gc.Constraints != wc.Constraints {
				t.Fatalf("%s: circuit %s: got %+v, want succeeded %d failed %d", label, wc.Circuit, gc, wc.Succeeded, wc.Failed)
			}
			byPeriod := map[time.Time]Point{}
			for _, p := range gc.Points {
				byPeriod[p.Period] = p
			}
			for _, wp := range wc.Points {
				gp, ok := byPeriod[wp.Period]
				if !ok || gp.N != wp.N || gp.Failed != wp.Failed {
					t.Errorf("%s: %s %v: n %d failed %d, want %d %d", label, wc.Circuit, wp.Period, gp.N, gp.Failed, wp.N, wp.Failed)
					continue
				}
				for ph, m := range wp.Mean {
					if !near(gp.Mean[ph], m, 1e-9) {
						t.Errorf("%s: %s %v: mean %s %.6f, want %.6f", label, wc.Circuit, wp.Period, ph, gp.Mean[ph], m)
					}
				}
				if len(gp.Mean) != len(wp.Mean) {
					t.Errorf("%s: %s %v: means of %d phases, want %d", label, wc.Circuit, wp.Period, len(gp.Mean), len(wp.Mean))
				}
				// The histogram's quantile is the middle of the bucket that holds the
				// attempt at that rank: within 2^(1/32) of percentile_disc's value.
				disc := discrete[wc.Circuit+" "+wp.Period.UTC().String()]
				if !near(gp.P50, disc[0], 0.022) || !near(gp.P95, disc[1], 0.022) {
					t.Errorf("%s: %s %v: p50/p95 %.1f/%.1f, want %.1f/%.1f within 2.2%%", label, wc.Circuit, wp.Period,
						gp.P50, gp.P95, disc[0], disc[1])
				}
			}
		}
	}

	check("before any fill")
	var until time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT cuzk.fill_attempt_hours(now() - interval '4 days')`).Scan(&until); err != nil {
		t.Fatal(err)
	}
	var hours int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM cuzk.attempt_hours`).Scan(&hours); err != nil {
		t.Fatal(err)
	}
	if hours < 100 || time.Since(until) > 71*time.Minute || time.Since(until) < 10*time.Minute {
		t.Fatalf("after a fill: %d hour rows, filled until %v", hours, until)
	}
	check("from filled hours")

	// A straggler in the last filled hour is counted by the next fill.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('late', 'c1', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, finished_at, total_ms)
		VALUES ('late', 1, 'c1', 'failed', 'w/1', $1::timestamptz - interval '30 minutes', 7)`, until); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT cuzk.fill_attempt_hours(now())`).Scan(&until); err != nil {
		t.Fatal(err)
	}
	check("after a straggler")
}

// KeepRollup fills in the background and stops with its context.
func TestKeepRollup(t *testing.T) {
	db := pgtest.New(t)
	seedSpread(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		KeepRollup(ctx, db.Pool, 10*time.Millisecond, slog.New(slog.DiscardHandler))
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM cuzk.attempt_hours`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("KeepRollup filled nothing in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("KeepRollup did not return after its context ended")
	}
}

// BenchmarkHistoryMonth times a 30-day window's charts (periods of a day) at one
// million attempts, read from the attempt rows (the reference) and from filled hours:
//
//	go test ./dashboard -run '^$' -bench HistoryMonth -benchtime 5x
func BenchmarkHistoryMonth(b *testing.B) {
	db := pgtest.New(b)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		      VALUES ('c1', 1024, 1, 1100, '\x00', 'd'), ('c2', 2048, 1, 2100, '\x00', 'd')`,
		`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
		      SELECT 'r' || i, CASE WHEN i % 2 = 0 THEN 'c1' ELSE 'c2' END, '{}' FROM generate_series(1, 1000000) i`,
		// One attempt every 2.5 s over 29 days, 1% failed.
		`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, finished_at,
		        queue_ms, synth_ms, prove_ms, verify_ms, persist_ms, total_ms)
		      SELECT 'r' || i, 1, CASE WHEN i % 2 = 0 THEN 'c1' ELSE 'c2' END,
		             CASE WHEN i % 100 = 0 THEN 'failed' ELSE 'succeeded' END, 'w/1',
		             now() - make_interval(secs => i * 2.5), 5 + i % 7, 100 + i % 50, 300 + i % 200, 4, 2, 411 + i % 257
		        FROM generate_series(1, 1000000) i`,
		`ANALYZE cuzk.proof_attempts`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	d := &Data{Window: 30 * 24 * time.Hour, Bucket: 24 * time.Hour}
	if err := db.Pool.QueryRow(ctx, "SELECT now()").Scan(&d.Now); err != nil {
		b.Fatal(err)
	}
	get := func(string) *CircuitHistory { return &CircuitHistory{} }
	b.Run("attempts", func(b *testing.B) {
		for range b.N {
			if err := historyFromAttempts(ctx, db.Pool, d, get, map[string]map[time.Time]*Point{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	t0 := time.Now()
	if _, err := db.Pool.Exec(ctx, `SELECT cuzk.fill_attempt_hours(now() - interval '31 days')`); err != nil {
		b.Fatal(err)
	}
	b.Logf("first fill of 31 days: %v", time.Since(t0))
	b.Run("hourly", func(b *testing.B) {
		for range b.N {
			if err := historyByHour(ctx, db.Pool, d, get, map[string]map[time.Time]*Point{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
