package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgtest"
)

func mustSubmit(t *testing.T, db DB, s *Submission) int64 {
	t.Helper()
	id, err := Submit(context.Background(), db, s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func count(t *testing.T, db DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRequestQueriesWithNoRows(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	_, _, err := RequestState(ctx, db.Pool, "nope")
	if !errors.Is(err, pgx.ErrNoRows) || err.Error() != `read state of "nope": no rows in result set` {
		t.Errorf("RequestState of an unknown request: %v", err)
	}
	if list, err := Statuses(ctx, db.Pool, StatusFilter{RequestIDs: []string{"nope"}, Limit: 10}); err != nil || len(list) != 0 {
		t.Errorf("Statuses: %v, %v; want none", list, err)
	}
	if ids, err := FailedSince(ctx, db.Pool, time.Hour); err != nil || len(ids) != 0 {
		t.Errorf("FailedSince: %v, %v", ids, err)
	}
	if names, err := QueuedCircuits(ctx, db.Pool); err != nil || len(names) != 0 {
		t.Errorf("QueuedCircuits: %v, %v", names, err)
	}
	if n, err := FailOrphaned(ctx, db.Pool); err != nil || n != 0 {
		t.Errorf("FailOrphaned: %d, %v", n, err)
	}
	if f, failed, err := RequestCounts(ctx, db.Pool); err != nil || f != 0 || failed != 0 {
		t.Errorf("RequestCounts: %d, %d, %v", f, failed, err)
	}
	if list, err := StoredProofs(ctx, db.Pool, nil, true); err != nil || len(list) != 0 {
		t.Errorf("StoredProofs(all): %v, %v", list, err)
	}
	// An unknown request is an error from the SQL function, wrapped with its name.
	_, err = Retry(ctx, db.Pool, "nope")
	wantErr(t, err, "cuzk.retry_proof: ", "P0002")
	_, _, err = Cancel(ctx, db.Pool, "nope")
	wantErr(t, err, "cuzk.cancel_proof: ", "P0002")
	_, err = BeginAttempt(ctx, db.Pool, "nope", 1, Origin{Worker: "w"}, time.Now())
	if !errors.Is(err, ErrUnknownRequest) || err.Error() != `unknown request "nope"` {
		t.Errorf("BeginAttempt of an unknown request: %v", err)
	}
}

// A second submission of a request id returns the first one's id and enqueues
// nothing; one that differs in circuit or inputs is refused.
func TestSubmitConflicts(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	mustRegister(t, db.Pool, testCircuit("c", 1))
	mustRegister(t, db.Pool, testCircuit("d", 1))
	s := &Submission{RequestID: "r", Circuit: "c", Inputs: []byte(`{"x": "1"}`)}
	id := mustSubmit(t, db.Pool, s)
	if again := mustSubmit(t, db.Pool, &Submission{RequestID: "r", Circuit: "c", Inputs: []byte(`{"x":"1"}`)}); again != id {
		t.Fatalf("second submission: id %d, want the first's %d", again, id)
	}
	if n := count(t, db.Pool, "SELECT count(*) FROM public.river_job"); n != 1 {
		t.Fatalf("%d River jobs after submitting one request twice, want 1", n)
	}
	_, err := Submit(ctx, db.Pool, &Submission{RequestID: "r", Circuit: "d", Inputs: s.Inputs})
	wantErr(t, err, `submit "r": `, "23505")
	_, err = Submit(ctx, db.Pool, &Submission{RequestID: "r", Circuit: "c", Inputs: []byte(`{"x": "2"}`)})
	wantErr(t, err, `submit "r": `, "23505")
	if n := count(t, db.Pool, "SELECT count(*) FROM cuzk.proof_requests"); n != 1 {
		t.Fatalf("%d requests after refused submissions, want 1", n)
	}
}

// What the insert check refuses comes back wrapped with the request id: an unknown
// circuit, neither inputs nor witness (both NULL), and inputs over the circuit's limit.
func TestSubmitRefused(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	mustRegister(t, db.Pool, testCircuit("c", 1))
	for _, tc := range []struct {
		name string
		s    Submission
		code string
	}{
		{"unknown circuit", Submission{RequestID: "a", Circuit: "nope", Inputs: []byte(`{}`)}, "23503"},
		{"no payload", Submission{RequestID: "b", Circuit: "c"}, "23514"},
		{"both payloads", Submission{RequestID: "c", Circuit: "c", Inputs: []byte(`{}`), Witness: []byte{0}}, "23514"},
		{"inputs not an object", Submission{RequestID: "d", Circuit: "c", Inputs: []byte(`[]`)}, "23514"},
		{"over the limit", Submission{RequestID: "e", Circuit: "c", Inputs: []byte(`{"x": "` + strings.Repeat("1", 1000) + `"}`)}, "54000"},
		{"empty request id", Submission{RequestID: "", Circuit: "c", Inputs: []byte(`{}`)}, "23514"},
		{"priority out of range", Submission{RequestID: "f", Circuit: "c", Inputs: []byte(`{}`), Priority: 9}, "23514"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Submit(ctx, db.Pool, &tc.s)
			wantErr(t, err, `submit "`+tc.s.RequestID+`": `, tc.code)
		})
	}
	if n := count(t, db.Pool, "SELECT count(*) FROM cuzk.proof_requests"); n != 0 {
		t.Fatalf("%d requests stored by refused submissions", n)
	}
}

// Statuses filters by ids, state and limit; a request not finished has a NULL
// finished_at and last_error, read as nil and "".
func TestStatusesAndStates(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	mustRegister(t, db.Pool, testCircuit("c", 1))
	mustRegister(t, db.Pool, testCircuit("d", 1))
	mustSubmit(t, db.Pool, &Submission{RequestID: "r1", Circuit: "d", Inputs: []byte(`{}`), Priority: 3})
	mustSubmit(t, db.Pool, &Submission{RequestID: "r2", Circuit: "c", Inputs: []byte(`{}`), Priority: 1})
	mustSubmit(t, db.Pool, &Submission{RequestID: "r3", Circuit: "d", Inputs: []byte(`{}`), Priority: 2})

	state, lastErr, err := RequestState(ctx, db.Pool, "r1")
	if err != nil || state != "queued" || lastErr != "" {
		t.Fatalf("RequestState: %q, %q, %v", state, lastErr, err)
	}
	if names, err := QueuedCircuits(ctx, db.Pool); err != nil || len(names) != 2 || names[0] != "c" || names[1] != "d" {
		t.Fatalf("QueuedCircuits %v, %v; want c (priority 1) before d", names, err)
	}
	list, err := Statuses(ctx, db.Pool, StatusFilter{Limit: 10})
	if err != nil || len(list) != 3 || list[0].RequestID != "r3" {
		t.Fatalf("Statuses: %+v, %v; want 3, most recent first", list, err)
	}
	if s := list[0]; s.FinishedAt != nil || s.LastError != "" || s.Attempts != 0 || s.State != "queued" || s.Circuit != "d" {
		t.Fatalf("queued request's status %+v", s)
	}
	if list, err := Statuses(ctx, db.Pool, StatusFilter{RequestIDs: []string{"r1", "nope"}, Limit: 10}); err != nil || len(list) != 1 || list[0].RequestID != "r1" {
		t.Fatalf("Statuses of r1 and an unknown id: %+v, %v", list, err)
	}
	if list, err := Statuses(ctx, db.Pool, StatusFilter{Limit: 1}); err != nil || len(list) != 1 {
		t.Fatalf("Statuses with limit 1: %+v, %v", list, err)
	}

	// Cancel: true once, with the state before; then false with the state it ended in.
	if ok, st, err := Cancel(ctx, db.Pool, "r1"); err != nil || !ok || st != "queued" {
		t.Fatalf("first cancel: %t, %q, %v", ok, st, err)
	}
	if ok, st, err := Cancel(ctx, db.Pool, "r1"); err != nil || ok || st != "cancelled" {
		t.Fatalf("second cancel: %t, %q, %v", ok, st, err)
	}
	if list, err := Statuses(ctx, db.Pool, StatusFilter{State: "cancelled", Limit: 10}); err != nil || len(list) != 1 || list[0].FinishedAt == nil {
		t.Fatalf("cancelled requests: %+v, %v; want r1 with finished_at", list, err)
	}
	if f, failed, err := RequestCounts(ctx, db.Pool); err != nil || f != 1 || failed != 0 {
		t.Fatalf("RequestCounts: %d finished, %d failed, %v", f, failed, err)
	}
	_, err = BeginAttempt(ctx, db.Pool, "r1", 1, Origin{Worker: "w"}, time.Now())
	var nr *NotRunnableError
	if !errors.As(err, &nr) || nr.State != "cancelled" || err.Error() != `request "r1" is cancelled` {
		t.Fatalf("BeginAttempt of a cancelled request: %v", err)
	}

	// Retry: a queued request cannot be retried; a cancelled one is queued again.
	_, err = Retry(ctx, db.Pool, "r2")
	wantErr(t, err, "cuzk.retry_proof: ", "22023")
	if job, err := Retry(ctx, db.Pool, "r1"); err != nil || job == nil || *job <= 0 {
		t.Fatalf("retry of a cancelled request: job %v, %v; want a new job (the submitter has no other request waiting)", job, err)
	}
	if state, _, err := RequestState(ctx, db.Pool, "r1"); err != nil || state != "queued" {
		t.Fatalf("after retry: %q, %v", state, err)
	}
}

// Submit with no priority or max_attempts gets what cuzk.submit_proof gives a call
// that names neither (the Submit query spells those defaults out); set ones are kept.
func TestSubmitDefaultsAreTheFunctions(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	mustRegister(t, db.Pool, testCircuit("c", 1))
	mustSubmit(t, db.Pool, &Submission{RequestID: "go", Circuit: "c", Inputs: []byte(`{}`)})
	if _, err := db.Pool.Exec(ctx, `SELECT cuzk.submit_proof(request_id => 'sql', circuit => 'c', inputs => '{}')`); err != nil {
		t.Fatal(err)
	}
	mustSubmit(t, db.Pool, &Submission{RequestID: "set", Circuit: "c", Inputs: []byte(`{}`), Priority: 3, MaxAttempts: 7})
	read := func(id string) (priority, maxAttempts int) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, "SELECT priority, max_attempts FROM cuzk.proof_requests WHERE request_id = $1", id).
			Scan(&priority, &maxAttempts); err != nil {
			t.Fatal(err)
		}
		return priority, maxAttempts
	}
	gp, gm := read("go")
	sp, sm := read("sql")
	if gp != sp || gm != sm {
		t.Errorf("Submit's defaults: priority %d, max_attempts %d; cuzk.submit_proof's: %d, %d", gp, gm, sp, sm)
	}
	if p, m := read("set"); p != 3 || m != 7 {
		t.Errorf("Submit with priority 3, max_attempts 7 stored %d, %d", p, m)
	}
}
