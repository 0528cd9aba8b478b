package synth

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"runtime/debug"
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

// BenchmarkSolveNearLimit is what the worker's heap sweeper (worker/sweep.go) is for:
// solves one after another with two solutions in flight, the oldest dropped before
// each new solve, and the Go heap's memory limit 1.5 solutions above what is live, as
// in a worker whose budget is nearly all used. Arm A leaves the dropped solution to
// the runtime; arm B collects it at once. A's next solve finds the heap at its limit
// and its vectors handed back to the kernel, and faults them in again; B reuses them.
// The arms alternate; each reports its median wall time and page faults a solve.
//
//	go test ./synth/ -run '^$' -bench 'SolveNearLimit/porep-k2[24]' -benchtime 5x
func BenchmarkSolveNearLimit(b *testing.B) {
	for _, name := range []string{"porep-k22", "porep-k24"} {
		b.Run(name, func(b *testing.B) {
			c := mustCompile(b, name)
			w, err := c.Witness(mustInputs(b, name, 1))
			if err != nil {
				b.Fatal(err)
			}
			solve := func() *Solution {
				s, err := SolveWitness(context.Background(), c, w)
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			inflight := []*Solution{solve(), solve()}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			one := int64(cap(inflight[0].A)+cap(inflight[0].B)+len(inflight[0].W)) * fr.Bytes
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(ms.HeapAlloc) + one*3/2))
			var wall [2][]time.Duration
			var faults [2]int64
			step := func(collect bool) (time.Duration, int64) {
				inflight = inflight[1:]
				if collect {
					runtime.GC()
				}
				t0, f0 := time.Now(), pageFaults(b)
				inflight = append(inflight, solve())
				return time.Since(t0), pageFaults(b) - f0
			}
			step(false) // settle both arms into their steady state
			step(true)
			n := 0
			for b.Loop() {
				for j := range 2 {
					arm := (n + j) % 2
					d, f := step(arm == 1)
					wall[arm], faults[arm] = append(wall[arm], d), faults[arm]+f
				}
				n++
			}
			a, c2 := medianDur(wall[0]), medianDur(wall[1])
			b.ReportMetric(float64(c2)/float64(a), "wall-B/A")
			fmt.Printf("%s, median of %d: A (left to the runtime) %s, %d page faults a solve; B (collected at the drop) %s (%.3f×A), %d page faults a solve\n",
				b.Name(), n, a.Round(time.Millisecond), faults[0]/int64(max(n, 1)), c2.Round(time.Millisecond), float64(c2)/float64(a), faults[1]/int64(max(n, 1)))
		})
	}
}
