package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// running makes request r's River job running at attempt 1 and begins its attempt.
func running(t *testing.T, db DB, r string) (*Request, *rivertype.JobRow) {
	t.Helper()
	req := claimed(t, db, r)
	job := &rivertype.JobRow{ID: jobOf(t, db, r), Attempt: 1, State: rivertype.JobStateRunning}
	exec(t, db, "UPDATE public.river_job SET state = 'running', attempt = 1, attempted_at = now() WHERE id = $1", job.ID)
	return req, job
}

func attemptOutcome(t *testing.T, db DB, r string, attempt int) string {
	t.Helper()
	var outcome string
	if err := db.QueryRow(context.Background(), "SELECT outcome FROM cuzk.proof_attempts WHERE request_id = $1 AND attempt = $2",
		r, attempt).Scan(&outcome); err != nil {
		t.Fatal(err)
	}
	return outcome
}

func jobState(t *testing.T, db DB, id int64) string {
	t.Helper()
	var state string
	if err := db.QueryRow(context.Background(), "SELECT state FROM public.river_job WHERE id = $1", id).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return state
}

// FailAttempt writes the attempt and moves the request in one transaction: with no
// attempt row nothing changes; a hand-back gives the attempt back; a final failure
// discards the job.
func TestFailAttemptEdgeCases(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	_, job := running(t, p, "r")
	err := FailAttempt(ctx, p, &Attempt{RequestID: "r", Attempt: 9, Outcome: "failed"}, Failure{Err: "x", Final: true, Job: job})
	if err == nil || !strings.Contains(err.Error(), "no attempt row") {
		t.Fatalf("FailAttempt of no attempt row: %v", err)
	}
	if state, _, _ := RequestState(ctx, p, "r"); state != "running" || jobState(t, p, job.ID) != "running" {
		t.Fatalf("a refused FailAttempt changed the request (%s) or its job", state)
	}

	if err := FailAttempt(ctx, p, &Attempt{RequestID: "r", Attempt: 1, Outcome: "interrupted"}, Failure{Err: "shutdown", HandBack: true}); err != nil {
		t.Fatal(err)
	}
	if o := attemptOutcome(t, p, "r", 1); o != "interrupted" {
		t.Fatalf("handed-back attempt's outcome %q", o)
	}
	if n := count(t, p, "SELECT attempts FROM cuzk.proof_requests WHERE request_id = 'r'"); n != 0 {
		t.Fatalf("a handed-back attempt still counts: attempts = %d", n)
	}
	if state, last, _ := RequestState(ctx, p, "r"); state != "queued" || last != "shutdown" {
		t.Fatalf("after a hand-back: %q, %q; want queued", state, last)
	}

	req, err := BeginAttempt(ctx, p, "r", job.ID, Origin{Worker: "w"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := FailAttempt(ctx, p, &Attempt{RequestID: "r", Attempt: req.Attempt, Outcome: "failed"},
		Failure{Err: "bad input", Final: true, Job: job, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if state, last, _ := RequestState(ctx, p, "r"); state != "failed" || last != "bad input" || jobState(t, p, job.ID) != "discarded" {
		t.Fatalf("after a final failure: request %q (%q), job %s; want failed, discarded", state, last, jobState(t, p, job.ID))
	}
}
