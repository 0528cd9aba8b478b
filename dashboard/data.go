package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/phase"
)

// DB is what the dashboard reads through (*pgxpool.Pool has it).
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// StackPhases are the phases that follow one another in an attempt, so their means
// stack up to about the mean total (phase.Stacked). ntt/msm (and the device phases)
// are inside prove.
func StackPhases() []string { return phase.Names(phase.Stacked()) }

// Point is one period of one circuit's timing history.
type Point struct {
	Period time.Time
	N      int64              // succeeded attempts (of the total phase)
	Failed int64              // attempts that failed, for good or to be retried
	Mean   map[string]float64 // ms, by phase
	P50    float64            // total_ms
	P95    float64            // total_ms
	// GPUUtil is the mean GPU utilization (percent) read at the end of the period's
	// attempts that carry telemetry; GPUReadings counts them (0: no reading).
	GPUUtil     float64
	GPUReadings int64
}

// PhaseStat is one phase's distribution over the whole window.
type PhaseStat struct {
	Phase         string
	N             int64
	P50, P95, Avg float64
}

// CircuitHistory is one circuit's timing charts' data.
type CircuitHistory struct {
	Circuit     string
	Constraints int64
	Points      []Point // by period, empty periods included
	Phases      []PhaseStat
	PhaseSample int   // the phase table covers only this many latest attempts (0: all in the window)
	Succeeded   int64 // attempts in the window
	Failed      int64 // attempts in the window that failed, for good or to be retried
	GPU         bool  // some period has GPU utilization readings
}

// Failure is a request with a recent attempt that did not succeed: its latest failed
// attempt, and how many attempts the request has had in all.
type Failure struct {
	RequestID, Circuit, State string // State: the request's state now
	Outcome, Error, Worker    string // of the latest failed attempt
	Attempts                  int64  // every attempt of the request, failed or not
	LastAttemptAt             time.Time
}

// LiveWorker is a row of cuzk.workers seen recently.
type LiveWorker struct {
	Worker, Backend       string
	Devices               []string
	Config                map[string]any
	StartedAt, LastSeenAt time.Time
	Running               int64 // attempts in progress
}

// GPU is a device's latest telemetry, from attempt rows or this process's poller.
type GPU struct {
	Device, Worker string
	Sample         devinfo.Sample
	Live           bool // from this process's poller, not an attempt row
}

// Data is everything one page shows.
type Data struct {
	Now        time.Time
	Window     time.Duration
	Bucket     time.Duration
	States     map[string]int64
	Circuits   []CircuitHistory
	Failures   []Failure
	Workers    []LiveWorker
	GPUs       []GPU
	Comparison *Comparison
}

// buckets are the period lengths a chart may use, smallest first.
var buckets = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour,
	6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// maxBars keeps a chart readable at the page's width.
const maxBars = 48

// pickBucket is the smallest period that shows span in at most maxBars bars.
func pickBucket(span time.Duration) time.Duration {
	for _, b := range buckets {
		if span/b < maxBars {
			return b
		}
	}
	return buckets[len(buckets)-1]
}

func secs(d time.Duration) float64 { return d.Seconds() }

// load reads the page's data; window is how far back the charts go.
func load(ctx context.Context, db DB, window time.Duration, failuresLimit int) (*Data, error) {
	d := &Data{Window: window, States: map[string]int64{}}
	if err := db.QueryRow(ctx, "SELECT now()").Scan(&d.Now); err != nil {
		return nil, fmt.Errorf("dashboard: read the database clock: %w", err)
	}
	steps := []struct {
		what string
		fn   func(context.Context, DB, *Data) error
	}{
		{"request states", loadStates},
		{"timing history", loadHistory},
		{"recent failures", func(ctx context.Context, db DB, d *Data) error { return loadFailures(ctx, db, d, failuresLimit) }},
		{"live workers", loadWorkers},
		{"GPU telemetry", loadGPUs},
	}
	for _, s := range steps {
		if err := s.fn(ctx, db, d); err != nil {
			return nil, fmt.Errorf("dashboard: %s: %w", s.what, err)
		}
	}
	return d, nil
}

func loadStates(ctx context.Context, db DB, d *Data) error {
	rows, err := db.Query(ctx, "SELECT state, count(*) FROM cuzk.proof_status GROUP BY state")
	if err != nil {
		return err
	}
	var state string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&state, &n}, func() error { d.States[state] = n; return nil })
	return err
}

func loadHistory(ctx context.Context, db DB, d *Data) error {
	// The bars cover the span that has data, not the whole window: a fresh
	// deployment's first proofs get readable bars rather than one sliver.
	var first *time.Time
	if err := db.QueryRow(ctx, `SELECT min(finished_at) FROM cuzk.proof_attempts
	     WHERE outcome IN ('succeeded', 'failed', 'retryable', 'interrupted')
	       AND finished_at >= now() - make_interval(secs => $1)`, secs(d.Window)).Scan(&first); err != nil {
		return err
	}
	span := d.Window
	if first != nil {
		span = d.Now.Sub(*first)
	}
	d.Bucket = pickBucket(span)

	byCircuit := map[string]*CircuitHistory{}
	get := func(name string) *CircuitHistory {
		c := byCircuit[name]
		if c == nil {
			c = &CircuitHistory{Circuit: name}
			byCircuit[name] = c
		}
		return c
	}
	points := map[string]map[time.Time]*Point{}
	if d.Bucket >= time.Hour {
		if err := historyByHour(ctx, db, d, get, points); err != nil {
			return err
		}
	} else if err := historyFromAttempts(ctx, db, d, get, points); err != nil {
		return err
	}

	// Each phase's distribution over the window, from each circuit's latest
	// phaseSample succeeded attempts in it: the cost stays bounded however long the
	// window (the table says when it is a sample).
	rows, err := db.Query(ctx, `
		SELECT r.circuit, p.phase, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY p.ms),
		       percentile_cont(0.95) WITHIN GROUP (ORDER BY p.ms), avg(p.ms)
		  FROM cuzk.circuits c
		 CROSS JOIN LATERAL (SELECT * FROM cuzk.proof_attempts a
		                      WHERE a.circuit = c.name AND a.outcome = 'succeeded'
		                        AND a.finished_at >= now() - make_interval(secs => $1)
		                      ORDER BY a.finished_at DESC LIMIT $2) r
		 CROSS JOIN LATERAL (`+phaseValues("r")+`) AS p(phase, ord, ms)
		 WHERE p.ms IS NOT NULL
		 GROUP BY r.circuit, p.phase`, secs(d.Window), phaseSample)
	if err != nil {
		return err
	}
	var name, ph string
	var n int64
	var p50, p95, mean float64
	if _, err := pgx.ForEachRow(rows, []any{&name, &ph, &n, &p50, &p95, &mean}, func() error {
		c := get(name)
		c.Phases = append(c.Phases, PhaseStat{Phase: ph, N: n, P50: p50, P95: p95, Avg: mean})
		if ph == phase.Total && n >= phaseSample {
			c.PhaseSample = phaseSample
		}
		return nil
	}); err != nil {
		return err
	}

	if err := gpuUtilization(ctx, db, d, get, points); err != nil {
		return err
	}

	end := d.Now.Truncate(time.Second)
	for name, c := range byCircuit {
		sort.Slice(c.Phases, func(i, j int) bool { return phase.Order(c.Phases[i].Phase) < phase.Order(c.Phases[j].Phase) })
		ps := points[name]
		if len(ps) == 0 {
			continue
		}
		// Fill empty periods so the x axis is linear in time.
		var lo time.Time
		for t := range ps {
			if lo.IsZero() || t.Before(lo) {
				lo = t
			}
		}
		for t := lo; !t.After(end); t = t.Add(d.Bucket) {
			if p := ps[t]; p != nil {
				c.Points = append(c.Points, *p)
			} else {
				c.Points = append(c.Points, Point{Period: t, Mean: map[string]float64{}})
			}
		}
	}
	for _, c := range byCircuit {
		d.Circuits = append(d.Circuits, *c)
	}
	// Busiest circuits first, then by name.
	sort.Slice(d.Circuits, func(i, j int) bool {
		a, b := d.Circuits[i], d.Circuits[j]
		if a.Succeeded+a.Failed != b.Succeeded+b.Failed {
			return a.Succeeded+a.Failed > b.Succeeded+b.Failed
		}
		return a.Circuit < b.Circuit
	})
	return nil
}

// historyByHour fills the circuits' counts and per-period points from hourly
// aggregates (periods of an hour or more; see rollup.go).
func historyByHour(ctx context.Context, db DB, d *Data, get func(string) *CircuitHistory,
	points map[string]map[time.Time]*Point) error {
	rows, err := db.Query(ctx, `SELECT name, constraints FROM cuzk.circuits`)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	var name string
	var constraints int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &constraints}, func() error {
		get(name).Constraints = constraints
		known[name] = true
		return nil
	}); err != nil {
		return err
	}
	ps, err := periodStats(ctx, db, d, d.Now.Add(-d.Window))
	if err != nil {
		return err
	}
	for circuit, byPeriod := range ps {
		if !known[circuit] {
			continue
		}
		c := get(circuit)
		points[circuit] = map[time.Time]*Point{}
		for period, st := range byPeriod {
			c.Succeeded += st.succeeded
			c.Failed += st.failed
			if st.timed > 0 || st.failed > 0 {
				points[circuit][period] = st.point(period)
			}
		}
	}
	return nil
}

// historyFromAttempts fills the circuits' counts and per-period points from the
// attempt rows: exact percentiles, for windows short enough to read whole.
func historyFromAttempts(ctx context.Context, db DB, d *Data, get func(string) *CircuitHistory,
	points map[string]map[time.Time]*Point) error {
	rows, err := db.Query(ctx, `
		SELECT c.name, c.constraints,
		       count(a.*) FILTER (WHERE a.outcome = 'succeeded'),
		       count(a.*) FILTER (WHERE a.outcome IN ('failed', 'retryable', 'interrupted'))
		  FROM cuzk.circuits c
		  LEFT JOIN cuzk.proof_attempts a ON a.circuit = c.name AND a.finished_at >= now() - make_interval(secs => $1)
		 GROUP BY c.name, c.constraints`, secs(d.Window))
	if err != nil {
		return err
	}
	var name string
	var constraints, ok, failed int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &constraints, &ok, &failed}, func() error {
		c := get(name)
		c.Constraints, c.Succeeded, c.Failed = constraints, ok, failed
		return nil
	}); err != nil {
		return err
	}

	// Per period: the mean of every phase (one pass, no sort) and p50/p95 of the total
	// only, straight from the attempt columns. (cuzk.timing_history sorts every phase
	// of every period, which a month of a busy fleet makes take many seconds.)
	all := phase.All()
	avgs := make([]string, len(all))
	for i, p := range all {
		avgs[i] = "avg(" + p.Column + ")"
	}
	rows, err = db.Query(ctx, `
		SELECT circuit, date_bin(make_interval(secs => $1), finished_at, timestamptz '2000-01-01'), count(*),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms), percentile_cont(0.95) WITHIN GROUP (ORDER BY total_ms),
		       `+strings.Join(avgs, ", ")+`
		  FROM cuzk.proof_attempts
		 WHERE outcome = 'succeeded' AND total_ms IS NOT NULL AND finished_at >= now() - make_interval(secs => $2)
		 GROUP BY 1, 2`,
		secs(d.Bucket), secs(d.Window))
	if err != nil {
		return err
	}
	var period time.Time
	var n int64
	var p50, p95 float64
	point := func(name string, period time.Time) *Point { return pointAt(points, name, period) }
	means := make([]*float64, len(all))
	dest := []any{&name, &period, &n, &p50, &p95}
	for i := range means {
		dest = append(dest, &means[i])
	}
	if _, err := pgx.ForEachRow(rows, dest, func() error {
		p := point(name, period)
		p.N, p.P50, p.P95 = n, p50, p95
		for i, m := range means {
			if m != nil {
				p.Mean[all[i].Name] = *m
			}
		}
		return nil
	}); err != nil {
		return err
	}

	rows, err = db.Query(ctx, `
		SELECT circuit, date_bin(make_interval(secs => $1), finished_at, timestamptz '2000-01-01'), count(*)
		  FROM cuzk.proof_attempts
		 WHERE outcome IN ('failed', 'retryable', 'interrupted') AND finished_at >= now() - make_interval(secs => $2)
		 GROUP BY 1, 2`, secs(d.Bucket), secs(d.Window))
	if err != nil {
		return err
	}
	if _, err := pgx.ForEachRow(rows, []any{&name, &period, &n}, func() error {
		point(name, period).Failed = n
		return nil
	}); err != nil {
		return err
	}
	return nil
}

