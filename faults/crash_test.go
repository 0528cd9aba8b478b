package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// runningAttempt waits until worker name is inside an attempt and returns its request.
func (e *env) runningAttempt(name string, within time.Duration) string {
	e.t.Helper()
	var id string
	e.waitFor(within, "worker "+name+" inside an attempt", func(ctx context.Context) (bool, string, error) {
		err := e.pool.QueryRow(ctx, `SELECT request_id FROM cuzk.proof_attempts WHERE worker = $1 AND outcome = 'running' ORDER BY id LIMIT 1`, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, "no running attempt", nil
		}
		return err == nil, id, err
	})
	return id
}

// holdProofs keeps every proof from being stored until release runs: a transaction on
// its own connection holds cuzk.proofs in SHARE mode, so each attempt stops at its
// proof's INSERT (store.CompleteAttempt's transaction) with its outcome still 'running',
// however fast the machine proves; reading the table goes on. Only for tests whose
// held worker is killed or frozen alone: its open transaction keeps its requests' rows
// locked, so no other worker can store their proofs while it is frozen.
func (e *env) holdProofs() (release func()) {
	e.t.Helper()
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		e.t.Fatalf("hold proofs: %v", err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE cuzk.proofs IN SHARE MODE`); err != nil {
		_ = tx.Rollback(ctx)
		e.t.Fatalf("hold proofs: %v", err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := tx.Commit(ctx); err != nil {
				e.t.Errorf("release proofs: %v", err)
			}
		})
	}
	e.t.Cleanup(release)
	return release
}

// runningCount waits until worker name is inside n attempts at once.
func (e *env) runningCount(name string, n int, within time.Duration) {
	e.t.Helper()
	e.waitFor(within, fmt.Sprintf("worker %s inside %d attempts", name, n), func(ctx context.Context) (bool, string, error) {
		var got int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM cuzk.proof_attempts WHERE worker = $1 AND outcome = 'running'`, name).Scan(&got)
		return got == n, fmt.Sprintf("%d running", got), err
	})
}

// A worker killed with SIGKILL in the middle of its attempts: River's rescuer (on the
// worker that takes over as leader) retries the jobs after --rescue-after, and each
// request ends with one proof and one succeeded attempt; the dead attempts say
// 'interrupted'. A request that had no attempt left ends 'failed', not 'running'
// forever.
func TestKill9MidProofIsRescued(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.submit("kill", big, 2, 5)
	last := e.submit("kill-last", big, 1, 1)
	// kill-a claims all three at once (it holds up to 3). Its proofs cannot be stored
	// (holdProofs) until it is frozen inside all three, so that the kill lands
	// mid-attempt however fast the machine is.
	release := e.holdProofs()
	a := e.start("kill-a")
	e.runningCount("kill-a", 3, time.Minute)
	a.signal(t, syscall.SIGSTOP)
	release()
	// kill-b rescues as soon as it leads, if the jobs are older than its --rescue-after
	// (also its limit on one attempt) by then. Frozen longer than that, kill-a's jobs
	// are, and its leader's lease (15 s) has lapsed, so kill-b leads on start.
	time.Sleep(16 * time.Second)
	a.kill9(t)
	killed := time.Now()

	b := e.start("kill-b", "--rescue-after", "15s")
	e.waitStates(100*time.Second, "succeeded", ids)
	t.Logf("rescued and proven %s after the kill", time.Since(killed).Round(time.Second))
	e.waitStates(30*time.Second, "failed", last)
	b.alive(t)
	e.exactlyOnce(ids)

	for _, id := range append(append([]string{}, ids...), last...) {
		var outcome, worker string
		if err := e.pool.QueryRow(context.Background(), `SELECT outcome, worker FROM cuzk.proof_attempts WHERE request_id = $1 AND attempt = 1`, id).Scan(&outcome, &worker); err != nil {
			t.Fatal(err)
		}
		if outcome != "interrupted" || worker != "kill-a" {
			t.Errorf("%s attempt 1: outcome %s by %s, want interrupted by kill-a", id, outcome, worker)
		}
	}
	for _, id := range ids {
		if w := scalar[string](t, e.pool, `SELECT worker FROM cuzk.proof_attempts WHERE request_id = $1 AND outcome = 'succeeded'`, id); w != "kill-b" {
			t.Errorf("%s proven by %s, want the surviving worker kill-b", id, w)
		}
		// The killed attempt counted: River cannot tell a crash from a crash loop. So
		// did every attempt of kill-b's: its --rescue-after (15 s) is also its limit on
		// one attempt, which a loaded machine can overrun loading the key; such an
		// attempt ends 'interrupted' by its time limit and is retried. How many there
		// are depends on the machine's speed; that every one is counted does not.
		n := scalar[int](t, e.pool, `SELECT attempts FROM cuzk.proof_requests WHERE request_id = $1`, id)
		rows := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = $1`, id)
		if n < 2 || n != rows {
			t.Errorf("%s attempts = %d with %d attempt rows, want one for each row, at least 2 (the killed one and the rescue)", id, n, rows)
		}
		if odd := scalar[int](t, e.pool, `
			SELECT count(*) FROM cuzk.proof_attempts
			 WHERE request_id = $1 AND attempt > 1 AND outcome <> 'succeeded'
			   AND NOT (worker = 'kill-b' AND outcome = 'interrupted' AND error LIKE 'attempt ran past its time limit%')`, id); odd != 0 {
			t.Errorf("%s: %d attempts after the kill neither succeeded nor ran past kill-b's time limit", id, odd)
		}
	}
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = $1`, last[0]); n != 1 {
		t.Errorf("%s: %d attempts, want only the killed one (max_attempts 1)", last[0], n)
	}
}

