package regress

import (
	"math"
	"math/rand/v2"
	"testing"
)

// phaseShape is a phase's timing distribution: log-normal around median with log
// spread sigma, plus rare stalls (GC, contention) that multiply a run by 2–5.
type phaseShape struct {
	median, sigma float64
}

// shapes resemble a worker's attempts: waits are wide, compute phases narrow.
func shapes() map[string]phaseShape {
	return map[string]phaseShape{
		"queue": {40, 1.0}, "batch_wait": {15, 0.7}, "mem_wait": {0.8, 1.2}, "srs": {0.05, 0.5},
		"synth": {900, 0.08}, "prove_wait": {12, 0.9}, "prove": {1500, 0.06}, "ntt": {300, 0.07},
		"msm": {1100, 0.06}, "msm_g1": {700, 0.07}, "msm_g2": {400, 0.08}, "h2d": {60, 0.1},
		"verify": {3, 0.1}, "persist": {6, 0.4}, "total": {2600, 0.07},
	}
}

// draw generates n attempts of circuit c, with phase shifted multiplied by factor.
func draw(rng *rand.Rand, s Samples, n int, shifted string, factor float64) {
	all := shapes()
	for _, phase := range Phases() { // fixed order: the same seed gives the same data
		sh := all[phase]
		f := 1.0
		if phase == shifted {
			f = factor
		}
		k := Key{Source: "worker", Circuit: "c", Phase: phase}
		for range n {
			v := sh.median * f * math.Exp(sh.sigma*rng.NormFloat64())
			if rng.Float64() < 0.03 {
				v *= 2 + 3*rng.Float64()
			}
			s.Add(k, v)
		}
	}
}

func TestShiftedPhaseIsTheOneFlagged(t *testing.T) {
	// Phases narrow enough that n=200 resolves a 15% shift against a 5% threshold; for
	// the wide waits (queue: sigma 1) the same shift needs thousands of attempts.
	for _, method := range []Method{Bootstrap, OrderStat} {
		for _, shifted := range []string{"synth", "prove", "ntt", "msm", "msm_g1", "msm_g2", "h2d", "verify", "total"} {
			t.Run(string(method)+"/"+shifted, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(42, uint64(len(shifted))))
				a, b := Samples{}, Samples{}
				draw(rng, a, 200, "", 1)
				draw(rng, b, 200, shifted, 1.15)
				opts := Defaults()
				opts.Method = method
				rep, err := Compare(a, b, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Rows) != len(Phases()) {
					t.Fatalf("%d rows, want one per phase (%d)", len(rep.Rows), len(Phases()))
				}
				for _, row := range rep.Rows {
					if row.ChangePct == nil {
						t.Fatalf("%s not compared: %s", row.Phase, row.Note)
					}
					if row.Phase != shifted {
						if row.Flagged {
							t.Errorf("%s flagged (change %+.1f%% [%+.1f, %+.1f]) though unchanged", row.Phase, *row.ChangePct, *row.CILowPct, *row.CIHighPct)
						}
						continue
					}
					if !row.Flagged || row.Faster {
						t.Errorf("%s not flagged slower: change %+.1f%% [%+.1f, %+.1f]", row.Phase, *row.ChangePct, *row.CILowPct, *row.CIHighPct)
					}
					if math.Abs(*row.ChangePct-15) > 5 {
						t.Errorf("%s change %+.1f%%, want near +15%%", row.Phase, *row.ChangePct)
					}
				}
				if got := len(rep.Flagged()); got != 1 {
					t.Errorf("%d phases flagged, want exactly 1: %s", got, rep.Summary())
				}
			})
		}
	}
}

