package synth

import (
	"context"
	"os"
	"runtime"
	"testing"
)

// BenchmarkSolve reports solver throughput; run e.g.
// go test ./synth/ -run '^$' -bench Solve/synthetic-k18
func BenchmarkSolve(b *testing.B) {
	for _, name := range []string{"synthetic-k16", "synthetic-k18", "merkle-poseidon2-d20-c16", "sha256-preimage-b256"} {
		b.Run(name, func(b *testing.B) {
			c := mustCompile(b, name)
			in := mustInputs(b, name, 1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Solve(context.Background(), c, in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.NbConstraints())*float64(b.N)/b.Elapsed().Seconds(), "constraints/s")
		})
	}
}

// BenchmarkCheck times Compiled.Check of a solved porep witness (compare with the
// solve's time from cuzk bench --synth-only); CUZK_CACHE_DIR, if set, keeps the
// compiled circuits between runs:
//
//	CUZK_CACHE_DIR=/tmp/cuzk-cache go test ./synth/ -run '^$' -bench 'Check/porep-k24' -benchtime 3x
func BenchmarkCheck(b *testing.B) {
	reg := NewRegistry(os.Getenv("CUZK_CACHE_DIR"))
	for _, name := range []string{"porep-k20", "porep-k22", "porep-k24"} {
		b.Run(name, func(b *testing.B) {
			c, err := reg.Get(context.Background(), name)
			if err != nil {
				b.Fatal(err)
			}
			sol, err := Solve(context.Background(), c, mustInputs(b, name, 1))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := c.Check(context.Background(), sol.W, runtime.GOMAXPROCS(0)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.NbConstraints())*float64(b.N)/b.Elapsed().Seconds(), "constraints/s")
		})
	}
}