// A worker paused mid-attempt (SIGSTOP) long enough for its job to be rescued and
// proven elsewhere, then resumed: it finishes its proof late and must not write a
// second proof row nor a second succeeded attempt; it records its attempt as
// 'interrupted' and keeps running. The schema backs this with the proofs primary key
// and a partial unique index on succeeded attempts.
func TestLateDuplicateCompletionWritesNoSecondRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.submit("late", big, 1, 5)
	// The paused worker's own time limit must not end its attempt: it is to come back
	// and complete it. The rescuer runs on the next leader, late-b, with its short limit.
	a := e.start("late-a", "--rescue-after", "5m")
	id := e.runningAttempt("late-a", time.Minute)
	a.signal(t, syscall.SIGSTOP)
	time.Sleep(16 * time.Second) // as in TestKill9MidProofIsRescued: late-b leads and rescues on start
	b := e.start("late-b", "--rescue-after", "15s")
	e.waitStates(100*time.Second, "succeeded", ids)

	a.signal(t, syscall.SIGCONT)
	e.waitFor(time.Minute, "paused worker's attempt finished", func(ctx context.Context) (bool, string, error) {
		var outcome string
		err := e.pool.QueryRow(ctx, `SELECT outcome FROM cuzk.proof_attempts WHERE request_id = $1 AND worker = 'late-a' AND finished_at IS NOT NULL AND error IS DISTINCT FROM 'worker stopped during the attempt (rescued)'`, id).Scan(&outcome)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, "attempt of late-a not finished by late-a", nil
		}
		return err == nil, outcome, err
	})
	a.alive(t)
	b.alive(t)
	e.exactlyOnce(ids)
	var outcome, msg string
	if err := e.pool.QueryRow(context.Background(), `SELECT outcome, coalesce(error, '') FROM cuzk.proof_attempts WHERE request_id = $1 AND worker = 'late-a'`, id).Scan(&outcome, &msg); err != nil {
		t.Fatal(err)
	}
	if outcome != "interrupted" {
		t.Errorf("late attempt: outcome %s (%s), want interrupted", outcome, msg)
	}
	t.Logf("late attempt: %s: %s", outcome, msg)

	// Underneath, the database refuses a second row however it is written.
	ctx := context.Background()
	_, err := e.pool.Exec(ctx, `INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend)
	                            SELECT request_id, circuit, proof, public_witness, attempt + 1, 'other', backend FROM cuzk.proofs WHERE request_id = $1`, id)
	wantUniqueViolation(t, "second proofs row", err)
	_, err = e.pool.Exec(ctx, `UPDATE cuzk.proof_attempts SET outcome = 'succeeded' WHERE request_id = $1 AND outcome <> 'succeeded'`, id)
	wantUniqueViolation(t, "second succeeded attempt", err)
}

func wantUniqueViolation(t *testing.T, what string, err error) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Errorf("%s: want a unique violation, got %v", what, err)
	}
}

// Two workers on one database share a queue of requests: both prove some, none is
// proven twice.
func TestTwoWorkersShareTheLoad(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.submit("share", small, 16, 5)
	a := e.start("share-a")
	b := e.start("share-b")
	e.waitStates(90*time.Second, "succeeded", ids)
	a.alive(t)
	b.alive(t)
	e.exactlyOnce(ids)
	rows, err := e.pool.Query(context.Background(), `SELECT worker, count(*) FROM cuzk.proof_attempts WHERE outcome = 'succeeded' GROUP BY worker ORDER BY worker`)
	if err != nil {
		t.Fatal(err)
	}
	type wc struct {
		Worker string
		N      int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[wc])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("succeeded attempts by worker: %v, want both share-a and share-b", got)
	}
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = ANY($1)`, ids); n != len(ids) {
		t.Errorf("%d attempts for %d requests, want one each", n, len(ids))
	}
	t.Logf("succeeded attempts by worker: %v", got)
}
