package synth

import (
	"context"
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
