package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgcluster"
	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/migrations"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

type demoCmd struct {
	Circuit  string `default:"merkle-poseidon2-d8-c2" help:"Built-in circuit to prove."`
	Requests int    `default:"4" help:"Proof requests to submit."`
	Keep     bool   `help:"Keep the temporary directory (cluster, keys) for inspection."`
}

// Run starts a private PostgreSQL cluster, migrates it, sets a small circuit up,
// submits requests through SQL, proves them with an in-process worker, verifies the
// stored proofs, prints the timing history and removes everything.
func (c demoCmd) Run(ctx context.Context, g *globals) error {
	if c.Requests < 1 {
		return usagef("--requests must be at least 1")
	}
	out := g.stdout
	say := func(format string, a ...any) { fmt.Fprintf(out, "==> "+format+"\n", a...) }

	say("starting a private PostgreSQL cluster")
	cl, err := pgcluster.Start(ctx, pgcluster.FreePort())
	if err != nil {
		return err
	}
	defer func() {
		if c.Keep {
			fmt.Fprintf(out, "kept %s (stop it with: pg_ctl -D %s stop)\n", cl.Dir, filepath.Join(cl.Dir, "data"))
			return
		}
		cl.Stop()
	}()
	work, err := os.MkdirTemp("", "cuzk-demo-")
	if err != nil {
		return err
	}
	if !c.Keep {
		defer os.RemoveAll(work)
	}
	g.DatabaseURL = cl.URL("postgres")
	fmt.Fprintf(out, "    DATABASE_URL=%q\n", g.DatabaseURL)
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()

	say("migrating")
	if _, err := migrations.Migrate(ctx, pool); err != nil {
		return err
	}

	say("setting up %s", c.Circuit)
	d := dirs{KeysDir: filepath.Join(work, "keys"), CacheDir: filepath.Join(work, "r1cs")}
	if err := d.resolve(); err != nil {
		return err
	}
	reg := synth.NewRegistry(d.CacheDir)
	if err := setupBuiltin(ctx, g, pool, reg, keys.Dir(d.KeysDir), c.Circuit, false, "cpu"); err != nil {
		return err
	}

	say("submitting %d requests with SQL: SELECT cuzk.submit_proof(...)", c.Requests)
	for i := range c.Requests {
		inputs, err := synth.Inputs(c.Circuit, uint64(i+1))
		if err != nil {
			return err
		}
		rid := fmt.Sprintf("demo-%d", i+1)
		if _, err := store.Submit(ctx, pool, &store.Submission{RequestID: rid, Circuit: c.Circuit, Inputs: inputs}); err != nil {
			return sqlErr("submit", err)
		}
	}

	say("proving with an in-process worker (cpu backend)")
	wctx, stop := context.WithCancel(ctx)
	wc := workerCmd{dirs: d, Backend: "cpu", Devices: "all", MemBudget: "4GiB", MaxBatch: 2, BatchWait: 20 * time.Millisecond,
		SynthConcurrency: 1, QueueDepth: 2, UrgentSlots: 2, RescueAfter: time.Hour, ShutdownGrace: 10 * time.Second, PollInterval: 200 * time.Millisecond,
		GPUPrecompute: "auto"}
	wg := *g
	wg.log = g.log.With("component", "worker")
	done := make(chan error, 1)
	go func() { done <- wc.Run(wctx, &wg) }()

	if err := c.waitProven(ctx, g, pool, done, stop); err != nil {
		return err
	}
	stop()
	if err := <-done; err != nil {
		return err
	}

	say("verifying the stored proofs with gnark's verifier")
	if err := (verifyCmd{All: true}).Run(ctx, g); err != nil {
		return err
	}
	say("status")
	if err := (statusCmd{Limit: c.Requests}).Run(ctx, g); err != nil {
		return err
	}
	say("timings (p50/p95 of every phase, from cuzk.timing_history)")
	if err := (timingsCmd{Since: time.Hour}).Run(ctx, g); err != nil {
		return err
	}
	say("done; removing the private cluster")
	return nil
}

// waitProven follows the demo's requests until all are finished, with a progress bar
// (plain lines when stderr is not a terminal). It stops the worker on failure.
func (c demoCmd) waitProven(ctx context.Context, g *globals, pool *pgxpool.Pool, done <-chan error, stop context.CancelFunc) (err error) {
	p := newProgress(g.stderr, "proving", c.Requests)
	defer func() { p.Done(err) }()
	deadline := time.After(10 * time.Minute)
	for {
		finished, failed, err := store.RequestCounts(ctx, pool)
		if err != nil {
			stop()
			return err
		}
		p.Set(finished)
		if failed > 0 {
			stop()
			<-done
			return fmt.Errorf("%d demo requests failed (see cuzk status)", failed)
		}
		if finished == c.Requests {
			return nil
		}
		select {
		case err := <-done:
			stop()
			return fmt.Errorf("worker exited early: %v", err)
		case <-deadline:
			stop()
			return fmt.Errorf("demo requests not finished after 10 minutes")
		case <-time.After(250 * time.Millisecond):
		}
	}
}
