package main

import (
	"context"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/bench"
	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/setup"
	"github.com/cuzk/cuzk/synth"
)

type benchCmd struct {
	dirs
	Circuit string `required:"" help:"Built-in circuit to prove, e.g. synthetic-k16."`
	Compare string `enum:",gnark" default:"" help:"Also prove with this reference in the same run (gnark: groth16.Prove) and print the ratio."`
	Runs    int    `default:"5" help:"Timed runs of each prover (after one warm-up each)."`
	Backend string `enum:"cpu,cuda,auto" default:"cpu" help:"Our prover's backend."`
	Devices string `default:"0" help:"GPU for --backend cuda."`
	Seed    uint64 `default:"1" help:"Inputs seed."`
	Threads int    `help:"GOMAXPROCS for the timed runs (default: every core)."`
	Record  bool   `help:"Store every timed run in cuzk.bench_runs (DATABASE_URL), for cuzk timings --compare and cuzk.compare_timings."`
	AB      abArms `name:"ab" placeholder:"'FLAGS A' 'FLAGS B'" help:"Run two configurations interleaved, each a quoted set of --backend, --devices and --threads, and print their per-phase comparison (exit 3 when B is slower); each arm runs at least 10 times, the fewest a phase is compared on."`

	SynthOnly   bool   `name:"synth-only" help:"Time only synthesis (the worker's solver): no keys, prover or database. Prints the circuit's shape, its compile time and memory, then constraints/s at each --concurrency (--runs rounds each) and the peak RSS."`
	Concurrency []int  `default:"1,2,4" help:"With --synth-only: how many solves run at once, each count in turn."`
	SynthSplit  string `name:"synth-split" enum:"off,on,line,both,all" default:"off" help:"With --synth-only: how N solves at once share the cores. line, in line as the worker's solves do (the first started first, the others on the cores it leaves idle); on, cores/N goroutines each; off, gnark's default of one per core each; both, off and on; all, the three."`
	SynthSolver string `name:"synth-solver" enum:"blocks,levels,both" default:"blocks" help:"With --synth-only: blocks, the worker's solver (independent blocks of the circuit in parallel, where it has them); levels, gnark's solver, level by level; both, each count both ways."`
	SynthProf   string `name:"synth-profile" placeholder:"DIR" help:"With --synth-only: write a CPU profile of the timed solves (cpu.pprof) and allocation profiles before and after them (allocs-before.pprof, allocs.pprof) into DIR, for go tool pprof."`
}

func (c benchCmd) Run(ctx context.Context, g *globals) error {
	if c.Runs < 1 || c.Threads < 0 {
		return usagef("--runs must be at least 1, --threads at least 0")
	}
	if err := c.resolve(); err != nil {
		return err
	}
	if c.SynthOnly {
		return c.runSynthOnly(ctx, g)
	}
	out := g.stdout
	compiled, err := c.compile(ctx, g, synth.NewRegistry(c.CacheDir))
	if err != nil {
		return err
	}
	kd := keys.Dir(c.KeysDir)
	var pk *groth16bls.ProvingKey
	var vk *groth16bls.VerifyingKey
	if kd.Has(c.Circuit) {
		if pk, vk, err = kd.Load(c.Circuit, ""); err == nil {
			err = keys.Consistent(c.Circuit, compiled.CS, pk, vk)
		}
	}
	if pk == nil || err != nil {
		err = step(g.stderr, "development key setup for "+c.Circuit+" (not a production ceremony)", func() (err error) {
			mul, err := developmentMultiplier(c.Backend, g)
			if err != nil {
				return err
			}
			defer mul.Close()
			var digest string
			if _, digest, err = kd.Setup(ctx, c.Circuit, compiled.CS, setup.Options{Mul: mul}); err != nil {
				return err
			}
			pk, vk, err = kd.Load(c.Circuit, digest)
			return err
		})
		if err != nil {
			return err
		}
	}
	inputs, err := synth.Inputs(c.Circuit, c.Seed)
	if err != nil {
		return err
	}
	bc, err := bench.SynthCase(compiled, inputs, pk, vk)
	if err != nil {
		return err
	}
	if c.Record || len(c.AB) > 0 || c.Threads > 0 {
		return c.runArms(ctx, g, bc)
	}
	devs, err := openBackends(c.Backend, c.Devices, g.log)
	if err != nil {
		return err
	}
	defer devs[0].Backend.Close()
	// The runs interleave ours and gnark's so drift on a shared machine hits both alike;
	// the last line is speedup_vs_gnark when --compare is given.
	opts := bench.Options{Case: bc, Backend: devs[0].Backend, Runs: c.Runs, Compare: c.Compare}
	if isTerminal(g.stderr) { // elsewhere the per-run lines are the progress
		p := newProgress(g.stderr, "timed runs", c.Runs)
		opts.OnRun = func(done, _ int) { p.Set(done) }
		defer p.Done(nil)
	}
	return bench.Run(ctx, opts, out)
}

// compile loads or compiles the circuit under a spinner; an unknown name is a usage
// error.
func (c benchCmd) compile(ctx context.Context, g *globals, reg *synth.Registry) (*synth.Compiled, error) {
	var compiled *synth.Compiled
	err := step(g.stderr, "compiling "+c.Circuit, func() (err error) {
		compiled, err = reg.Get(ctx, c.Circuit)
		return err
	})
	if synth.IsBadInput(err) {
		return nil, usageError{err.Error()}
	}
	return compiled, err
}