// gpuUtilization adds to each period the mean GPU utilization of the attempts finished
// in it that carry telemetry, among each circuit's latest phaseSample attempts in the
// window: bounded like the phase table, however long the window.
func gpuUtilization(ctx context.Context, db DB, d *Data, get func(string) *CircuitHistory,
	points map[string]map[time.Time]*Point) error {
	rows, err := db.Query(ctx, `
		SELECT c.name, date_bin(make_interval(secs => $1), t.finished_at, timestamptz '2000-01-01'), avg(t.util), count(*)
		  FROM cuzk.circuits c
		 CROSS JOIN LATERAL (SELECT a.finished_at, (a.telemetry->>'gpu_util_pct')::float8 AS util
		                       FROM cuzk.proof_attempts a
		                      WHERE a.circuit = c.name AND a.finished_at >= now() - make_interval(secs => $2)
		                      ORDER BY a.finished_at DESC LIMIT $3) t
		 WHERE t.util IS NOT NULL
		 GROUP BY 1, 2`, secs(d.Bucket), secs(d.Window), phaseSample)
	if err != nil {
		return err
	}
	var name string
	var period time.Time
	var util float64
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&name, &period, &util, &n}, func() error {
		p := pointAt(points, name, period)
		p.GPUUtil, p.GPUReadings = util, n
		get(name).GPU = true
		return nil
	})
	return err
}

// pointAt is circuit name's point of period, added empty if points lacks it.
func pointAt(points map[string]map[time.Time]*Point, name string, period time.Time) *Point {
	if points[name] == nil {
		points[name] = map[time.Time]*Point{}
	}
	p := points[name][period]
	if p == nil {
		p = &Point{Period: period, Mean: map[string]float64{}}
		points[name][period] = p
	}
	return p
}

// phaseSample bounds the attempts per circuit behind the dashboard's phase table.
const phaseSample = 20000

// phaseValues is a VALUES list of (phase, ord, ms), one row for each phase of the
// proof_attempts row r.
func phaseValues(r string) string {
	var b strings.Builder
	b.WriteString("VALUES ")
	for i, p := range phase.All() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "('%s', %d, %s.%s)", p.Name, p.Ord, r, p.Column)
	}
	return b.String()
}

// failureScan bounds the failed attempts read for the failures table: the latest ones,
// enough for its rows unless a few requests failed hundreds of times each.
const failureScan = 50

