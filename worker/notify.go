package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// PostgreSQL has no privilege on NOTIFY: any login that can connect to the database
// can send on River's channels. River acts on its control channel at once (cancel a
// running job, pause a queue) and on its leadership channel (resign), so a forged
// message would cancel or stall proving. The worker's River client therefore gets a
// driver whose listener passes a control message on only when the database says the
// same: a cancel when the job row is running with cancel_attempted_at set (what
// cuzk.cancel_proof and River's own JobCancel write), a pause or resume when the queue
// row is paused or not. Leadership resign requests are dropped (an elected leader keeps
// its term until it stops); insert wakeups pass, since a forged one costs one fetch.
// River also polls the job and queue rows on its own, so nothing is lost when a message
// is dropped.

// trustedDriver is riverpgxv5's driver with a listener that checks control messages,
// and an executor whose fetches leave out the jobs in off (fleetbudget.go).
type trustedDriver struct {
	*riverpgxv5.Driver
	pool *pgxpool.Pool
	log  *slog.Logger
	off  *stayOff
}

func newTrustedDriver(pool *pgxpool.Pool, log *slog.Logger, off *stayOff) *trustedDriver {
	return &trustedDriver{Driver: riverpgxv5.New(pool), pool: pool, log: log, off: off}
}

func (d *trustedDriver) GetExecutor() riverdriver.Executor {
	return &stayOffExecutor{Executor: d.Driver.GetExecutor(), pool: d.pool, off: d.off}
}

func (d *trustedDriver) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	return &trustedListener{Listener: d.Driver.GetListener(params), pool: d.pool, log: d.log}
}

type trustedListener struct {
	riverdriver.Listener
	pool *pgxpool.Pool
	log  *slog.Logger
}

// River's channel names (without the schema prefix the listener strips) and the
// payloads it sends on them.
const (
	topicControl    = "river_control"
	topicLeadership = "river_leadership"
)

type controlMessage struct {
	Action string `json:"action"`
	JobID  int64  `json:"job_id"`
	Queue  string `json:"queue"`
}

// WaitForNotification returns the next notification the database backs, dropping the
// others.
func (l *trustedListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	for {
		n, err := l.Listener.WaitForNotification(ctx)
		if err != nil {
			return nil, err
		}
		if l.trusted(ctx, n) {
			return n, nil
		}
	}
}

func (l *trustedListener) trusted(ctx context.Context, n *riverdriver.Notification) bool {
	switch n.Topic {
	case topicControl:
		var m controlMessage
		if err := json.Unmarshal([]byte(n.Payload), &m); err != nil {
			return false
		}
		ok, forged, err := l.backed(ctx, &m)
		if err != nil {
			l.log.Warn("checking a control notification against the database; dropped", "action", m.Action, "job_id", m.JobID, "err", err)
			return false
		}
		// A cancel of a job that is no longer running (cancelled while queued, or
		// finished since) is the database's own and needs nothing: only what the
		// database never said is worth a line.
		if forged {
			l.log.Warn("control notification not backed by the database; ignored",
				"action", m.Action, "job_id", m.JobID, "queue", m.Queue)
		}
		return ok
	case topicLeadership:
		var m struct {
			Action string `json:"action"`
		}
		// "resigned" only wakes the others to try for leadership, which the database
		// decides; "request_resign" would make the leader step down.
		return json.Unmarshal([]byte(n.Payload), &m) == nil && m.Action == "resigned"
	default:
		return true
	}
}

// backed says whether the job and queue rows agree with a control message (ok: River
// may act on it) and whether they contradict it (forged: nothing in the database asked
// for it).
func (l *trustedListener) backed(ctx context.Context, m *controlMessage) (ok, forged bool, err error) {
	queue := m.Queue
	switch {
	case slices.Contains(jobs.Queues(), queue):
	case queue == "*" && (m.Action == "pause" || m.Action == "resume"):
		queue = jobs.Queue // every queue's row says the same after River's pause of all
	default:
		return false, true, nil
	}
	// Not the wait's context: River interrupts the wait every few seconds (to ping the
	// connection), and a legitimate message must not be lost to that.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	switch m.Action {
	case "cancel":
		c, err := store.CancelRequested(ctx, l.pool, m.JobID, queue)
		return c.Requested && c.Running, !c.Requested, err
	case "pause", "resume":
		paused, found, err := store.QueuePaused(ctx, l.pool, queue)
		ok := found && paused == (m.Action == "pause")
		return ok, !ok, err
	}
	return false, true, nil
}
