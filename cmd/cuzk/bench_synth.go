package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/cuzk/cuzk/internal/bench"
	"github.com/cuzk/cuzk/synth"
)

// runSynthOnly is `cuzk bench --synth-only`: the solver's throughput on one circuit,
// alone and with several solves at once, and what the circuit costs in memory.
func (c benchCmd) runSynthOnly(ctx context.Context, g *globals) (err error) {
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

	fmt.Fprintf(out, "solver: %s\n", compiled.BlockSplit())

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

	if c.SynthProf != "" {
		stop, err := startProfiles(c.SynthProf)
		if err != nil {
			return err
		}
		defer func() {
			if perr := stop(); err == nil {
				err = perr
			}
		}()
	}
	splits := map[string][]bench.Sharing{
		"off": {bench.ShareNone}, "on": {bench.ShareSplit}, "line": {bench.ShareLine},
		"both": {bench.ShareNone, bench.ShareSplit}, "all": {bench.ShareNone, bench.ShareSplit, bench.ShareLine},
	}[c.SynthSplit]
	solvers := map[string][]string{"blocks": {"blocks"}, "levels": {"levels"}, "both": {"levels", "blocks"}}[c.SynthSolver]
	for _, name := range solvers {
		solve := bench.SolveFunc(synth.Solve)
		if name == "levels" {
			solve = synth.SolveLevels
		}
		for _, split := range splits {
			rates, err := bench.MeasureSolves(ctx, compiled, inputs, c.Concurrency, c.Runs, split, solve)
			if err != nil {
				return err
			}
			procs := runtime.GOMAXPROCS(0)
			for _, r := range rates {
				var tasks string
				switch split {
				case bench.ShareNone:
					tasks = fmt.Sprintf("%d tasks each", procs)
				case bench.ShareSplit:
					tasks = fmt.Sprintf("%d tasks each", synth.Tasks(procs, r.Concurrency))
				case bench.ShareLine:
					tasks = fmt.Sprintf("in line for %d cores", procs)
				}
				fmt.Fprintf(out, "solve x%d (%s), %s: median %.3fs of %d rounds, first done %.3fs, %.2fM constraints/s (GOMAXPROCS %d)\n",
					r.Concurrency, name, tasks, r.Median().Seconds(), len(r.Rounds), bench.Median(r.First).Seconds(),
					r.ConstraintsPerSec(n)/1e6, procs)
			}
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

// startProfiles starts a CPU profile into dir/cpu.pprof and snapshots the
// allocations so far (compiling or loading the circuit, the warm-up solve) into
// dir/allocs-before.pprof; stop ends the CPU profile and writes dir/allocs.pprof.
// The timed solves' allocations are the difference:
// go tool pprof -diff_base allocs-before.pprof allocs.pprof.
func startProfiles(dir string) (stop func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	if err := writeAllocs(filepath.Join(dir, "allocs-before.pprof")); err != nil {
		return nil, err
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return writeAllocs(filepath.Join(dir, "allocs.pprof"))
	}, nil
}

func writeAllocs(path string) error {
	runtime.GC() // the profile counts allocations as of the last collection
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("allocation profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("allocation profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("allocation profile: %w", err)
	}
	return nil
}
