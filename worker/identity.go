package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// A worker's name (--name) is held by one live process at a time through a
// connection-level advisory lock, taken on a connection of its own and kept for the
// life of the process, beside the heartbeat of its cuzk.workers row. PostgreSQL drops
// the lock as soon as that connection ends (killed, crashed, host gone and its
// connection cut), so a process that starts under the name and gets the lock knows its
// predecessor is gone and hands the predecessor's running jobs back at once: they would
// otherwise wait for --rescue-after, since the heartbeat row, shared by name, looks
// alive once the new process beats.
//
// Advisory locks need no privilege, so the lock alone proves nothing: any login may
// take it. A process that finds it held looks at who holds it. A session whose login
// may write cuzk.workers is a live namesake: its jobs are left alone, and both say
// loudly that two live processes share the name. Any other session is ignored, and the
// predecessor's liveness is read from its row, which only cuzk's worker role writes: a
// heartbeat that goes on is a live namesake, one older than three heartbeat intervals
// a dead predecessor whose jobs are handed back.

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
	// impostors are the sessions last logged as holding the lock without the right
	// to write cuzk.workers.
	impostors string
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
	gone := "is gone"
	if !locked {
		if !w.lock.heldByImpostors(ctx) {
			w.lock.conflict("another live process holds this worker's name: its jobs are left alone", prev)
			return ""
		}
		if !found || prev.clientID == "" || prev.stopped {
			return prev.clientID
		}
		alive, err := w.heartbeatGoesOn(ctx, last)
		if err != nil {
			w.log.Warn("reading the previous process's heartbeat", "worker", w.cfg.Name, "err", err)
			return ""
		}
		if alive {
			w.lock.conflict("another live process heartbeats under this worker's name: its jobs are left alone", prev)
			return ""
		}
		gone = "stopped heartbeating"
	}
	if !found || prev.clientID == "" || prev.clientID == w.clientID {
		return ""
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	handed, err := store.HandBackClientJobs(c, w.pool, prev.clientID, jobs.Queues(),
		fmt.Sprintf("worker %s restarted: its previous process (%s pid %d) %s (rescued)", w.cfg.Name, prev.host, prev.pid, gone))
	if err != nil {
		w.log.Warn("handing back the previous process's jobs", "worker", w.cfg.Name, "err", err)
		return prev.clientID
	}
	if len(handed) > 0 || !prev.stopped {
		w.log.Warn("previous process of this worker "+gone+": its running jobs handed back", "worker", w.cfg.Name,
			"previous_host", prev.host, "previous_pid", prev.pid, "previous_heartbeat", prev.lastSeen.Format(time.RFC3339),
			"jobs", len(handed))
	}
	for _, j := range handed {
		w.log.Info("job of the previous process handed back", "job_id", j.JobID, "discarded", j.Discarded)
	}
	return prev.clientID
}

// heartbeatGoesOn watches the predecessor's row, last as first read, until it is
// written again (alive: true) or its heartbeat is older than three intervals, the
// predecessor's or this process's, whichever is longer (dead: false).
func (w *Worker) heartbeatGoesOn(ctx context.Context, last store.LastBeat) (bool, error) {
	stale := 3 * max(w.cfg.HeartbeatEvery, last.HeartbeatEvery)
	w.log.Info("waiting for the previous process's heartbeat: written again, it is alive; older than "+stale.String()+", it is gone",
		"worker", w.cfg.Name, "previous_host", last.Host, "previous_pid", last.PID, "heartbeat_age", last.Age.Round(time.Millisecond))
	poll := min(w.cfg.HeartbeatEvery/2, time.Second)
	for {
		b, found, err := store.LastHeartbeat(ctx, w.pool, w.cfg.Name)
		switch {
		case err != nil:
			return false, err
		case !found || b.Stopped:
			return false, nil
		case b.RiverClientID != last.RiverClientID || b.LastSeenAt.After(last.LastSeenAt):
			return true, nil
		case b.Age >= stale:
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(min(poll, stale-b.Age)):
		}
	}
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
			if !l.heldByImpostors(ctx) {
				l.conflict("another live process holds this worker's name", predecessor{})
			}
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

// heldByImpostors says whether the name's lock is held only by sessions whose login
// cannot write cuzk.workers (or by none any more), logging them by pid and login, once
// for each set of them. On an error it says false: a live namesake is then assumed,
// which leaves jobs alone, as a lock held by a worker does.
func (l *nameLock) heldByImpostors(ctx context.Context) bool {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	holders, err := store.NameLockHolders(c, l.w.pool, l.w.cfg.Name)
	if err != nil {
		l.w.log.Warn("reading who holds the worker name's lock", "worker", l.w.cfg.Name, "err", err)
		return false
	}
	var who []string
	for _, h := range holders {
		if h.Worker {
			return false
		}
		who = append(who, fmt.Sprintf("pid %d login %s application %s client %s", h.PID, orDash(h.Login), orDash(h.Application), orDash(h.Client)))
	}
	seen := strings.Join(who, "; ")
	l.mu.Lock()
	defer l.mu.Unlock()
	if seen != "" && seen != l.impostors {
		l.impostors = seen
		l.w.log.Warn("worker name lock held by a session whose login cannot write cuzk.workers: ignored, liveness is read from the heartbeat",
			"worker", l.w.cfg.Name, "holders", seen)
	}
	return true
}

func (l *nameLock) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background()) // ends the connection: the lock goes with it
		l.conn = nil
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
