// Package regress compares per-phase proving timings between two sets of attempts (two
// builds, two configurations, two periods, two benchmark arms) and flags the phases that
// got slower beyond a threshold with confidence.
//
// Timings are skewed (long right tails from GC pauses, queueing and contention), so the
// comparison is on medians, as a ratio B/A: the change in % is (median B / median A − 1).
// Its confidence interval comes from one of two methods:
//
//   - Bootstrap (the CLI's default): percentile interval of the ratio of medians over
//     resamples of both sides, drawn with a fixed-seed RNG so a report is reproducible.
//   - OrderStat: the standard error of each side's log median from the distribution-free
//     order-statistic interval of the median (McKean–Schrader), combined for the log
//     ratio. It needs only sorting, so it is what the SQL function cuzk.compare_timings
//     computes; this package computes it identically.
//
// A phase is flagged when the interval's lower bound is above the threshold: the data
// say with the chosen confidence that B is slower by more than the threshold. The rule
// trades power on small shifts for few false alarms, which is what a deploy gate needs;
// under no change it flags far less often than the one-sided error rate (1−confidence)/2.
package regress

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"github.com/cuzk/cuzk/phase"
)

// Phases are the names of the timed phases of an attempt, in pipeline order (package
// phase's table).
func Phases() []string { return phase.Names(phase.All()) }

// Key names one compared series: where the samples come from ("worker" attempts or
// "bench" runs), the circuit and the phase.
type Key struct {
	Source, Circuit, Phase string
}

// Samples are timings in milliseconds per series.
type Samples map[Key][]float64

// Add appends one timing.
func (s Samples) Add(k Key, ms float64) { s[k] = append(s[k], ms) }

// Method is how the confidence interval is computed.
type Method string

const (
	Bootstrap Method = "bootstrap"
	OrderStat Method = "orderstat"
)

// Options tune a comparison; start from Defaults().
type Options struct {
	ThresholdPct float64 // slowdown that matters, in %; 0 flags any slowdown the interval shows
	Confidence   float64 // two-sided interval level
	MinN         int     // fewest samples on each side to compare a series
	Method       Method
	Resamples    int    // bootstrap resamples
	Seed         uint64 // bootstrap seed
	// BootstrapMaxN: a series with more samples than this on a side gets the
	// order-statistic interval even under Bootstrap. A resample costs O(n), so at a
	// fleet's history (10^5-10^6 attempts a side) the bootstrap takes minutes per
	// series, while the two intervals agree at such n (TestLargeSamplesUseOrderStat).
	BootstrapMaxN int
	Circuit       string // only this circuit when set
}

// Defaults: 5% threshold, 95% intervals, at least 10 samples a side, bootstrap.
func Defaults() Options {
	return Options{ThresholdPct: 5, Confidence: 0.95, MinN: 10, Method: Bootstrap, Resamples: 2000, Seed: 1, BootstrapMaxN: 10000}
}

// Validate says what is wrong with o, if anything.
func (o Options) Validate() error {
	switch {
	case !(o.ThresholdPct >= 0):
		return fmt.Errorf("threshold %v%%: must be at least 0", o.ThresholdPct)
	case !(o.Confidence > 0.5 && o.Confidence < 1):
		return fmt.Errorf("confidence %v: must be between 0.5 and 1", o.Confidence)
	case o.MinN < 2:
		return fmt.Errorf("minimum samples %d: must be at least 2", o.MinN)
	case o.Method != Bootstrap && o.Method != OrderStat:
		return fmt.Errorf("method %q: want %s or %s", o.Method, Bootstrap, OrderStat)
	case o.Method == Bootstrap && o.Resamples < 100:
		return fmt.Errorf("resamples %d: want at least 100", o.Resamples)
	}
	return nil
}

// Row is the comparison of one series. Change and interval are nil when the series was
// not compared; Note says why.
type Row struct {
	Source    string   `json:"source"`
	Circuit   string   `json:"circuit"`
	Phase     string   `json:"phase"`
	NA        int      `json:"n_a"`
	NB        int      `json:"n_b"`
	MedianA   *float64 `json:"median_a_ms"`
	MedianB   *float64 `json:"median_b_ms"`
	P95A      *float64 `json:"p95_a_ms"`
	P95B      *float64 `json:"p95_b_ms"`
	ChangePct *float64 `json:"change_pct"`
	CILowPct  *float64 `json:"ci_low_pct"`
	CIHighPct *float64 `json:"ci_high_pct"`
	Flagged   bool     `json:"flagged"` // slower beyond the threshold with confidence
	Faster    bool     `json:"faster"`  // faster beyond the threshold with confidence
	Note      string   `json:"note,omitempty"`
	// Interval names the method when it is not the report's (a large series under
	// Bootstrap gets OrderStat, see Options.BootstrapMaxN).
	Interval Method `json:"interval,omitempty"`
}

