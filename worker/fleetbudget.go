package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// A request that needs more memory than this worker's whole budget may fit another
// worker's: each worker advertises its budget in its cuzk.workers row (the config's
// mem_budget). Such a request is put back (River's snooze, which uses no attempt) while
// some live worker's budget holds it, and fails with the budget's error only when none
// does.

// budgetSnooze returns River's snooze for job, which needs need bytes, more than this
// worker's budget, when a live worker's budget holds it; nil when none does.
func (w *Worker) budgetSnooze(ctx context.Context, job *river.Job[jobs.ProveArgs], need int64, log *slog.Logger) error {
	live := w.cfg.DeadAfter
	if live <= 0 {
		live = w.cfg.RescueAfter
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fits, err := store.BudgetFits(c, w.pool, w.cfg.Name, need, live)
	if err != nil {
		// Not known: the request goes back rather than fail for good.
		log.Warn("looking for a worker whose memory budget holds the request", "err", err)
		fits = true
	}
	if !fits {
		return nil
	}
	d := budgetSnoozeDelay(job.Metadata)
	log.Info("request needs more memory than this worker's budget: put back for a worker whose budget holds it",
		"need_bytes", need, "mem_budget", w.budget.Total(), "room", w.budget.Room(), "back_in", d)
	return river.JobSnooze(d)
}

// budgetSnoozeDelay doubles with each snooze the job has had, from a second to a
// minute: a request that only a busy worker can hold does not make small workers
// claim it over and over.
func budgetSnoozeDelay(metadata []byte) time.Duration {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m) // none recorded: the first
	return min(time.Second<<min(max(m.Snoozes, 0), 6), time.Minute)
}
