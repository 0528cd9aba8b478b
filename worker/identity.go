package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// A worker's name (--name) is held by one live process at a time through a
// connection-level advisory lock, taken on a connection of its own and kept for the
// life of the process. PostgreSQL drops the lock as soon as that connection
// ends (killed, crashed, host gone and its connection cut), so a process that starts
// under the name and gets the lock knows its predecessor is gone and hands the
// predecessor's running jobs back at once: they would otherwise wait for
// --rescue-after, since the heartbeat row, shared by name, looks alive. A process
// that finds the lock held runs beside the other one without touching its jobs, and
// says so loudly: two live processes must not share a name.

// nameLockPatience is how long a starting process waits for a held lock to be freed
// before it takes the holder for alive.
const nameLockPatience = 3 * time.Second

// newClientID is the River client ID of one process: the name plus a random part,
// so that jobs claimed by a previous process under the same name are told apart.
func newClientID(name string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return sanitizeClientID(name) + "." + hex.EncodeToString(b)
}

type nameLock struct {
	w      *Worker
	mu     sync.Mutex
	conn   *pgx.Conn
	held   bool
	warned time.Time // last time a conflict was logged
}

// predecessor is what cuzk.workers said about the name before this process wrote to it.
type predecessor struct {
	clientID, host string
	pid            int
	lastSeen       time.Time
	stopped        bool
}

// takeOver runs once at start, before claiming: it takes the name's lock and, when the
// lock was free, hands back the running jobs of the process that last heartbeat under
// the name. It returns the predecessor's client ID (its writes to the row are then not
// a conflict).
func (w *Worker) takeOver(ctx context.Context) string {
	w.lock = &nameLock{w: w}
	locked, err := w.lock.acquire(ctx)
	// A process killed a moment ago may still hold the lock until PostgreSQL has seen
	// its connection close: a few seconds decide between gone and alive.
	for deadline := time.Now().Add(nameLockPatience); err == nil && !locked && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(200 * time.Millisecond)
		locked, err = w.lock.acquire(ctx)
	}
	if err != nil {
		// Without the lock nothing is known about the predecessor: its jobs are left
		// to the usual rescue (--dead-after seen by other workers, or --rescue-after).
		w.log.Warn("taking the worker name's lock", "worker", w.cfg.Name, "err", err)
		return ""
	}
	last, found, err := store.LastHeartbeat(ctx, w.pool, w.cfg.Name)
	if err != nil {
		w.log.Warn("reading the worker's previous heartbeat", "worker", w.cfg.Name, "err", err)
	}
	prev := predecessor{clientID: last.RiverClientID, host: last.Host, pid: last.PID, lastSeen: last.LastSeenAt, stopped: last.Stopped}
	if !locked {
		w.lock.conflict("another live process holds this worker's name: its jobs are left alone", prev)
		return ""
	}
	if !found || prev.clientID == "" || prev.clientID == w.clientID {
		return ""
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	handed, err := store.HandBackClientJobs(c, w.pool, prev.clientID, jobs.Queue,
		fmt.Sprintf("worker %s restarted: its previous process (%s pid %d) is gone (rescued)", w.cfg.Name, prev.host, prev.pid))
	if err != nil {
		w.log.Warn("handing back the previous process's jobs", "worker", w.cfg.Name, "err", err)
		return prev.clientID
	}
	if len(handed) > 0 || !prev.stopped {
		w.log.Warn("previous process of this worker is gone: its running jobs handed back", "worker", w.cfg.Name,
			"previous_host", prev.host, "previous_pid", prev.pid, "previous_heartbeat", prev.lastSeen.Format(time.RFC3339),
			"jobs", len(handed))
	}
	for _, j := range handed {
		w.log.Info("job of the previous process handed back", "job_id", j.JobID, "discarded", j.Discarded)
	}
	return prev.clientID
}

// acquire connects (again, if the lock's connection was lost) and tries the lock.
func (l *nameLock) acquire(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil && !l.conn.IsClosed() {
		if l.held {
			return true, nil
		}
	} else {
		l.held = false
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cfg := l.w.pool.Config().ConnConfig.Copy()
		cfg.RuntimeParams["application_name"] = "cuzk worker name lock"
		conn, err := pgx.ConnectConfig(c, cfg)
		if err != nil {
			return false, err
		}
		l.conn = conn
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	held, err := store.TryNameLock(c, l.conn, l.w.cfg.Name)
	l.held = held
	if err != nil {
		l.conn.Close(context.Background())
		l.conn = nil
		return false, err
	}
	return l.held, nil
}

// keep re-takes the lock after its connection was lost (a database restart), as
// soon as the database answers again, so that a process starting under the name
// meanwhile does not take this live one for gone. It returns when ctx ends.
func (l *nameLock) keep(ctx context.Context) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		l.mu.Lock()
		conn, held := l.conn, l.held
		l.mu.Unlock()
		if conn != nil && held {
			// Blocks until the connection ends (no notification is ever sent on it).
			err := conn.PgConn().WaitForNotification(ctx)
			if ctx.Err() != nil {
				return
			}
			l.w.log.Warn("worker name lock's connection lost, taking the lock again", "worker", l.w.cfg.Name, "err", err)
			conn.Close(context.Background())
			delay = 100 * time.Millisecond
		}
		locked, err := l.acquire(ctx)
		switch {
		case err != nil:
		case !locked:
			l.conflict("another live process took this worker's name while the database was away", predecessor{})
			delay = 5 * time.Second
		default:
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// conflict logs, at most once a minute, that two live processes share the name.
func (l *nameLock) conflict(msg string, other predecessor) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.warned) < time.Minute {
		return
	}
	l.warned = time.Now()
	args := []any{"worker", l.w.cfg.Name, "client_id", l.w.clientID}
	if other.clientID != "" {
		args = append(args, "other_client_id", other.clientID, "other_host", other.host, "other_pid", other.pid,
			"other_heartbeat", other.lastSeen.Format(time.RFC3339))
	}
	l.w.log.Error("TWO LIVE WORKERS SHARE THE NAME "+l.w.cfg.Name+": "+msg+"; give every worker process its own --name", args...)
}

func (l *nameLock) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background()) // ends the connection: the lock goes with it
		l.conn = nil
	}
}
