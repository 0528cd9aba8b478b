package worker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/worker"
)

// BenchmarkIdleQueries counts what ten idle workers (default settings, each with a pool
// of its own, as ten processes would have) cost the database: committed transactions per
// minute on one fresh database (pg_stat_database.xact_commit; every statement outside an
// explicit transaction is one), over a window after all ten have started. The window is
// CUZK_IDLE_WINDOW (default 1m).
//
//	go test ./worker/ -run '^$' -bench IdleQueries -benchtime 1x
func BenchmarkIdleQueries(b *testing.B) {
	const workers = 10
	window := time.Minute
	if v := os.Getenv("CUZK_IDLE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("CUZK_IDLE_WINDOW: %v", err)
		}
		window = d
	}
	db := pgtest.New(b)
	ctx := context.Background()
	for i := range workers {
		pool, err := pgxpool.New(ctx, db.URL)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		cfg := worker.DefaultConfig()
		cfg.Name = fmt.Sprintf("idle/%d", i)
		cfg.MemBudget = 1 << 30
		cfg.ShutdownGrace = 10 * time.Second
		w, err := worker.New(pool, cfg, worker.NewCatalog(keys.reg.Get, keys.load, nil), []worker.Prover{{Backend: prover.NewCPU()}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		rw := &runningWorker{w: w, done: make(chan error, 1)}
		var wctx context.Context
		wctx, rw.cancel = context.WithCancel(ctx)
		go func() { rw.done <- w.Run(wctx) }()
		b.Cleanup(func() { rw.stop(b) })
	}
	// Past the start (migrations checked, names locked, first beats), then measured.
	time.Sleep(15 * time.Second)
	commits := func() int64 {
		var n int64
		if err := db.Pool.QueryRow(ctx, `SELECT pg_stat_clear_snapshot()`).Scan(new(any)); err != nil {
			b.Fatal(err)
		}
		if err := db.Pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	b.ResetTimer()
	before := commits()
	time.Sleep(window)
	after := commits() - 2 // the two reads of the first commits call
	b.StopTimer()
	b.ReportMetric(float64(after-before)/window.Minutes(), "queries/min")
	b.ReportMetric(float64(after-before)/window.Minutes()/workers, "queries/min/worker")
}