// loadFailures lists the requests of the latest failed attempts, one row each.
func loadFailures(ctx context.Context, db DB, d *Data, limit int) error {
	rows, err := db.Query(ctx, `
		WITH recent AS (
		    SELECT request_id, max(coalesce(finished_at, started_at)) AS failed_at
		      FROM (SELECT request_id, finished_at, started_at FROM cuzk.proof_attempts
		             WHERE outcome IN ('failed', 'retryable', 'interrupted')
		             ORDER BY coalesce(finished_at, started_at) DESC LIMIT $2) f
		     GROUP BY request_id
		     ORDER BY failed_at DESC LIMIT $1)
		SELECT r.request_id, l.circuit, coalesce(p.state, ''), l.outcome, coalesce(l.error, ''), l.worker, n.attempts, n.last_at
		  FROM recent r
		 CROSS JOIN LATERAL (SELECT a.circuit, a.outcome, a.error, a.worker FROM cuzk.proof_attempts a
		                      WHERE a.request_id = r.request_id AND a.outcome IN ('failed', 'retryable', 'interrupted')
		                      ORDER BY a.attempt DESC LIMIT 1) l
		 CROSS JOIN LATERAL (SELECT count(*) AS attempts, max(coalesce(a.finished_at, a.started_at)) AS last_at
		                       FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id) n
		  LEFT JOIN cuzk.proof_requests p ON p.request_id = r.request_id
		 ORDER BY r.failed_at DESC`, limit, limit*failureScan)
	if err != nil {
		return err
	}
	var f Failure
	_, err = pgx.ForEachRow(rows, []any{&f.RequestID, &f.Circuit, &f.State, &f.Outcome, &f.Error, &f.Worker, &f.Attempts, &f.LastAttemptAt},
		func() error { d.Failures = append(d.Failures, f); return nil })
	return err
}

// A worker that has not beaten for this long is not shown (heartbeats are ~10s apart).
const liveAfter = 2 * time.Minute

func loadWorkers(ctx context.Context, db DB, d *Data) error {
	rows, err := db.Query(ctx, `
		SELECT w.worker, w.backend, w.devices, w.config, w.started_at, w.last_seen_at,
		       (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.worker = w.worker AND a.outcome = 'running')
		  FROM cuzk.workers w
		 WHERE w.stopped_at IS NULL AND w.last_seen_at >= now() - make_interval(secs => $1)
		 ORDER BY w.worker`, secs(liveAfter))
	if err != nil {
		return err
	}
	var w LiveWorker
	var devs, cfg []byte
	_, err = pgx.ForEachRow(rows, []any{&w.Worker, &w.Backend, &devs, &cfg, &w.StartedAt, &w.LastSeenAt, &w.Running}, func() error {
		lw := w
		lw.Devices, lw.Config = nil, nil
		if err := json.Unmarshal(devs, &lw.Devices); err != nil {
			return fmt.Errorf("worker %s devices: %w", w.Worker, err)
		}
		if err := json.Unmarshal(cfg, &lw.Config); err != nil {
			return fmt.Errorf("worker %s config: %w", w.Worker, err)
		}
		d.Workers = append(d.Workers, lw)
		return nil
	})
	return err
}

func loadGPUs(ctx context.Context, db DB, d *Data) error {
	rows, err := db.Query(ctx, `
		SELECT DISTINCT ON (device) device, worker, telemetry
		  FROM cuzk.proof_attempts
		 WHERE telemetry IS NOT NULL AND device IS NOT NULL AND finished_at >= now() - make_interval(secs => $1)
		 ORDER BY device, finished_at DESC`, secs(d.Window))
	if err != nil {
		return err
	}
	var g GPU
	var tel []byte
	_, err = pgx.ForEachRow(rows, []any{&g.Device, &g.Worker, &tel}, func() error {
		x := GPU{Device: g.Device, Worker: g.Worker}
		if err := json.Unmarshal(tel, &x.Sample); err != nil {
			return fmt.Errorf("telemetry of %s: %w", g.Device, err)
		}
		d.GPUs = append(d.GPUs, x)
		return nil
	})
	return err
}
