// Package metrics exposes a worker's state to Prometheus: per-phase durations of
// finished attempts, attempts by outcome, the River queue's depth (read from the
// database at scrape time), the memory budget and the GPUs' latest telemetry.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/store"
)

// Metrics owns a registry with cuzk's collectors. It implements worker.Observer.
type Metrics struct {
	reg      *prometheus.Registry
	phases   *prometheus.HistogramVec
	attempts *prometheus.CounterVec
}

// PhaseBuckets span a millisecond-long persist to an hour-long proof of a large circuit.
var phaseBuckets = prometheus.ExponentialBucketsRange(0.001, 3600, 24)

// New returns metrics with the Go runtime and process collectors registered.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cuzk_phase_duration_seconds",
			Help:    "Duration of each phase of finished proof attempts (ntt, msm, h2d, msm_g1, msm_g2 are inside prove).",
			Buckets: phaseBuckets,
		}, []string{"circuit", "phase"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cuzk_proof_attempts_total",
			Help: "Finished proof attempts by outcome (succeeded, failed, retryable, interrupted, cancelled).",
		}, []string{"circuit", "outcome"}),
	}
	m.reg.MustRegister(m.phases, m.attempts,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where further collectors go (and what tests gather from).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' exposition format. A collector that
// fails is reported in the response and the others are still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// AttemptFinished records an attempt's outcome and the phases it reached.
func (m *Metrics) AttemptFinished(a *store.Attempt) {
	m.attempts.WithLabelValues(a.Circuit, a.Outcome).Inc()
	for _, p := range Phases(a) {
		if p.Ms != nil {
			m.phases.WithLabelValues(a.Circuit, p.Name).Observe(*p.Ms / 1000)
		}
	}
}

// Phase is one timed phase of an attempt; Ms is nil for a phase it never reached.
type Phase struct {
	Name string
	Ms   *float64
}

// Phases lists an attempt's phases, in package phase's order and under its names
// (those of cuzk.attempt_phases).
func Phases(a *store.Attempt) []Phase {
	all := phase.All()
	out := make([]Phase, len(all))
	for i, p := range all {
		out[i] = Phase{p.Name, a.PhaseMs(p.Name)}
	}
	return out
}

// BudgetReader is the read side of worker.Budget.
type BudgetReader interface {
	Reserved() int64
	Total() int64
	PeakBytes() int64
	// EachKind calls f with each kind of reservation's bytes held now and at most.
	EachKind(f func(kind string, bytes, peak int64))
}

// WatchBudget adds gauges of the memory budget, read at scrape time.
func (m *Metrics) WatchBudget(b BudgetReader) error {
	return m.reg.Register(budgetCollector{b})
}

var (
	budgetReservedDesc = prometheus.NewDesc("cuzk_mem_budget_reserved_bytes",
		"Bytes of the memory budget reserved, of every kind.", nil, nil)
	budgetTotalDesc = prometheus.NewDesc("cuzk_mem_budget_total_bytes",
		"Size of the worker's memory budget.", nil, nil)
	budgetPeakDesc = prometheus.NewDesc("cuzk_mem_budget_peak_bytes",
		"Most bytes of the memory budget reserved at once since the worker started.", nil, nil)
	budgetKindDesc = prometheus.NewDesc("cuzk_mem_budget_kind_bytes",
		"Bytes of the memory budget reserved by kind: synthesis (working sets), circuit (compiled circuits), key (host copies of proving keys), staging (pinned staging buffers), pinned (other memory outside the Go heap), process (the process at start), other.",
		[]string{"kind"}, nil)
	budgetKindPeakDesc = prometheus.NewDesc("cuzk_mem_budget_kind_peak_bytes",
		"Most bytes of the memory budget one kind has held at once since the worker started.", []string{"kind"}, nil)
)

type budgetCollector struct{ b BudgetReader }

func (c budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- budgetReservedDesc
	ch <- budgetTotalDesc
	ch <- budgetPeakDesc
	ch <- budgetKindDesc
	ch <- budgetKindPeakDesc
}

func (c budgetCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(budgetReservedDesc, prometheus.GaugeValue, float64(c.b.Reserved()))
	ch <- prometheus.MustNewConstMetric(budgetTotalDesc, prometheus.GaugeValue, float64(c.b.Total()))
	ch <- prometheus.MustNewConstMetric(budgetPeakDesc, prometheus.GaugeValue, float64(c.b.PeakBytes()))
	c.b.EachKind(func(kind string, bytes, peak int64) {
		ch <- prometheus.MustNewConstMetric(budgetKindDesc, prometheus.GaugeValue, float64(bytes), kind)
		ch <- prometheus.MustNewConstMetric(budgetKindPeakDesc, prometheus.GaugeValue, float64(peak), kind)
	})
}

// WatchBuild adds cuzk_build_info{build} = 1, so dashboards can split timings by the
// binary that produced them (the build recorded in attempt rows).
func (m *Metrics) WatchBuild(build string) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "cuzk_build_info",
		Help:        "The running binary's build (module version and VCS revision); always 1.",
		ConstLabels: prometheus.Labels{"build": build},
	})
	g.Set(1)
	return m.reg.Register(g)
}

