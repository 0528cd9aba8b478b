package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
)

// preload makes proving keys resident on every device in the background at start, so
// the first request for them does not pay a load of minutes: the keys of
// Config.PreloadKeys, then those of the registered circuits with queued requests (most
// urgent first), each followed by its compiled circuit (held while the budget has room
// for it, like any idle circuit). It goes through the catalog: a request arriving meanwhile waits for
// the same load instead of starting another, and a request for a circuit not loaded
// yet starts its own rather than waiting its turn here. Circuits load one after
// another (each key's memory once at a time), each onto all devices at once. Failures
// are logged; a request retries them. A preload never evicts a key: on a full device
// it stops there (a request's own load may evict).
func (w *Worker) preload(ctx context.Context) {
	names := slices.Clone(w.cfg.PreloadKeys)
	queued, err := store.QueuedCircuits(ctx, w.pool)
	if err != nil && ctx.Err() == nil {
		w.log.Warn("finding the circuits of queued requests to preload their keys", "err", err)
	}
	for _, n := range queued {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	w.log.Info("preloading proving keys", "circuits", strings.Join(names, ","), "queued", strings.Join(queued, ","), "devices", len(w.devices))
	began := time.Now()
	for _, name := range names {
		var wg sync.WaitGroup
		for _, d := range w.devices {
			wg.Go(func() {
				start := time.Now()
				key, _, err := w.catalog.Key(context.WithValue(ctx, noEviction{}, true), name, d.Backend)
				switch {
				case err == nil:
				case errors.Is(err, prover.ErrOutOfMemory):
					w.log.Info("proving key not preloaded: the device is full", "circuit", name, "device", d.Backend.Name())
					return
				default:
					if ctx.Err() == nil {
						w.log.Warn("preloading proving key", "circuit", name, "device", d.Backend.Name(), "err", err)
					}
					return
				}
				key.Release() // resident, not in use: a load short of memory may evict it
				w.log.Info("proving key preloaded", "circuit", name, "device", d.Backend.Name(), "ms", time.Since(start).Milliseconds())
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		start := time.Now()
		if _, release, err := w.catalog.Circuit(ctx, name); err != nil {
			if ctx.Err() == nil {
				w.log.Warn("preloading compiled circuit", "circuit", name, "err", err)
			}
		} else {
			release() // loaded, not in use: evicted when a reservation needs its room
			w.log.Info("compiled circuit preloaded", "circuit", name, "ms", time.Since(start).Milliseconds())
		}
	}
	w.log.Info("preload done", "circuits", strings.Join(names, ","), "ms", time.Since(began).Milliseconds())
}
