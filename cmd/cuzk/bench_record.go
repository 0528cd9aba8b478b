package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/bench"
	"github.com/cuzk/cuzk/internal/hostinfo"
	"github.com/cuzk/cuzk/regress"
	"github.com/cuzk/cuzk/worker"
)

// abArms is --ab's two quoted flag sets. It takes the next two arguments as they are:
// kong's own string flags refuse values that start with "--".
type abArms []string

func (a *abArms) Decode(ctx *kong.DecodeContext) error {
	for range 2 {
		t := ctx.Scan.Pop()
		s, ok := t.Value.(string)
		if t.IsEOL() || !ok {
			return errors.New("want two quoted flag sets, e.g. --ab '--threads 1' '--threads 2'")
		}
		*a = append(*a, s)
	}
	return nil
}

// armFlags are what an --ab arm may set; unset ones are the command's own.
type armFlags struct {
	Backend string `enum:",cpu,cuda,auto" default:"" help:"Backend."`
	Devices string `help:"GPU for --backend cuda."`
	Threads int    `help:"GOMAXPROCS for the arm's runs."`
}

func (c benchCmd) armFlags(spec string) (armFlags, error) {
	var f armFlags
	p, err := kong.New(&f, kong.Name("--ab"), kong.Exit(func(int) {}))
	if err != nil {
		return f, err
	}
	if _, err := p.Parse(strings.Fields(spec)); err != nil {
		return f, usagef("--ab %q: %v", spec, err)
	}
	if f.Backend == "" {
		f.Backend = c.Backend
	}
	if f.Devices == "" {
		f.Devices = c.Devices
	}
	if f.Threads == 0 {
		f.Threads = c.Threads
	}
	if f.Threads < 0 {
		return f, usagef("--ab %q: --threads must be positive", spec)
	}
	return f, nil
}

// benchArm is one configuration, opened.
type benchArm struct {
	name, label string
	flags       armFlags
	devs        []worker.Prover
}

func (a *benchArm) config() bench.Config {
	cfg := bench.Config{Mode: "bench", Backend: a.devs[0].Backend.Name(), Threads: a.flags.Threads,
		CPU: hostinfo.CPUModel()}
	if i := strings.IndexByte(cfg.Backend, ':'); i >= 0 {
		cfg.Backend = cfg.Backend[:i] // "cuda", not "cuda:0": the device is in Devices
	}
	if cfg.Threads == 0 {
		cfg.Threads = runtime.GOMAXPROCS(0)
	}
	for _, d := range a.devs {
		cfg.Devices = append(cfg.Devices, d.Label)
		if cfg.GPUDriver == "" {
			cfg.GPUDriver = d.Driver
		}
	}
	return cfg
}

// runArms is `cuzk bench --record`, `--ab` and `--threads`: one configuration, or two
// interleaved and compared, optionally stored in cuzk.bench_runs.
func (c benchCmd) runArms(ctx context.Context, g *globals, bc bench.Case) error {
	if len(c.AB) > 0 && c.Compare != "" {
		return usagef("--ab and --compare gnark: give one")
	}
	specs := []string{strings.Join(c.flagSet(), " ")}
	names := []string{""}
	if len(c.AB) > 0 {
		specs, names = c.AB, []string{"A", "B"}
	}
	arms := make([]*benchArm, len(specs))
	for i, spec := range specs {
		f, err := c.armFlags(spec)
		if err != nil {
			return err
		}
		devs, err := openBackends(f.Backend, f.Devices, g.log)
		if err != nil {
			return err
		}
		defer devs[0].Backend.Close()
		arms[i] = &benchArm{name: names[i], label: strings.TrimSpace(spec), flags: f, devs: devs}
	}
	var pool *pgxpool.Pool
	if c.Record { // connect before measuring: a wrong DATABASE_URL should not cost a benchmark
		var err error
		if pool, err = g.connect(ctx); err != nil {
			return err
		}
		defer pool.Close()
	}
	runs := c.Runs
	if len(arms) == 2 {
		runs = max(runs, regress.Defaults().MinN) // fewer would compare nothing
	}

	var results []*bench.Result
	if len(arms) == 1 {
		if t := arms[0].flags.Threads; t > 0 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(t))
		}
		res, err := bench.Measure(ctx, bench.Options{Case: bc, Backend: arms[0].devs[0].Backend, Runs: runs, Compare: c.Compare}, g.stdout)
		if err != nil {
			return err
		}
		results = []*bench.Result{res}
	} else {
		var ab [2]bench.Arm
		for i, a := range arms {
			ab[i] = bench.Arm{Name: a.name, Backend: a.devs[0].Backend, Threads: a.flags.Threads}
		}
		res, err := bench.MeasureAB(ctx, bc, ab, runs, g.stdout)
		if err != nil {
			return err
		}
		results = res[:]
	}

	benchID := int64(0)
	if pool != nil {
		recs := make([]bench.Recording, len(arms))
		for i, a := range arms {
			recs[i] = bench.Recording{Arm: a.name, Label: a.label, Worker: worker.DefaultName(), Build: worker.BuildString(),
				Config: a.config(), Device: a.devs[0].Label, Result: results[i]}
		}
		id, err := bench.Record(ctx, pool, recs)
		if err != nil {
			return err
		}
		benchID = id
		if len(arms) == 1 {
			fmt.Fprintf(g.stdout, "recorded bench run %d (%d runs); compare with: cuzk timings --compare bench:%d..bench:N\n", id, runs, id)
		} else {
			fmt.Fprintf(g.stdout, "recorded bench run %d (arms bench:%d/A and bench:%d/B)\n", id, id, id)
		}
	}
	if len(arms) == 1 {
		results[0].Print(g.stdout) // ends with speedup_vs_gnark under --compare gnark
		return nil
	}
	rep, err := regress.Compare(results[0].Samples(), results[1].Samples(), regress.Defaults())
	if err != nil {
		return err
	}
	for i, a := range arms {
		name := fmt.Sprintf("%s (%s; %d runs)", a.label, a.devs[0].Label, len(results[i].Ours))
		if benchID != 0 {
			name = fmt.Sprintf("bench:%d/%s = %s", benchID, a.name, name)
		}
		if i == 0 {
			rep.A = name
		} else {
			rep.B = name
		}
	}
	return printReport(g, rep, false)
}

// flagSet is the command's own arm flags, as an --ab arm would write them.
func (c benchCmd) flagSet() []string {
	f := []string{"--backend " + c.Backend}
	if c.Backend != "cpu" {
		f = append(f, "--devices "+c.Devices)
	}
	if c.Threads > 0 {
		f = append(f, fmt.Sprintf("--threads %d", c.Threads))
	}
	return f
}
