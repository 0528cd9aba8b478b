package worker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
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
	// The attempt rows' performance settings, and how this worker's failures are handled.
	cfgJSON, _ := json.Marshal(struct {
		PerfConfig
		RescueAfter string `json:"rescue_after"`
		DeadAfter   string `json:"dead_after"`
	}{w.perfConfig(), w.cfg.RescueAfter.String(), w.cfg.DeadAfter.String()})
	backend := w.devices[0].Backend.Name()
	beat := func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		prev, err := store.Heartbeat(c, w.pool, &store.Beat{Worker: w.cfg.Name, Host: host, PID: os.Getpid(),
			Backend: backend, Devices: devJSON, Config: cfgJSON, RiverClientID: w.clientID})
		if err != nil && ctx.Err() == nil {
			w.log.Warn("worker heartbeat", "err", err)
		}
		if err == nil && prev != nil && *prev != w.clientID && *prev != w.predecessorID {
			// Someone else wrote this row since the last beat: a live process with the same name.
			w.lock.conflict("another live process heartbeats under this worker's name", predecessor{clientID: *prev})
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
			w.rescueDead(ctx)
			if _, err := store.PruneWorkers(ctx, w.pool, stoppedWorkersKept); err != nil && ctx.Err() == nil {
				w.log.Warn("pruning stopped workers", "err", err)
			}
			w.failOrphaned(ctx)
		}
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

// stoppedWorkersKept is how long a stopped worker stays in cuzk.workers (for the
// dashboard and for reading attempt rows against it) before it is deleted.
const stoppedWorkersKept = 7 * 24 * time.Hour

// rescueDead hands the running jobs of workers whose heartbeat stopped back to the
// queue (see store.RescueDeadWorkers).
func (w *Worker) rescueDead(ctx context.Context) {
	if w.cfg.DeadAfter <= 0 {
		return
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rescued, err := store.RescueDeadWorkers(c, w.pool, w.cfg.Name, w.cfg.DeadAfter, jobs.Queue)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("rescuing the jobs of dead workers", "err", err)
		}
		return
	}
	for _, j := range rescued {
		w.log.Warn("job of a dead worker handed back", "job_id", j.JobID, "dead_worker", j.Worker,
			"discarded", j.Discarded, "dead_after", w.cfg.DeadAfter)
	}
}

// failOrphaned ends requests whose job River discarded behind cuzk's back (the rescuer,
// when a dead worker's job has no attempts left), so that none stays 'running' forever.
func (w *Worker) failOrphaned(ctx context.Context) {
	n, err := store.FailOrphaned(ctx, w.pool)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("ending orphaned requests", "err", err)
	case n > 0:
		w.log.Warn("requests failed: their worker stopped during their last attempt", "requests", n)
	}
}
