package synth

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// sizePool keeps vectors of fr.Element by length for reuse across requests.
type sizePool struct {
	mu   sync.Mutex
	free map[int][][]fr.Element
}

func (p *sizePool) get(n, capacity int) []fr.Element {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.free[capacity]; len(l) > 0 {
		v := l[len(l)-1]
		p.free[capacity] = l[:len(l)-1]
		return v[:n]
	}
	return make([]fr.Element, n, capacity)
}

func (p *sizePool) put(v []fr.Element) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free[cap(v)] = append(p.free[cap(v)], v)
}

// BenchmarkSolveBufferReuse bounds what reusing synthesis buffers across requests can
// save. gnark's R1CS.Solve allocates the wire vector and A, B, C itself (A, B, C with
// capacity for the FFT domain) and accepts no buffers, so a pool in synth would mean
// reimplementing gnark's solver. Before doing that, this measures the most it could
// gain: per request, allocating the solution's vectors fresh and writing every entry
// (what the solver does) against taking them from a pool keyed by size and writing
// every entry, next to a whole synth.Solve of the same circuit. The three run
// interleaved in rotating order, with the garbage collector left to run as it does in
// a worker.
//
//	go test ./synth/ -run '^$' -bench SolveBufferReuse -benchtime 31x
func BenchmarkSolveBufferReuse(b *testing.B) {
	for _, name := range []string{"synthetic-k16", "synthetic-k18", "synthetic-k20"} {
		b.Run(name, func(b *testing.B) {
			c := mustCompile(b, name)
			in := mustInputs(b, name, 1)
			nbWires, nbCons := c.NbWires(), c.NbConstraints()
			domain := 1 << bits.Len(uint(nbCons-1))
			fill := func(vs ...[]fr.Element) {
				for _, v := range vs {
					for i := range v {
						v[i][0] = uint64(i)
					}
				}
			}
			var sink []fr.Element // keeps fresh vectors alive until the next run, as a Solution would
			fresh := func() time.Duration {
				t0 := time.Now()
				w := make([]fr.Element, nbWires)
				a, bb, cc := make([]fr.Element, nbCons, domain), make([]fr.Element, nbCons, domain), make([]fr.Element, nbCons, domain)
				fill(w, a, bb, cc)
				sink = a
				return time.Since(t0)
			}
			pool := &sizePool{free: map[int][][]fr.Element{}}
			pooled := func() time.Duration {
				t0 := time.Now()
				w := pool.get(nbWires, nbWires)
				a, bb, cc := pool.get(nbCons, domain), pool.get(nbCons, domain), pool.get(nbCons, domain)
				fill(w, a, bb, cc)
				d := time.Since(t0)
				for _, v := range [][]fr.Element{w, a, bb, cc} {
					pool.put(v) // released once the prover is done with them
				}
				return d
			}
			solve := func() time.Duration {
				t0 := time.Now()
				if _, err := Solve(context.Background(), c, in); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			fresh()
			pooled()
			solve()
			runs := [3]func() time.Duration{fresh, pooled, solve}
			var times [3][]time.Duration
			i := 0
			for b.Loop() {
				for j := range 3 {
					k := (i + j) % 3
					times[k] = append(times[k], runs[k]())
				}
				i++
			}
			_ = sink
			f, p, s := medianDur(times[0]), medianDur(times[1]), medianDur(times[2])
			saving := float64(f-p) / float64(s)
			b.ReportMetric(float64(f)/1e6, "ms_fresh")
			b.ReportMetric(float64(p)/1e6, "ms_pooled")
			b.ReportMetric(float64(s)/1e6, "ms_solve")
			b.ReportMetric(saving, "saving/solve")
			fmt.Printf("%s (%d wires, %d constraints, median of %d): vectors fresh %s, pooled %s, whole Solve %s; reuse would save at most %.1f%% of Solve\n",
				name, nbWires, nbCons, len(times[0]), f.Round(10*time.Microsecond), p.Round(10*time.Microsecond), s.Round(10*time.Microsecond), 100*saving)
		})
	}
}

func medianDur(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkSolutionVectors times the allocation of a porep-k26 solve's wire values, A
// and B (2 GiB each with their domain's capacity) once the heap reuses the memory, as
// in a worker's steady state: one after the other, as a plain allocation does, against
// solutionVectors, which allocates each on a goroutine of its own. The ratio is
// printed; it needs about 14 GiB free.
//
//	go test ./synth/ -run '^$' -bench SolutionVectors -benchtime 6x
func BenchmarkSolutionVectors(b *testing.B) {
	const nbWires, nbCons = 18 << 20, 67_000_000
	domain := 1 << bits.Len(uint(nbCons-1))
	var keep [3][]fr.Element
	serial := func() time.Duration {
		t0 := time.Now()
		keep[0] = make([]fr.Element, nbWires)
		keep[1] = make([]fr.Element, nbCons, domain)
		keep[2] = make([]fr.Element, nbCons, domain)
		return time.Since(t0)
	}
	concurrent := func() time.Duration {
		t0 := time.Now()
		keep[0], keep[1], keep[2] = solutionVectors(nbWires, nbCons)
		return time.Since(t0)
	}
	var ts, tc []time.Duration
	for i := range b.N + 1 {
		for j, f := range []func() time.Duration{serial, concurrent} {
			keep = [3][]fr.Element{}
			runtime.GC()
			d := f()
			if i > 0 { // the first round takes fresh pages: a worker's first solve
				if j == 0 {
					ts = append(ts, d)
				} else {
					tc = append(tc, d)
				}
			}
		}
	}
	slices.Sort(ts)
	slices.Sort(tc)
	ms, mc := ts[len(ts)/2], tc[len(tc)/2]
	b.ReportMetric(float64(ms.Microseconds())/1e3, "serial-ms")
	b.ReportMetric(float64(mc.Microseconds())/1e3, "concurrent-ms")
	fmt.Printf("solution vectors (porep-k26 sizes): serial %v, concurrent %v: %.2fx\n", ms, mc, float64(ms)/float64(mc))
}
