package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/worker"
)

// preloadKeys makes the proving keys of --preload-keys resident on every device, so
// the first request for them does not pay a load of minutes. It goes through the
// worker's catalog: a request arriving meanwhile waits for the same load instead of
// starting another. Circuits load one after another (each key's memory once at a
// time), each onto all devices at once. Failures are logged; a request retries them.
func preloadKeys(ctx context.Context, log *slog.Logger, spec string, pool *pgxpool.Pool, kd keys.Dir, cat worker.Catalog, devices []worker.Device) {
	names, err := preloadNames(ctx, spec, pool, kd)
	if err != nil {
		log.Warn("preloading proving keys", "err", err)
		return
	}
	log.Info("preloading proving keys", "circuits", strings.Join(names, ","), "devices", len(devices))
	for _, name := range names {
		var wg sync.WaitGroup
		for _, d := range devices {
			wg.Go(func() {
				start := time.Now()
				if _, _, err := cat.Key(ctx, name, d.Backend); err != nil {
					if ctx.Err() == nil {
						log.Warn("preloading proving key", "circuit", name, "device", d.Backend.Name(), "err", err)
					}
					return
				}
				log.Info("proving key preloaded", "circuit", name, "device", d.Backend.Name(), "ms", time.Since(start).Milliseconds())
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
	}
}

// preloadNames resolves --preload-keys: "all" is every registered circuit whose keys
// are in kd, otherwise the comma-separated names as given.
func preloadNames(ctx context.Context, spec string, pool *pgxpool.Pool, kd keys.Dir) ([]string, error) {
	if strings.TrimSpace(spec) != "all" {
		var names []string
		for _, n := range strings.Split(spec, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		return names, nil
	}
	rows, _ := pool.Query(ctx, "SELECT name FROM cuzk.circuits ORDER BY name")
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range all {
		if kd.Has(n) {
			names = append(names, n)
		}
	}
	return names, nil
}
