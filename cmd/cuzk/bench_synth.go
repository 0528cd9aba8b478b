package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"runtime"
	"time"

	"github.com/cuzk/cuzk/internal/bench"
	"github.com/cuzk/cuzk/synth"
)

// runSynthOnly is `cuzk bench --synth-only`: the solver's throughput on one circuit,
// alone and with several solves at once, and what the circuit costs in memory.
func (c benchCmd) runSynthOnly(ctx context.Context, g *globals) error {
	for _, n := range c.Concurrency {
		if n < 1 {
			return usagef("--concurrency %d: each count must be at least 1", n)
		}
	}
	out := g.stdout
	reg := synth.NewRegistry(c.CacheDir)
	_, statErr := os.Stat(reg.CacheFile(c.Circuit))
	cached := statErr == nil
	start := time.Now()
	compiled, err := c.compile(ctx, g, reg)
	if err != nil {
		return err
	}
	took := time.Since(start)
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return fmt.Errorf("circuit cache: %w", statErr)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	compileRSS, err := bench.PeakRSS()
	if err != nil {
		return err
	}

	n := compiled.NbConstraints()
	logDomain := bits.Len(uint(n - 1))
	internal, secret, public := compiled.CS.GetNbVariables()
	fmt.Fprintf(out, "circuit %s: %d constraints, domain 2^%d (%.2f%% used)\n", c.Circuit, n, logDomain, 100*float64(n)/float64(uint64(1)<<logDomain))
	fmt.Fprintf(out, "variables: %d public (with the constant 1), %d secret, %d internal; private per constraint %.3f\n",
		public, secret, internal, float64(secret+internal)/float64(n))
	how := "compiled"
	if cached {
		how = "loaded from " + reg.CacheFile(c.Circuit)
	}
	fmt.Fprintf(out, "%s in %.1fs; heap after it %s, peak RSS so far %s\n", how, took.Seconds(), gib(int64(ms.HeapAlloc)), gib(compileRSS))

	inputs, err := synth.Inputs(c.Circuit, c.Seed)
	if err != nil {
		return err
	}
	sol, err := synth.Solve(ctx, compiled, inputs) // warm-up, and the witness's values
	if err != nil {
		return err
	}
	v := synth.CountValues(sol.W)
	share := func(k int) float64 { return 100 * float64(k) / float64(len(sol.W)) }
	fmt.Fprintf(out, "witness: %d values: %.1f%% zero, %.1f%% one, %.1f%% other below 2^64, %.1f%% full-size; solve estimate %s\n",
		len(sol.W), share(v.Zero), share(v.One), share(v.Small), share(v.Full), gib(compiled.Estimate().Total()))
	sol = nil

	splits := map[string][]bool{"off": {false}, "on": {true}, "both": {false, true}}[c.SynthSplit]
	for _, split := range splits {
		rates, err := bench.MeasureSolves(ctx, compiled, inputs, c.Concurrency, c.Runs, split)
		if err != nil {
			return err
		}
		procs := runtime.GOMAXPROCS(0)
		for _, r := range rates {
			tasks := procs
			if split {
				tasks = synth.Tasks(procs, r.Concurrency)
			}
			fmt.Fprintf(out, "solve x%d, %d tasks each: median %.3fs of %d rounds, %.2fM constraints/s (GOMAXPROCS %d)\n",
				r.Concurrency, tasks, r.Median().Seconds(), len(r.Rounds), r.ConstraintsPerSec(n)/1e6, procs)
		}
	}
	peak, err := bench.PeakRSS()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "peak RSS: %s\n", gib(peak))
	return nil
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }
