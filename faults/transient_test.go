package faults

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A proving key file missing on the worker's host is a transient fault: each request is
// retried with a growing backoff up to max_attempts and then fails; once the file is
// back, `cuzk retry ID` and `cuzk retry --failed --since 1h` queue the requests again
// and they succeed.
func TestMissingKeyRetriedThenFailedThenRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pk, saved := e.pkFile(small)
	if err := os.Remove(pk); err != nil {
		t.Fatal(err)
	}
	const maxAttempts = 3
	const backoff = 300 * time.Millisecond
	ids := e.submit("nokey", small, 2, maxAttempts)
	w := e.start("nokey-a", "--retry-backoff", backoff.String())
	e.waitStates(60*time.Second, "failed", ids)

	for _, id := range ids {
		rows, err := e.pool.Query(context.Background(), `
			SELECT attempt, outcome, coalesce(error, ''), started_at, finished_at
			  FROM cuzk.proof_attempts WHERE request_id = $1 ORDER BY attempt`, id)
		if err != nil {
			t.Fatal(err)
		}
		type att struct {
			N                 int
			Outcome, Error    string
			Started, Finished time.Time
		}
		list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[att])
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"retryable", "retryable", "failed"}
		if len(list) != len(want) {
			t.Fatalf("%s: %d attempts, want %d: %+v", id, len(list), len(want), list)
		}
		for i, a := range list {
			if a.Outcome != want[i] || !strings.Contains(a.Error, filepath.Base(pk)) {
				t.Errorf("%s attempt %d: %s %q, want %s naming the missing %s", id, a.N, a.Outcome, a.Error, want[i], filepath.Base(pk))
			}
			if i > 0 {
				// Backoff doubles from --retry-backoff: at least 300ms, then 600ms.
				gap := a.Started.Sub(list[i-1].Finished)
				if min := backoff << (i - 1); gap < min*9/10 {
					t.Errorf("%s attempt %d started %s after the previous one failed, want at least %s", id, a.N, gap, min)
				}
			}
		}
		var state, lastErr string
		var attempts int
		if err := e.pool.QueryRow(context.Background(), `SELECT state, attempts, last_error FROM cuzk.proof_status WHERE request_id = $1`, id).Scan(&state, &attempts, &lastErr); err != nil {
			t.Fatal(err)
		}
		if state != "failed" || attempts != maxAttempts || !strings.Contains(lastErr, filepath.Base(pk)) {
			t.Errorf("%s: %s after %d attempts (%q), want failed after %d naming %s", id, state, attempts, lastErr, maxAttempts, filepath.Base(pk))
		}
	}

	if err := os.WriteFile(pk, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := e.cuzk("retry", ids[0]); !strings.Contains(out, "queued "+ids[0]+" again") {
		t.Errorf("cuzk retry %s: %q", ids[0], out)
	}
	e.waitStates(60*time.Second, "succeeded", ids[:1])
	if out := e.cuzk("retry", "--failed", "--since", "1h"); !strings.Contains(out, "queued "+ids[1]+" again") || strings.Contains(out, ids[0]) {
		t.Errorf("cuzk retry --failed --since 1h: want only %s queued again, got %q", ids[1], out)
	}
	e.waitStates(60*time.Second, "succeeded", ids)
	w.alive(t)
	e.exactlyOnce(ids)
	for _, id := range ids {
		if n := scalar[int](t, e.pool, `SELECT attempts FROM cuzk.proof_requests WHERE request_id = $1`, id); n != maxAttempts+1 {
			t.Errorf("%s: %d attempts in all, want %d", id, n, maxAttempts+1)
		}
	}
}