// KeyTier is one circuit's proving key in the tiers that hold it (worker.KeyTier).
type KeyTier struct {
	Circuit  string
	Bytes    map[string]int64 // by tier: device, pinned, file
	LastUsed time.Time
}

// KeyMove counts a circuit's key moves from one tier to another (worker.TierMove).
type KeyMove struct {
	Circuit, From, To string
	Count             int64
}

// KeyTierReader is the read side of a worker's key tiers, called at scrape time.
type KeyTierReader struct {
	Tiers     func() []KeyTier
	Moves     func() []KeyMove
	HostLimit func() int64
}

// WatchKeyTiers adds the proving keys' tier gauges and move counters.
func (m *Metrics) WatchKeyTiers(r KeyTierReader) error {
	return m.reg.Register(keyTierCollector{r})
}

// keyTiers are the tiers every key is reported in, held or not (0 bytes).
var keyTiers = []string{"device", "pinned", "file"}

var (
	keyBytesDesc = prometheus.NewDesc("cuzk_key_bytes",
		"Bytes of a circuit's proving key held in a tier: device (resident on the worker's devices, summed), pinned (its host copy, counted in the memory budget), file (what a read from its files brings into memory; the files stay on disk).",
		[]string{"circuit", "tier"}, nil)
	keyLastUsedDesc = prometheus.NewDesc("cuzk_key_last_used_seconds",
		"When a circuit's proving key was last used or read, in Unix seconds.", []string{"circuit"}, nil)
	keyMovesDesc = prometheus.NewDesc("cuzk_key_tier_moves_total",
		"Moves of a circuit's proving key between tiers: loads (file to pinned, pinned to device) and evictions (device to pinned or file, pinned to file).",
		[]string{"circuit", "from", "to"}, nil)
	keyHostLimitDesc = prometheus.NewDesc("cuzk_key_host_limit_bytes",
		"Most bytes the proving keys' host copies (the pinned tier) may hold together (--key-host-memory).", nil, nil)
)

type keyTierCollector struct{ r KeyTierReader }

func (c keyTierCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- keyBytesDesc
	ch <- keyLastUsedDesc
	ch <- keyMovesDesc
	ch <- keyHostLimitDesc
}

func (c keyTierCollector) Collect(ch chan<- prometheus.Metric) {
	for _, k := range c.r.Tiers() {
		for _, tier := range keyTiers {
			ch <- prometheus.MustNewConstMetric(keyBytesDesc, prometheus.GaugeValue, float64(k.Bytes[tier]), k.Circuit, tier)
		}
		if !k.LastUsed.IsZero() {
			ch <- prometheus.MustNewConstMetric(keyLastUsedDesc, prometheus.GaugeValue,
				float64(k.LastUsed.UnixNano())/1e9, k.Circuit)
		}
	}
	for _, mv := range c.r.Moves() {
		ch <- prometheus.MustNewConstMetric(keyMovesDesc, prometheus.CounterValue, float64(mv.Count), mv.Circuit, mv.From, mv.To)
	}
	ch <- prometheus.MustNewConstMetric(keyHostLimitDesc, prometheus.GaugeValue, float64(c.r.HostLimit()))
}