// Report is a whole comparison.
type Report struct {
	A            string  `json:"a"` // what the sides are, for people
	B            string  `json:"b"`
	Method       Method  `json:"method"`
	Confidence   float64 `json:"confidence"`
	ThresholdPct float64 `json:"threshold_pct"`
	MinN         int     `json:"min_n"`
	Rows         []Row   `json:"rows"`
}

// Flagged are the rows slower beyond the threshold.
func (r *Report) Flagged() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Flagged {
			out = append(out, row)
		}
	}
	return out
}

// floorMs keeps ratios finite for phases that take no measurable time (a resident key's
// srs, an empty queue): values below it count as it.
const floorMs = 0.001

// Compare compares every series present on either side. Series with samples on neither
// side do not appear; those with fewer than MinN on a side appear with a Note.
func Compare(a, b Samples, opts Options) (*Report, error) {
	o := opts
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	rep := &Report{Method: o.Method, Confidence: o.Confidence, ThresholdPct: o.ThresholdPct, MinN: o.MinN}
	keys := map[Key]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if o.Circuit != "" && k.Circuit != o.Circuit {
			continue
		}
		xa, xb := sorted(a[k]), sorted(b[k])
		if len(xa) == 0 && len(xb) == 0 {
			continue
		}
		rep.Rows = append(rep.Rows, compareOne(k, xa, xb, o))
	}
	slices.SortFunc(rep.Rows, func(x, y Row) int {
		return cmp.Or(cmp.Compare(x.Source, y.Source), cmp.Compare(x.Circuit, y.Circuit),
			cmp.Compare(phase.Order(x.Phase), phase.Order(y.Phase)), cmp.Compare(x.Phase, y.Phase))
	})
	return rep, nil
}

func sorted(x []float64) []float64 {
	s := make([]float64, 0, len(x))
	for _, v := range x {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	return s
}

func ptr(v float64) *float64 { return &v }

func compareOne(k Key, xa, xb []float64, o Options) Row {
	row := Row{Source: k.Source, Circuit: k.Circuit, Phase: k.Phase, NA: len(xa), NB: len(xb)}
	if len(xa) > 0 {
		row.MedianA, row.P95A = ptr(Percentile(xa, 0.5)), ptr(Percentile(xa, 0.95))
	}
	if len(xb) > 0 {
		row.MedianB, row.P95B = ptr(Percentile(xb, 0.5)), ptr(Percentile(xb, 0.95))
	}
	if len(xa) < o.MinN || len(xb) < o.MinN {
		row.Note = fmt.Sprintf("too few samples (need %d on each side)", o.MinN)
		return row
	}
	ratio := math.Max(*row.MedianB, floorMs) / math.Max(*row.MedianA, floorMs)
	var lo, hi float64 // bounds of the log ratio
	large := o.BootstrapMaxN > 0 && max(len(xa), len(xb)) > o.BootstrapMaxN
	switch {
	case o.Method == OrderStat:
		lo, hi = orderStatCI(xa, xb, o.Confidence)
	case large:
		lo, hi = orderStatCI(xa, xb, o.Confidence)
		row.Interval = OrderStat
	default:
		lo, hi = bootstrapCI(xa, xb, o.Confidence, o.Resamples, seedFor(o.Seed, k))
	}
	row.ChangePct = ptr((ratio - 1) * 100)
	row.CILowPct = ptr((math.Exp(lo) - 1) * 100)
	row.CIHighPct = ptr((math.Exp(hi) - 1) * 100)
	row.Flagged = *row.CILowPct > o.ThresholdPct
	// Faster is the mirror image in log space: B/A below 1/(1+threshold).
	row.Faster = hi < -math.Log1p(o.ThresholdPct/100)
	return row
}

// seedFor gives each series its own stream, so a row does not depend on which other
// series are in the report.
func seedFor(seed uint64, k Key) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k.Source + "\x00" + k.Circuit + "\x00" + k.Phase))
	return seed ^ h.Sum64()
}

// Percentile is PostgreSQL's percentile_cont: linear interpolation between the order
// statistics around position p·(n−1). x must be sorted and non-empty.
func Percentile(x []float64, p float64) float64 {
	pos := p * float64(len(x)-1)
	lo := math.Floor(pos)
	i := int(lo)
	if i+1 >= len(x) {
		return x[len(x)-1]
	}
	return x[i] + (pos-lo)*(x[i+1]-x[i])
}

// NormalQuantile is the standard normal distribution's quantile function.
func NormalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
