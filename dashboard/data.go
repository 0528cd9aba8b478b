package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/store"
)

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
type Failure store.FailedRequest

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

// load reads the page's data; window is how far back the charts go.
func load(ctx context.Context, db store.DB, window time.Duration, failuresLimit int) (*Data, error) {
	d := &Data{Window: window, States: map[string]int64{}}
	now, err := store.Now(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	d.Now = now
	steps := []struct {
		what string
		fn   func(context.Context, store.DB, *Data) error
	}{
		{"request states", loadStates},
		{"timing history", loadHistory},
		{"recent failures", func(ctx context.Context, db store.DB, d *Data) error { return loadFailures(ctx, db, d, failuresLimit) }},
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

func loadStates(ctx context.Context, db store.DB, d *Data) error {
	states, err := store.RequestStates(ctx, db)
	for state, n := range states {
		d.States[state] = n
	}
	return err
}

func loadHistory(ctx context.Context, db store.DB, d *Data) error {
	// The bars cover the span that has data, not the whole window: a fresh
	// deployment's first proofs get readable bars rather than one sliver.
	first, err := store.FirstFinished(ctx, db, d.Window)
	if err != nil {
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
	stats, err := store.PhaseStats(ctx, db, d.Window, phaseSample)
	if err != nil {
		return err
	}
	for _, st := range stats {
		c := get(st.Circuit)
		c.Phases = append(c.Phases, PhaseStat{Phase: st.Phase, N: st.N, P50: st.P50, P95: st.P95, Avg: st.Avg})
		if st.Phase == phase.Total && st.N >= phaseSample {
			c.PhaseSample = phaseSample
		}
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
func historyByHour(ctx context.Context, db store.DB, d *Data, get func(string) *CircuitHistory,
	points map[string]map[time.Time]*Point) error {
	sizes, err := store.CircuitSizes(ctx, db)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for name, size := range sizes {
		get(name).Constraints = size.Constraints
		known[name] = true
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
func historyFromAttempts(ctx context.Context, db store.DB, d *Data, get func(string) *CircuitHistory,
	points map[string]map[time.Time]*Point) error {
	counts, err := store.AttemptCounts(ctx, db, d.Window)
	if err != nil {
		return err
	}
	for _, n := range counts {
		c := get(n.Circuit)
		c.Constraints, c.Succeeded, c.Failed = n.Constraints, n.Succeeded, n.Failed
	}

	// Per period: the mean of every phase and p50/p95 of the total.
	all := phase.All()
	timings, err := store.PeriodTimings(ctx, db, d.Bucket, d.Window)
	if err != nil {
		return err
	}
	for _, t := range timings {
		p := pointAt(points, t.Circuit, t.Period)
		p.N, p.P50, p.P95 = t.N, t.P50, t.P95
		for i, m := range t.Means {
			if m != nil {
				p.Mean[all[i].Name] = *m
			}
		}
	}

	failures, err := store.PeriodFailures(ctx, db, d.Bucket, d.Window)
	if err != nil {
		return err
	}
	for _, f := range failures {
		pointAt(points, f.Circuit, f.Period).Failed = f.N
	}
	return nil
}

// gpuUtilization adds to each period the mean GPU utilization of the attempts finished
// in it that carry telemetry, among each circuit's latest phaseSample attempts in the
// window: bounded like the phase table, however long the window.
func gpuUtilization(ctx context.Context, db store.DB, d *Data, get func(string) *CircuitHistory,
	points map[string]map[time.Time]*Point) error {
	util, err := store.GPUUtilization(ctx, db, d.Bucket, d.Window, phaseSample)
	if err != nil {
		return err
	}
	for _, u := range util {
		p := pointAt(points, u.Circuit, u.Period)
		p.GPUUtil, p.GPUReadings = u.Util, u.N
		get(u.Circuit).GPU = true
	}
	return nil
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

// failureScan bounds the failed attempts read for the failures table: the latest ones,
// enough for its rows unless a few requests failed hundreds of times each.
const failureScan = 50

// loadFailures lists the requests of the latest failed attempts, one row each.
func loadFailures(ctx context.Context, db store.DB, d *Data, limit int) error {
	failures, err := store.RecentFailures(ctx, db, limit, failureScan)
	for _, f := range failures {
		d.Failures = append(d.Failures, Failure(f))
	}
	return err
}

// A worker that has not beaten for this long is not shown (heartbeats are ~10s apart).
const liveAfter = 2 * time.Minute

func loadWorkers(ctx context.Context, db store.DB, d *Data) error {
	rows, err := store.LiveWorkers(ctx, db, liveAfter)
	if err != nil {
		return err
	}
	for _, w := range rows {
		lw := LiveWorker{Worker: w.Worker, Backend: w.Backend, StartedAt: w.StartedAt, LastSeenAt: w.LastSeenAt, Running: w.Running}
		if err := json.Unmarshal(w.Devices, &lw.Devices); err != nil {
			return fmt.Errorf("worker %s devices: %w", w.Worker, err)
		}
		if err := json.Unmarshal(w.Config, &lw.Config); err != nil {
			return fmt.Errorf("worker %s config: %w", w.Worker, err)
		}
		d.Workers = append(d.Workers, lw)
	}
	return nil
}

func loadGPUs(ctx context.Context, db store.DB, d *Data) error {
	rows, err := store.LatestTelemetry(ctx, db, d.Window)
	if err != nil {
		return err
	}
	for _, t := range rows {
		g := GPU{Device: t.Device, Worker: t.Worker}
		if err := json.Unmarshal(t.Telemetry, &g.Sample); err != nil {
			return fmt.Errorf("telemetry of %s: %w", t.Device, err)
		}
		d.GPUs = append(d.GPUs, g)
	}
	return nil
}