// cuzk.cancel_proof() of a request in the middle of its attempt: River's control
// channel cancels the attempt's context, the attempt is recorded 'cancelled', the
// request ends 'cancelled' with no proof, and the worker goes on with other work. A
// request cancelled while queued is never attempted.
func TestCancelRunningRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A queued request is cancelled at once, before any worker sees it.
	queued := e.submit("cancel-queued", small, 1, 5)[0]
	if !scalar[bool](t, e.pool, `SELECT cuzk.cancel_proof($1)`, queued) {
		t.Fatalf("cancel_proof(%s) = false, want true for a queued request", queued)
	}
	victim := e.submit("cancel", big, 1, 5)[0]
	w := e.start("cancel-a")
	e.waitFor(time.Minute, victim+" running", func(ctx context.Context) (bool, string, error) {
		var outcome string
		err := e.pool.QueryRow(ctx, `SELECT outcome FROM cuzk.proof_attempts WHERE request_id = $1`, victim).Scan(&outcome)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, "no attempt yet", nil
		}
		return outcome == "running", outcome, err
	})
	// Frozen while the cancel is sent, so that the attempt cannot finish first however
	// fast the machine is; the notification waits on its connection.
	w.signal(t, syscall.SIGSTOP)
	ok := scalar[bool](t, e.pool, `SELECT cuzk.cancel_proof($1)`, victim)
	w.signal(t, syscall.SIGCONT)
	if !ok {
		t.Fatalf("cancel_proof(%s) = false, want true for a running request", victim)
	}
	others := e.submit("after-cancel", small, 2, 5)

	e.waitFor(time.Minute, victim+" attempt and job finished", func(ctx context.Context) (bool, string, error) {
		var outcome, job string
		err := e.pool.QueryRow(ctx, `
			SELECT a.outcome, j.state::text FROM cuzk.proof_attempts a
			  JOIN cuzk.proof_requests r USING (request_id) JOIN river_job j ON j.id = r.job_id
			 WHERE a.request_id = $1`, victim).Scan(&outcome, &job)
		return outcome != "running" && job != "running", outcome + ", job " + job, err
	})
	var outcome, state, jobState string
	var proofs int
	if err := e.pool.QueryRow(context.Background(), `
		SELECT a.outcome, r.state, j.state::text, (SELECT count(*) FROM cuzk.proofs p WHERE p.request_id = r.request_id)
		  FROM cuzk.proof_requests r JOIN cuzk.proof_attempts a USING (request_id) JOIN river_job j ON j.id = r.job_id
		 WHERE r.request_id = $1`, victim).Scan(&outcome, &state, &jobState, &proofs); err != nil {
		t.Fatal(err)
	}
	if outcome != "cancelled" || state != "cancelled" || jobState != "cancelled" || proofs != 0 {
		t.Errorf("cancelled while running: attempt %s, request %s, job %s, %d proofs; want cancelled, cancelled, cancelled, 0",
			outcome, state, jobState, proofs)
	}
	e.waitStates(60*time.Second, "succeeded", others)
	w.alive(t)
	e.exactlyOnce(others)
	var qState, qJob string
	var qAttempts int
	if err := e.pool.QueryRow(context.Background(), `
		SELECT r.state, j.state::text, (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id)
		  FROM cuzk.proof_requests r JOIN river_job j ON j.id = r.job_id WHERE r.request_id = $1`, queued).Scan(&qState, &qJob, &qAttempts); err != nil {
		t.Fatal(err)
	}
	if qState != "cancelled" || qJob != "cancelled" || qAttempts != 0 {
		t.Errorf("cancelled while queued: request %s, job %s, %d attempts; want cancelled, cancelled, 0", qState, qJob, qAttempts)
	}
	// A cancel is someone's request, not a fault: logged at info with who asked,
	// and no warning about it.
	out := w.output()
	logged := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, " INF attempt cancelled ") && strings.Contains(line, victim) &&
			strings.Contains(line, `reason="cancelled by role `):
			logged = true
		case strings.Contains(line, " WRN ") && strings.Contains(strings.ToLower(line), "cancel"):
			t.Errorf("worker logs the cancellation as a warning: %s", line)
		}
	}
	if !logged {
		t.Errorf("worker log lacks an info line 'attempt cancelled' naming %s and who cancelled it:\n%s", victim, out)
	}
}
