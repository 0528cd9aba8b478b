package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// claimed registers circuit c, submits request r and begins its first attempt.
func claimed(t *testing.T, db DB, r string) *Request {
	t.Helper()
	if _, _, ok, _ := CurrentKey(context.Background(), db, "c"); !ok {
		mustRegister(t, db, testCircuit("c", 1))
	}
	mustSubmit(t, db, &Submission{RequestID: r, Circuit: "c", Inputs: []byte(`{"x": "1"}`)})
	req, err := BeginAttempt(context.Background(), db, r, 1, Origin{Worker: "w"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A request's inputs come back as its JSON text and no witness; its attempt rows are
// numbered on, and a claim of a running request interrupts the attempt before it.
func TestBeginAttemptNullsAndNumbering(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	req := claimed(t, db.Pool, "r")
	if req.Attempt != 1 || string(req.Inputs) != `{"x": "1"}` || req.Witness != nil || string(req.Payload()) != `{"x": "1"}` {
		t.Fatalf("claimed request %+v", req)
	}
	again, err := BeginAttempt(ctx, db.Pool, "r", 1, Origin{Worker: "w2"}, time.Now())
	if err != nil || again.Attempt != 2 {
		t.Fatalf("second claim: %+v, %v; want attempt 2", again, err)
	}
	var outcome string
	var errText *string
	if err := db.Pool.QueryRow(ctx, "SELECT outcome, error FROM cuzk.proof_attempts WHERE request_id = 'r' AND attempt = 1").Scan(&outcome, &errText); err != nil ||
		outcome != "interrupted" || errText == nil {
		t.Fatalf("first attempt after a second claim: %q, %v, %v", outcome, errText, err)
	}

	// No attempt row to record: an error, nothing written.
	err = FinishAttempt(ctx, db.Pool, &Attempt{RequestID: "r", Attempt: 7, Outcome: "failed"})
	if err == nil || err.Error() != `record attempt 7 of "r": no attempt row` {
		t.Fatalf("FinishAttempt of no attempt row: %v", err)
	}
	// An outcome the schema does not know is refused, wrapped with the attempt.
	err = FinishAttempt(ctx, db.Pool, &Attempt{RequestID: "r", Attempt: 2, Outcome: "bogus"})
	wantErr(t, err, `record attempt 2 of "r": `, "23514")
}

// StoreProof writes one proof per request: a second attempt's is ErrDuplicateProof,
// the same attempt's again is no error (a retried commit), a cancelled request's is
// ErrCancelled, and one made with an unknown key or for an unknown request is refused.
func TestStoreProofConflicts(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	claimed(t, db.Pool, "r")
	p := &Proof{RequestID: "r", Circuit: "c", Proof: []byte{1}, PublicWitness: []byte{2}, Attempt: 1, Worker: "w", Backend: "cpu",
		VKDigest: VKDigest([]byte{1})}
	if err := StoreProof(ctx, db.Pool, p, true); err != nil {
		t.Fatal(err)
	}
	if err := StoreProof(ctx, db.Pool, p, true); err != nil {
		t.Fatalf("the same attempt's proof again: %v", err)
	}
	other := *p
	other.Attempt, other.Worker = 2, "w2"
	if err := StoreProof(ctx, db.Pool, &other, true); !errors.Is(err, ErrDuplicateProof) {
		t.Fatalf("another attempt's proof: %v, want ErrDuplicateProof", err)
	}
	var state string
	var inputs *string
	if err := db.Pool.QueryRow(ctx, "SELECT state, inputs::text FROM cuzk.proof_requests WHERE request_id = 'r'").Scan(&state, &inputs); err != nil ||
		state != "succeeded" || inputs != nil {
		t.Fatalf("after storing with scrub: state %q, inputs %v, %v; want succeeded, NULL", state, inputs, err)
	}
	if list, err := StoredProofs(ctx, db.Pool, []string{"r", "nope"}, false); err != nil || len(list) != 1 || string(list[0].Proof) != "\x01" || string(list[0].VK) != "\x01" {
		t.Fatalf("StoredProofs: %+v, %v", list, err)
	}
	if list, err := StoredProofs(ctx, db.Pool, nil, false); err != nil || len(list) != 0 {
		t.Fatalf("StoredProofs of no ids: %+v, %v", list, err)
	}

	// Without scrub, the inputs stay and no scrub time is recorded.
	claimed(t, db.Pool, "k")
	pk := *p
	pk.RequestID = "k"
	if err := StoreProof(ctx, db.Pool, &pk, false); err != nil {
		t.Fatal(err)
	}
	var scrubbed *time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT state, inputs::text, inputs_scrubbed_at FROM cuzk.proof_requests WHERE request_id = 'k'").
		Scan(&state, &inputs, &scrubbed); err != nil || state != "succeeded" || inputs == nil || scrubbed != nil {
		t.Fatalf("after storing without scrub: state %q, inputs %v, scrubbed at %v, %v; want succeeded, kept, NULL", state, inputs, scrubbed, err)
	}

	claimed(t, db.Pool, "x")
	if _, _, err := Cancel(ctx, db.Pool, "x"); err != nil {
		t.Fatal(err)
	}
	px := *p
	px.RequestID = "x"
	if err := StoreProof(ctx, db.Pool, &px, false); !errors.Is(err, ErrCancelled) {
		t.Fatalf("proof of a cancelled request: %v, want ErrCancelled", err)
	}

	claimed(t, db.Pool, "y")
	py := *p
	py.RequestID, py.VKDigest = "y", VKDigest([]byte{9})
	if err := StoreProof(ctx, db.Pool, &py, false); err == nil || errors.Is(err, ErrDuplicateProof) {
		t.Fatalf("proof made with a key never registered: %v", err)
	}
	pn := *p
	pn.RequestID = "nope"
	if err := StoreProof(ctx, db.Pool, &pn, false); !errors.Is(err, pgx.ErrNoRows) || err.Error() != `lock request "nope": no rows in result set` {
		t.Fatalf("proof of an unknown request: %v", err)
	}
	if n := count(t, db.Pool, "SELECT count(*) FROM cuzk.proofs"); n != 2 {
		t.Fatalf("%d proofs stored, want 2", n)
	}
}

// SetRequestOutcome and HandBack change only a running request whose attempt is the
// latest: a superseded attempt or an ended request keeps its state. The error text is
// capped (MaxErrorBytes).
func TestRequestOutcomeOnlyForTheLatestAttempt(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	claimed(t, db.Pool, "r")
	if _, err := BeginAttempt(ctx, db.Pool, "r", 1, Origin{Worker: "w2"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := SetRequestOutcome(ctx, db.Pool, "r", 1, "late", true); err != nil {
		t.Fatal(err)
	}
	if err := HandBack(ctx, db.Pool, "r", 1, "late"); err != nil {
		t.Fatal(err)
	}
	if state, last, err := RequestState(ctx, db.Pool, "r"); err != nil || state != "running" || last != "" {
		t.Fatalf("after a superseded attempt's outcome: %q, %q, %v; want running", state, last, err)
	}
	if err := SetRequestOutcome(ctx, db.Pool, "r", 2, strings.Repeat("e", 3*MaxErrorBytes), true); err != nil {
		t.Fatal(err)
	}
	if state, last, err := RequestState(ctx, db.Pool, "r"); err != nil || state != "failed" || len(last) > MaxErrorBytes {
		t.Fatalf("after the latest attempt failed for good: %q, %d bytes of error, %v", state, len(last), err)
	}
	if err := HandBack(ctx, db.Pool, "r", 2, "shutdown"); err != nil {
		t.Fatal(err)
	}
	if state, _, _ := RequestState(ctx, db.Pool, "r"); state != "failed" {
		t.Fatalf("a failed request handed back: %q", state)
	}
	if ids, err := FailedSince(ctx, db.Pool, time.Hour); err != nil || len(ids) != 1 || ids[0] != "r" {
		t.Fatalf("FailedSince: %v, %v", ids, err)
	}
	if err := DiscardJob(ctx, db.Pool, 1<<40, 1, time.Now(), "x"); err != nil {
		t.Fatalf("DiscardJob of no job: %v", err)
	}
}

// A request row that another transaction keeps locked (its submitter's cancel left
// open) costs a worker whose session sets lock_timeout that long: the claim fails as
// Locked, and succeeds once the row is let go.
func TestBeginAttemptOnALockedRowIsLocked(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	mustRegister(t, db.Pool, testCircuit("c", 1))
	mustSubmit(t, db.Pool, &Submission{RequestID: "r", Circuit: "c", Inputs: []byte(`{"x": "1"}`)})
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200ms"
	worker, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()

	hold, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(context.Background())
	if _, err := hold.Exec(ctx, `SELECT 1 FROM cuzk.proof_requests WHERE request_id = 'r' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, time.Minute) // a regression fails, not hangs
	defer cancel()
	_, err = BeginAttempt(c, worker, "r", 1, Origin{Worker: "w"}, time.Now())
	if !Locked(err) || Unavailable(err) {
		t.Fatalf("claim of a locked request: %v; want a lock timeout (Locked, not Unavailable)", err)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if req, err := BeginAttempt(ctx, worker, "r", 1, Origin{Worker: "w"}, time.Now()); err != nil || req.Attempt != 1 {
		t.Fatalf("claim once the row is free: %+v, %v; want attempt 1 (the failed claim wrote nothing)", req, err)
	}
}