func TestSpeedupIsNotFlagged(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	a, b := Samples{}, Samples{}
	draw(rng, a, 200, "", 1)
	draw(rng, b, 200, "synth", 1/1.15)
	rep, err := Compare(a, b, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Rows {
		if row.Flagged {
			t.Errorf("%s flagged slower: %+.1f%%", row.Phase, *row.ChangePct)
		}
		if (row.Phase == "synth") != row.Faster {
			t.Errorf("%s faster=%v, change %+.1f%% [%+.1f, %+.1f]", row.Phase, row.Faster, *row.ChangePct, *row.CILowPct, *row.CIHighPct)
		}
	}
}

// binomialBound is the smallest k with P(X > k) < tail for X ~ Binomial(n, p).
func binomialBound(n int, p, tail float64) int {
	pk := math.Pow(1-p, float64(n)) // P(X = 0)
	cdf := pk
	for k := 0; k < n; k++ {
		if 1-cdf < tail {
			return k
		}
		pk *= float64(n-k) / float64(k+1) * p / (1 - p)
		cdf += pk
	}
	return n
}

func TestFalseFlagRate(t *testing.T) {
	// 200 same-distribution draws. With threshold 0 a flag is the interval excluding no
	// change on the slow side: for a calibrated 95% interval that happens with
	// probability 2.5%, and falling on either side with 5%. The bounds are the counts a
	// calibrated method exceeds with probability below 0.1%, so the test fails only when
	// the intervals are too narrow. With the default 5% threshold flags must be rarer
	// still.
	const draws, n = 200, 200
	phases := []string{"queue", "synth", "persist"} // wide, narrow, skewed
	oneSided := binomialBound(draws, 0.025, 0.001)
	twoSided := binomialBound(draws, 0.05, 0.001)
	for _, method := range []Method{Bootstrap, OrderStat} {
		t.Run(string(method), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2026, 11))
			exact := Defaults()
			exact.Method, exact.ThresholdPct = method, 0
			slow := map[string]int{}
			miss := map[string]int{}
			gated := 0
			for range draws {
				a, b := Samples{}, Samples{}
				draw(rng, a, n, "", 1)
				draw(rng, b, n, "", 1)
				for k := range a {
					if k.Phase != phases[0] && k.Phase != phases[1] && k.Phase != phases[2] {
						delete(a, k)
						delete(b, k)
					}
				}
				rep, err := Compare(a, b, exact)
				if err != nil {
					t.Fatal(err)
				}
				for _, row := range rep.Rows {
					if row.Flagged {
						slow[row.Phase]++
					}
					// Same seed, same interval: the default gate flags when it clears 5%.
					if *row.CILowPct > Defaults().ThresholdPct {
						gated++
					}
					if *row.CILowPct > 0 || *row.CIHighPct < 0 {
						miss[row.Phase]++
					}
				}
			}
			for _, p := range phases {
				t.Logf("%s: flagged at 0%% in %d of %d draws (bound %d), interval missed 0 in %d (bound %d)", p, slow[p], draws, oneSided, miss[p], twoSided)
				if slow[p] > oneSided {
					t.Errorf("%s: %d false flags at threshold 0 in %d draws, more than %d", p, slow[p], draws, oneSided)
				}
				if miss[p] > twoSided {
					t.Errorf("%s: interval excluded the true change in %d of %d draws, more than %d", p, miss[p], draws, twoSided)
				}
			}
			t.Logf("%d flags at the default 5%% threshold", gated)
			if gated > oneSided {
				t.Errorf("%d false flags at the 5%% threshold over %d draws × %d phases", gated, draws, len(phases))
			}
		})
	}
}

func TestTooFewSamplesAreSkippedAndSaid(t *testing.T) {
	a, b := Samples{}, Samples{}
	k := Key{Source: "bench", Circuit: "c", Phase: "synth"}
	for i := range 12 {
		a.Add(k, 100+float64(i))
	}
	for i := range 4 {
		b.Add(k, 200+float64(i))
	}
	b.Add(Key{Source: "bench", Circuit: "c", Phase: "h2d"}, 1)
	rep, err := Compare(a, b, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("rows %+v, want synth and h2d", rep.Rows)
	}
	for _, row := range rep.Rows {
		if row.ChangePct != nil || row.Flagged || row.Note == "" {
			t.Errorf("%s: compared with too few samples: %+v", row.Phase, row)
		}
	}
	if rep.Rows[0].Phase != "synth" || *rep.Rows[0].MedianA != 105.5 || *rep.Rows[0].MedianB != 201.5 {
		t.Errorf("first row %+v: want synth with medians 105.5 and 201.5", rep.Rows[0])
	}
}

func TestPercentileMatchesPercentileCont(t *testing.T) {
	x := []float64{1, 2, 4, 8}
	// percentile_cont(0.95) over 1,2,4,8: position 2.85 → 4 + 0.85·4.
	if got := Percentile(x, 0.95); math.Abs(got-7.4) > 1e-12 {
		t.Errorf("p95 = %v, want 7.4", got)
	}
	if got := Percentile(x, 0.5); got != 3 {
		t.Errorf("median = %v, want 3", got)
	}
}

func TestBootstrapIsReproducible(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := Samples{}, Samples{}
	draw(rng, a, 50, "", 1)
	draw(rng, b, 50, "", 1)
	r1, _ := Compare(a, b, Defaults())
	r2, _ := Compare(a, b, Defaults())
	for i := range r1.Rows {
		if *r1.Rows[i].CILowPct != *r2.Rows[i].CILowPct || *r1.Rows[i].CIHighPct != *r2.Rows[i].CIHighPct {
			t.Fatalf("%s: intervals differ between identical runs", r1.Rows[i].Phase)
		}
	}
}

// Past BootstrapMaxN a series gets the order-statistic interval, and says so; at such
// sizes the two intervals agree, which is what makes the switch sound.
func TestLargeSamplesUseOrderStat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := Samples{}, Samples{}
	draw(rng, a, 10000, "", 1)
	draw(rng, b, 10000, "synth", 1.03)
	boot, err := Compare(a, b, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.Method = OrderStat
	ord, err := Compare(a, b, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range boot.Rows {
		if r.Interval != "" {
			t.Errorf("%s: n=10000 is not past BootstrapMaxN, yet interval %q", r.Phase, r.Interval)
		}
		q := ord.Rows[i]
		// Bounds in percent of the change; at n=10000 the half-widths are 0.2-2.5 points.
		if d := math.Max(math.Abs(*r.CILowPct-*q.CILowPct), math.Abs(*r.CIHighPct-*q.CIHighPct)); d > 0.5 {
			t.Errorf("%s: bootstrap [%.2f, %.2f] vs order statistics [%.2f, %.2f]: differ by %.2f points",
				r.Phase, *r.CILowPct, *r.CIHighPct, *q.CILowPct, *q.CIHighPct, d)
		}
	}

	big := Samples{}
	draw(rng, big, 10001, "", 1)
	rep, err := Compare(a, big, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		if r.Interval != OrderStat {
			t.Errorf("%s: n=10001 past BootstrapMaxN, interval %q, want %q", r.Phase, r.Interval, OrderStat)
		}
	}
}
