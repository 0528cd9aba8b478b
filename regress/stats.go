package regress

import (
	"math"
	"math/rand/v2"
	"slices"
)

// bootstrapCI is the percentile interval of log(median B / median A) over resamples
// of both sides. xa and xb are sorted.
func bootstrapCI(xa, xb []float64, confidence float64, resamples int, seed uint64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	ra, rb := newResampler(xa), newResampler(xb)
	logs := make([]float64, resamples)
	for i := range logs {
		ma, mb := ra.median(rng), rb.median(rng)
		logs[i] = math.Log(math.Max(mb, floorMs) / math.Max(ma, floorMs))
	}
	slices.Sort(logs)
	alpha := 1 - confidence
	return Percentile(logs, alpha/2), Percentile(logs, 1-alpha/2)
}

// resampler draws the median of a resample with replacement in O(n): since the sample
// is sorted, counting how often each index is drawn gives the order statistics without
// sorting the resample.
type resampler struct {
	x      []float64
	counts []int
}

func newResampler(x []float64) *resampler { return &resampler{x: x, counts: make([]int, len(x))} }

func (r *resampler) median(rng *rand.Rand) float64 {
	n := len(r.x)
	clear(r.counts)
	for range n {
		r.counts[rng.IntN(n)]++
	}
	// percentile_cont(0.5): order statistics k and k+1 (0-based) around (n−1)/2.
	pos := 0.5 * float64(n-1)
	k := int(pos)
	frac := pos - float64(k)
	var lo, hi float64
	seen, found := 0, false
	for i, c := range r.counts {
		if c == 0 {
			continue
		}
		seen += c
		if !found && seen > k {
			lo, found = r.x[i], true
		}
		if seen > k+1 {
			hi = r.x[i]
			break
		}
	}
	if frac == 0 || k+1 >= n {
		return lo
	}
	return lo + frac*(hi-lo)
}

// orderStatCI is log(median B / median A) ± z·se, where each side's standard error of
// the log median is the McKean–Schrader estimate: the width of the distribution-free
// order-statistic interval for the median over 2z. xa and xb are sorted.
func orderStatCI(xa, xb []float64, confidence float64) (lo, hi float64) {
	z := NormalQuantile(1 - (1-confidence)/2)
	d := math.Log(math.Max(Percentile(xb, 0.5), floorMs) / math.Max(Percentile(xa, 0.5), floorMs))
	sa, sb := logMedianSE(xa, z), logMedianSE(xb, z)
	half := z * math.Sqrt(sa*sa+sb*sb)
	return d - half, d + half
}

func logMedianSE(x []float64, z float64) float64 {
	n := len(x)
	// floor(v + 0.5), not math.Round: PostgreSQL's round(float8) rounds half to even,
	// and the SQL function must pick the same order statistics.
	c := int(math.Floor(float64(n+1)/2 - z*math.Sqrt(float64(n))/2 + 0.5))
	c = max(1, min(n, c))
	return (math.Log(math.Max(x[n-c], floorMs)) - math.Log(math.Max(x[c-1], floorMs))) / (2 * z)
}
