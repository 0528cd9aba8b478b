package worker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/cuzk/cuzk/store"
)

// heartbeat keeps this worker's row in cuzk.workers fresh with beat (newBeat) until ctx
// ends. The cluster's upkeep that reads those rows runs elsewhere, once per cluster
// (maintain.go).
func (w *Worker) heartbeat(ctx context.Context, beat func(context.Context) error) {
	t := time.NewTicker(w.cfg.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := beat(context.WithoutCancel(ctx)); err != nil && ctx.Err() == nil {
				w.log.Warn("worker heartbeat", "err", err)
			}
		}
	}
}

// newBeat returns the write of one heartbeat, of at most 10 s: this process's row in
// cuzk.workers, with its River client ID, marked seen now and not stopped.
func (w *Worker) newBeat() func(context.Context) error {
	host, _ := os.Hostname()
	devs := make([]string, len(w.devices))
	for i, d := range w.devices {
		devs[i] = d.Label
	}
	devJSON, _ := json.Marshal(devs)
	// The attempt rows' performance settings, and how this worker's failures are handled.
	cfgJSON, _ := json.Marshal(struct {
		PerfConfig
		RescueAfter string `json:"rescue_after"`
		DeadAfter   string `json:"dead_after"`
		// A process restarted under the name reads it to tell a dead predecessor (identity.go).
		Heartbeat string `json:"heartbeat"`
	}{w.perfConfig(), w.cfg.RescueAfter.String(), w.cfg.DeadAfter.String(), w.cfg.HeartbeatEvery.String()})
	b := &store.Beat{Worker: w.cfg.Name, Host: host, PID: os.Getpid(), Backend: w.devices[0].Backend.Name(),
		Devices: devJSON, Config: cfgJSON, RiverClientID: w.clientID}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		prev, err := store.Heartbeat(ctx, w.pool, b)
		if err == nil && prev != nil && *prev != w.clientID && *prev != w.predecessorID {
			// Someone else wrote this row since the last beat: a live process with the same name.
			w.lock.conflict("another live process heartbeats under this worker's name", predecessor{clientID: *prev})
		}
		return err
	}
}

func (w *Worker) markStopped() {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Only while the row is this process's: a live namesake's row stays live.
	_ = store.MarkWorkerStopped(c, w.pool, w.cfg.Name, w.clientID)
}

// sanitizeClientID turns a worker name into a River client ID (no slashes or spaces).
func sanitizeClientID(name string) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(name)
}
