package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// handedBack is a request's state after a shutdown handed it back.
type handedBack struct {
	ID         string
	State      string
	Attempts   int    // proof_requests.attempts
	Outcome    string // of the worker's attempt row
	Error      string
	JobState   string
	JobAttempt int
}

func (e *env) attemptsOf(worker string, ids []string) map[string]handedBack {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `
		SELECT r.request_id, r.state, r.attempts, a.outcome, coalesce(a.error, ''), j.state::text, j.attempt
		  FROM cuzk.proof_requests r
		  JOIN cuzk.proof_attempts a ON a.request_id = r.request_id AND a.worker = $1
		  JOIN river_job j ON j.id = r.job_id
		 WHERE r.request_id = ANY($2)`, worker, ids)
	if err != nil {
		e.t.Fatal(err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[handedBack])
	if err != nil {
		e.t.Fatal(err)
	}
	m := map[string]handedBack{}
	for _, h := range list {
		m[h.ID] = h
	}
	return m
}

// SIGTERM with work claimed: the worker stops claiming, the request in flight is
// finished within the grace period, the claimed requests that had not started are
// handed back at once without using an attempt (River's job attempt and the request's
// attempts both stay 0), it exits 0, and a second worker proves the rest.
func TestSIGTERMFinishesInFlightAndHandsBackTheRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A budget for one synthesis at a time: the other two wait for it, not started.
	e.setupPorep()
	budgetFor, _ := e.budgets(porep)
	ids := []string{"term-1", "term-2", "term-3"}
	for _, id := range ids {
		e.submitPartitioned(id, porep, 1, 2)
	}
	release := e.holdProofs() // all three claimed and none stored yet, however fast the machine
	a := e.start("term-a", "--mem-budget", strconv.FormatInt(budgetFor(1.5), 10), "--shutdown-grace", "60s")
	e.waitFor(time.Minute, "term-a claimed all three", func(ctx context.Context) (bool, string, error) {
		var n int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM cuzk.proof_attempts WHERE worker = 'term-a' AND outcome = 'running'`).Scan(&n)
		return n == 3, fmt.Sprintf("%d running", n), err
	})
	// Their batch reserves and reads the key first: until it is resident no request has
	// started work, and all three would be handed back.
	e.waitFor(time.Minute, "term-a's key resident", func(context.Context) (bool, string, error) {
		return strings.Contains(a.output(), "proving key resident"), "key not resident yet", nil
	})
	a.signal(t, syscall.SIGTERM)
	release() // the proof in flight is stored within the grace period
	if code := a.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("worker exited %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(a.output(), "handed back") {
		t.Errorf("worker log does not say it handed work back")
	}

	// After the stop, nothing of term-a is left running, and a new request is not claimed.
	late := e.submit("term-late", small, 1, 5)
	got := e.attemptsOf("term-a", ids)
	var finished, back []string
	for _, id := range ids {
		h, ok := got[id]
		if !ok {
			t.Fatalf("%s has no attempt by term-a", id)
		}
		switch {
		case h.Outcome == "succeeded" && h.State == "succeeded":
			finished = append(finished, id)
		case h.Outcome == "interrupted" && strings.Contains(h.Error, "handed back"):
			back = append(back, id)
			if h.State != "queued" || h.Attempts != 0 || h.JobState != "available" || h.JobAttempt != 0 {
				t.Errorf("%s handed back: request %s with %d attempts, job %s attempt %d; want queued, 0, available, 0",
					id, h.State, h.Attempts, h.JobState, h.JobAttempt)
			}
		default:
			t.Errorf("%s after SIGTERM: %+v, want finished or handed back", id, h)
		}
	}
	if len(finished) == 0 || len(back) == 0 {
		t.Fatalf("after SIGTERM: finished %v, handed back %v; want the one in flight finished and the rest handed back", finished, back)
	}

	b := e.start("term-b")
	all := append(append([]string{}, ids...), late...)
	e.waitStates(90*time.Second, "succeeded", all)
	b.alive(t)
	e.exactlyOnce(all)
	for _, id := range back {
		// The hand-back kept its attempt row but not its count.
		var attempts, rowsN, jobAttempt int
		if err := e.pool.QueryRow(context.Background(), `
			SELECT r.attempts, (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id), j.attempt
			  FROM cuzk.proof_requests r JOIN river_job j ON j.id = r.job_id WHERE r.request_id = $1`, id).Scan(&attempts, &rowsN, &jobAttempt); err != nil {
			t.Fatal(err)
		}
		if attempts != 1 || rowsN != 2 || jobAttempt != 1 {
			t.Errorf("%s: %d attempts counted, %d attempt rows, River attempt %d; want 1, 2, 1", id, attempts, rowsN, jobAttempt)
		}
	}
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE worker = 'term-a' AND request_id = $1`, late[0]); n != 0 {
		t.Errorf("the stopping worker claimed a request submitted after SIGTERM")
	}
}

// SIGTERM with a grace period too short for the attempt in flight (10 ms: no proof
// fits, however fast the machine): the attempt is cancelled when the grace runs out
// and handed back without using an attempt; the worker still exits 0.
func TestSIGTERMGraceOverHandsBackInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.submit("grace", big, 1, 5)
	a := e.start("grace-a", "--shutdown-grace", "10ms")
	e.runningAttempt("grace-a", time.Minute)
	a.signal(t, syscall.SIGTERM)
	if code := a.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("worker exited %d after SIGTERM, want 0", code)
	}
	h := e.attemptsOf("grace-a", ids)[ids[0]]
	if h.Outcome != "interrupted" || !strings.Contains(h.Error, "handed back") ||
		h.State != "queued" || h.Attempts != 0 || h.JobState != "available" || h.JobAttempt != 0 {
		t.Errorf("after the grace period: %+v; want attempt interrupted (handed back), request queued with 0 attempts, job available at attempt 0", h)
	}
	b := e.start("grace-b")
	e.waitStates(60*time.Second, "succeeded", ids)
	b.alive(t)
	e.exactlyOnce(ids)
}
