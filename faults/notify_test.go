package faults

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// outsider connects to the test's database as a new login role that is in no cuzk
// role: PostgreSQL lets any login that can connect send notifications.
func (e *env) outsider() *pgxpool.Pool {
	e.t.Helper()
	u, err := url.Parse(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/") + "_outsider" // database names are unique, so are these
	return pgtest.Login(e.t, e.pool, e.url, name, "")
}

// notifyControl sends payload on River's control channel as the outsider.
func notifyControl(t *testing.T, pool *pgxpool.Pool, payload string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `SELECT pg_notify('public.river_control', $1)`, payload); err != nil {
		t.Fatalf("pg_notify as an outsider: %v", err)
	}
}

// A cancel message that the outsider sends on River's control channel for a running
// job changes nothing: only cuzk.cancel_proof (what the database says) cancels. The
// request is proven once, in its first attempt, and the worker says what it ignored.
func TestForgedCancelNotificationIsIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.outsider()
	victim := e.submit("forged-cancel", big, 1, 5)[0]
	w := e.start("forged-a")
	e.runningAttempt("forged-a", time.Minute)
	jobID := scalar[int64](t, e.pool, `SELECT job_id FROM cuzk.proof_requests WHERE request_id = $1`, victim)
	// Frozen while the message is sent, so that the attempt cannot finish first however
	// fast the machine is; the notification waits on its connection.
	w.signal(t, syscall.SIGSTOP)
	notifyControl(t, out, fmt.Sprintf(`{"action":"cancel","job_id":%d,"queue":"cuzk"}`, jobID))
	w.signal(t, syscall.SIGCONT)

	e.waitFor(time.Minute, victim+" finished", func(ctx context.Context) (bool, string, error) {
		var state string
		err := e.pool.QueryRow(ctx, `SELECT state FROM cuzk.proof_requests WHERE request_id = $1`, victim).Scan(&state)
		return state != "queued" && state != "running", state, err
	})
	w.alive(t)
	e.exactlyOnce([]string{victim})
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = $1`, victim); n != 1 {
		t.Errorf("%s: %d attempts, want 1 (the forged cancel must not end it)", victim, n)
	}
	if log := w.output(); !strings.Contains(log, "control notification not backed by the database") {
		t.Errorf("worker log does not say it ignored the forged cancel:\n%s", log)
	}
}

// A pause of every queue that the outsider sends on River's control channel does not
// stall proving. River itself would act on it until its next poll of the queue row
// (once a minute); the requests here are proven well before that.
func TestForgedPauseNotificationIsIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.outsider()
	w := e.start("pause-a")
	e.waitFor(time.Minute, "worker started", func(context.Context) (bool, string, error) {
		return strings.Contains(w.output(), "worker started"), "no start line yet", nil
	})
	// Sent for a while, so that some arrive once River listens, whenever that is.
	for range 20 {
		notifyControl(t, out, `{"action":"pause","queue":"*"}`)
		time.Sleep(100 * time.Millisecond)
	}
	ids := e.submit("after-pause", small, 2, 5)
	// River's own poll of the queue row would resume it a minute after the start: 30 s
	// after the messages is well before that, and far longer than two small proofs.
	e.waitStates(30*time.Second, "succeeded", ids)
	w.alive(t)
	e.exactlyOnce(ids)
	if paused := scalar[bool](t, e.pool, `SELECT paused_at IS NOT NULL FROM river_queue WHERE name = 'cuzk'`); paused {
		t.Error("the queue row says paused")
	}
	if log := w.output(); !strings.Contains(log, "control notification not backed by the database") {
		t.Errorf("worker log does not say it ignored the forged pause:\n%s", log)
	}
}

// Cancels made through cuzk.cancel_proof of queued requests are the database's own: the worker logs no forgery for them (a fleet cancelling many
// queued requests would otherwise fill its log). A forged cancel sent afterwards is
// still logged, so the worker was listening all along.
func TestLegitimateCancelsAreNotLoggedAsForged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.outsider()
	ids := e.submit("legit-cancel", big, 6, 5)
	release := e.holdProofs() // the worker keeps the three it holds while the rest are cancelled
	w := e.start("legit-a")
	var queued, running []string
	e.waitFor(time.Minute, "three jobs running, three queued", func(ctx context.Context) (bool, string, error) {
		queued, running = nil, nil
		rows, err := e.pool.Query(ctx, `SELECT j.args->>'request_id', j.state FROM river_job j WHERE j.args->>'request_id' = ANY($1)`, ids)
		if err != nil {
			return false, "", err
		}
		var id, state string
		_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
			switch state {
			case "running":
				running = append(running, id)
			case "available":
				queued = append(queued, id)
			}
			return nil
		})
		return len(running) == 3 && len(queued) == 3, fmt.Sprintf("running %v, available %v", running, queued), err
	})
	for _, id := range queued {
		if !scalar[bool](t, e.pool, `SELECT cuzk.cancel_proof($1)`, id) {
			t.Fatalf("cancel_proof(%s) returned false", id)
		}
	}
	release()
	e.waitStates(time.Minute, "succeeded", running)
	e.waitStates(time.Minute, "cancelled", queued)
	jobID := scalar[int64](t, e.pool, `SELECT job_id FROM cuzk.proof_requests WHERE request_id = $1`, running[0])
	notifyControl(t, out, fmt.Sprintf(`{"action":"cancel","job_id":%d,"queue":"cuzk"}`, jobID))
	const forged = "control notification not backed by the database"
	e.waitFor(time.Minute, "the forged cancel logged", func(context.Context) (bool, string, error) {
		return strings.Contains(w.output(), forged), "not logged yet", nil
	})
	if n := strings.Count(w.output(), forged); n != 1 {
		t.Errorf("%d forgery lines, want 1 (the outsider's):\n%s", n, w.output())
	}
	w.alive(t)
}
