package prover

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark/backend/groth16"

	"github.com/cuzk/cuzk/synth"
)

// Benchmarks of the CPU backend against gnark's groth16.Prove on lane circuits of
// 2^k constraints (depth 4, full-size random witness), with random keys: timing
// only, the proofs are not verified. Our side is solve + Prove, as a worker runs it;
// gnark's Prove solves too. Each iteration runs both, alternating which goes first,
// and reports both times and speedup = gnark/cuzk (ratio of medians):
//
//	go test ./prover/ -run '^$' -bench ProveVsGnark -benchtime 5x
func BenchmarkProveVsGnark(b *testing.B) {
	for _, k := range []int{14, 15, 16} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			benchVariants(b, k, map[string]cpuTuning{"cuzk": defaultCPUTuning()})
		})
	}
}

// BenchmarkCPUTuning compares the CPU backend's scheduling choices with each other
// and with gnark, interleaved in every iteration (see cpuTuning). Each variant differs
// from the default in one choice:
//
//	go test ./prover/ -run '^$' -bench CPUTuning -benchtime 7x
func BenchmarkCPUTuning(b *testing.B) {
	base := defaultCPUTuning()
	variants := map[string]cpuTuning{"default": base}
	v := base
	v.splitKZ = true
	variants["splitKZ"] = v
	if only := os.Getenv("CUZK_TUNING"); only != "" { // e.g. default,splitKZ
		keep := strings.Split(only, ",")
		maps.DeleteFunc(variants, func(n string, _ cpuTuning) bool { return !slices.Contains(keep, n) })
	}
	b.Run("k=16", func(b *testing.B) { benchVariants(b, 16, variants) })
}

func benchVariants(b *testing.B, logN int, variants map[string]cpuTuning) {
	tc := compileLanes(b, 1<<(logN-2), 4)
	pk := tc.randomKey(b)
	ctx := context.Background()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range variants {
			if !yield(n) {
				return
			}
		}
	})
	backends := map[string]*CPU{}
	keys := map[string]Key{}
	for _, n := range names {
		backends[n] = &CPU{tune: variants[n]}
		k, err := backends[n].LoadKey(ctx, pk)
		if err != nil {
			b.Fatal(err)
		}
		keys[n] = k
	}
	times := map[string][]time.Duration{}
	run := func(n string) {
		runtime.GC()
		t0 := time.Now()
		if n == "gnark" {
			if _, err := groth16.Prove(tc.ccs, pk.PK, tc.full); err != nil {
				b.Fatal(err)
			}
		} else {
			sol, err := solveR1CS(tc.ccs, tc.full)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := Prove(ctx, backends[n], pk, keys[n], []*synth.Solution{sol}); err != nil {
				b.Fatal(err)
			}
		}
		times[n] = append(times[n], time.Since(t0))
	}
	order := append([]string{"gnark"}, names...)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range order { // rotate the order so no variant always runs first
			run(order[(i+j)%len(order)])
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	g := med(times["gnark"])
	b.ReportMetric(float64(g)/1e6, "gnark-ms")
	for _, n := range names {
		b.ReportMetric(float64(med(times[n]))/1e6, n+"-ms")
		b.ReportMetric(float64(g)/float64(med(times[n])), n+"-speedup")
	}
	b.ReportMetric(0, "ns/op") // the per-iteration time mixes all provers: meaningless
}
