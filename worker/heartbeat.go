package worker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"
)

// heartbeat keeps this worker's row in cuzk.workers fresh (and the circuit timeouts
// current) until ctx ends.
func (w *Worker) heartbeat(ctx context.Context) {
	host, _ := os.Hostname()
	devs := make([]string, len(w.devices))
	for i, d := range w.devices {
		devs[i] = d.Label
	}
	devJSON, _ := json.Marshal(devs)
	cfgJSON, _ := json.Marshal(map[string]any{
		"mem_budget": w.cfg.MemBudget, "max_batch": w.cfg.MaxBatch, "batch_wait": w.cfg.BatchWait.String(),
		"synth_concurrency": w.cfg.SynthConcurrency, "queue_depth": w.cfg.QueueDepth,
		"rescue_after": w.cfg.RescueAfter.String(),
	})
	backend := w.devices[0].Backend.Name()
	beat := func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, err := w.pool.Exec(c, `
			INSERT INTO cuzk.workers (worker, host, pid, backend, devices, config)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (worker) DO UPDATE SET last_seen_at = now(), stopped_at = NULL,
			    backend = EXCLUDED.backend, devices = EXCLUDED.devices, config = EXCLUDED.config`,
			w.cfg.Name, host, os.Getpid(), backend, devJSON, cfgJSON)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("worker heartbeat", "err", err)
		}
	}
	beat()
	t := time.NewTicker(w.cfg.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			beat()
			w.loadTimeouts(ctx)
			w.failOrphaned(ctx)
		}
	}
}

func (w *Worker) markStopped() {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = w.pool.Exec(c, "UPDATE cuzk.workers SET stopped_at = now(), last_seen_at = now() WHERE worker = $1", w.cfg.Name)
}

// sanitizeClientID turns a worker name into a River client ID (no slashes or spaces).
func sanitizeClientID(name string) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(name)
}
