package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// A request that needs more memory than this worker's whole budget may fit another
// worker's: each worker advertises its budget in its cuzk.workers row (the config's
// mem_budget). Such a request is put back while some live worker's budget holds it,
// and fails with the budget's error only when none does.
//
// River has no routing to a worker: every worker fetches every job of its queues and
// the first fetch wins. A snooze for a while was not enough: the job came back a whole
// number of seconds after the putting-back worker had fetched it on a poll, so that
// worker's own poll timer (a second, or a fraction of one, apart) fired again just
// after it came back, while the other workers' timers fired at any time, and the
// worker that could not hold the job won most rounds. Instead the job goes back at
// once (River's snooze of zero, which uses no attempt) and this worker leaves it out
// of its own fetches (stayOff, stayOffExecutor) for a while, doubling with each put
// back: meanwhile only other workers can claim it. After that this worker takes it
// once more to look again, and fails it if no live worker's budget holds it any longer.

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
	// At least a few of the others' fetches (they poll as often as this worker, by
	// default) happen while this one stays off.
	d := max(budgetStayOff(job.Metadata), 3*w.cfg.PollInterval)
	w.stayOff.add(job.ID, time.Now().Add(d))
	log.Info("request needs more memory than this worker's budget: put back for a worker whose budget holds it",
		"need_bytes", need, "mem_budget", w.budget.Total(), "room", w.budget.Room(), "stay_off", d)
	return river.JobSnooze(0)
}

// budgetStayOff doubles with each time the job was put back (River counts snoozes in
// its metadata), from a second to a minute: a request that only a busy worker can hold
// does not make small workers claim it over and over.
func budgetStayOff(metadata []byte) time.Duration {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m) // none recorded: the first
	return min(time.Second<<min(max(m.Snoozes, 0), 6), time.Minute)
}

// stayOff is the jobs this worker put back for a worker whose budget holds them, each
// with the time until which this worker does not claim it.
type stayOff struct {
	mu    sync.Mutex
	until map[int64]time.Time
}

func (s *stayOff) add(id int64, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until == nil {
		s.until = map[int64]time.Time{}
	}
	s.until[id] = until
}

// ids are the jobs to leave out at now; the others are forgotten.
func (s *stayOff) ids(now time.Time) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id, until := range s.until {
		if now.Before(until) {
			ids = append(ids, id)
		} else {
			delete(s.until, id)
		}
	}
	return ids
}

// stayOffExecutor is the driver's executor whose fetch of jobs leaves out the jobs
// this worker stays off. Other fetches (none stayed off, almost always) are River's own.
type stayOffExecutor struct {
	riverdriver.Executor
	pool *pgxpool.Pool
	off  *stayOff
}

func (e *stayOffExecutor) JobGetAvailable(ctx context.Context, p *riverdriver.JobGetAvailableParams) (*riverdriver.JobGetAvailableResult, error) {
	except := e.off.ids(time.Now())
	if len(except) == 0 || p.Schema != "" { // cuzk's River tables are in the default schema
		return e.Executor.JobGetAvailable(ctx, p)
	}
	jobs, err := store.ClaimJobsExcept(ctx, e.pool, p, except)
	if err != nil {
		return nil, err
	}
	return &riverdriver.JobGetAvailableResult{Jobs: jobs}, nil
}
