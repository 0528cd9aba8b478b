package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/jobs"
)

// tenants is a database with one circuit and the login roles of two submitters and a
// worker.
type tenants struct {
	db              *pgtest.DB
	alice, bob, wrk *pgxpool.Pool
}

func newTenants(t *testing.T) *tenants {
	t.Helper()
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(context.Background(), `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		VALUES ('c', 1, 0, 1, '\x00', 'd')`); err != nil {
		t.Fatal(err)
	}
	login := func(who, group string) *pgxpool.Pool {
		return pgtest.Login(t, db.Pool, db.URL, db.Name+"_"+who, group) // database names are unique, so are these
	}
	return &tenants{db: db, alice: login("alice", "cuzk_submitter"), bob: login("bob", "cuzk_submitter"),
		wrk: login("worker", "cuzk_worker")}
}

// flood inserts n requests of alice's in one statement.
func (tn *tenants) flood(t *testing.T, n int) {
	t.Helper()
	if _, err := tn.alice.Exec(context.Background(), `
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
		SELECT 'alice-' || g, 'c', jsonb_build_object('X', g::text) FROM generate_series(1, $1) g`, n); err != nil {
		t.Fatalf("alice's %d requests: %v", n, err)
	}
}

func (tn *tenants) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := tn.db.Pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// claim takes up to n jobs as a worker does: River's own fetch (oldest first by
// priority, scheduled_at, id), then BeginAttempt as cuzk_worker. It returns the
// claimed requests in order.
func (tn *tenants) claim(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	res, err := riverpgxv5.New(tn.wrk).GetExecutor().JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{
		ClientID: "test", MaxAttemptedBy: 10, MaxToLock: n, Queue: jobs.Queue})
	if err != nil {
		t.Fatalf("River fetch: %v", err)
	}
	var ids []string
	for _, j := range res.Jobs {
		var args jobs.ProveArgs
		if err := json.Unmarshal(j.EncodedArgs, &args); err != nil {
			t.Fatal(err)
		}
		if _, err := BeginAttempt(ctx, tn.wrk, args.RequestID, j.ID, Origin{Worker: "test/1"}, j.CreatedAt); err != nil {
			t.Fatalf("claim %s: %v", args.RequestID, err)
		}
		ids = append(ids, args.RequestID)
	}
	return ids
}

// A submitter's backlog does not starve another's request at the same priority: after
// alice's 10,000 in one statement, bob's one request is claimed within the first
// admitted_per_submitter (64) + one fetch of alice's, not after all of them. River's
// table holds only the admitted jobs meanwhile.
func TestFloodingSubmitterDoesNotStarveAnother(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	tn.flood(t, 10_000)
	if _, err := Submit(ctx, tn.bob, &Submission{RequestID: "bob-1", Circuit: "c", Inputs: []byte(`{"X": "1"}`)}); err != nil {
		t.Fatal(err)
	}
	if n := tn.count(t, `SELECT count(*) FROM river_job`); n != 65 {
		t.Errorf("%d River jobs after 10,001 requests, want 64 of alice's and bob's one", n)
	}
	const fetch = 8
	if i := tn.claimUntil(t, "bob-1", fetch, 2000, nil); i > 64+fetch {
		t.Errorf("bob's request claimed after %d of alice's, want at most %d", i, 64+fetch)
	}
}

// floodPartitioned inserts n requests of alice's of parts partitions each in one
// statement.
func (tn *tenants) floodPartitioned(t *testing.T, n, parts int) {
	t.Helper()
	if _, err := tn.alice.Exec(context.Background(), `
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
		SELECT 'alice-' || g, 'c', (SELECT jsonb_agg(jsonb_build_object('X', p::text)) FROM generate_series(1, $2) p)
		  FROM generate_series(1, $1) g`, n, parts); err != nil {
		t.Fatalf("alice's %d requests of %d partitions: %v", n, parts, err)
	}
}

// The share counts partitions: with admitted_per_submitter 20 and alice's backlog of
// 4-partition requests, River holds 5 of hers available at any time, and bob's single
// request waits behind at most those 20 partitions (+ one fetch), not 20 requests.
func TestFairShareCountsPartitions(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	if _, err := tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '20' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	tn.floodPartitioned(t, 100, 4)
	availableParts := `SELECT coalesce(sum(r.partitions), 0) FROM cuzk.proof_requests r JOIN river_job j ON j.id = r.job_id
	                    WHERE r.submitted_by = $1 AND j.state = 'available'`
	var aliceRole string
	if err := tn.db.Pool.QueryRow(ctx, `SELECT submitted_by FROM cuzk.proof_requests WHERE request_id = 'alice-1'`).Scan(&aliceRole); err != nil {
		t.Fatal(err)
	}
	if n := tn.count(t, `SELECT count(*) FROM river_job`); n != 5 {
		t.Fatalf("%d River jobs after 100 requests of 4 partitions, want 5 (20 partitions)", n)
	}
	if _, err := Submit(ctx, tn.bob, &Submission{RequestID: "bob-1", Circuit: "c", Inputs: []byte(`{"X": "1"}`)}); err != nil {
		t.Fatal(err)
	}
	const fetch = 2
	i := tn.claimUntil(t, "bob-1", fetch, 100, func(claimed int) {
		if n := tn.count(t, availableParts, aliceRole); n > 20 {
			t.Fatalf("alice has %d partitions available after %d claims, want at most 20", n, claimed)
		}
	})
	if i > 5+fetch {
		t.Errorf("bob's request claimed after %d of alice's 4-partition requests, want at most %d", i, 5+fetch)
	}
}

// A request with more partitions than the whole share is admitted alone when none of
// its submitter's is available at its priority, and a smaller one already available
// keeps it waiting until that one is claimed.
func TestRequestLargerThanTheShareIsAdmittedAlone(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	if _, err := tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '3' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	if _, err := Submit(ctx, tn.alice, &Submission{RequestID: "alice-small", Circuit: "c", Inputs: []byte(`{"X": "1"}`)}); err != nil {
		t.Fatal(err)
	}
	big := []byte(`[{"X": "1"}, {"X": "2"}, {"X": "3"}, {"X": "4"}, {"X": "5"}]`)
	for _, id := range []string{"alice-big-1", "alice-big-2"} {
		if _, err := Submit(ctx, tn.alice, &Submission{RequestID: id, Circuit: "c", Inputs: big}); err != nil {
			t.Fatal(err)
		}
	}
	admitted := func() []string {
		t.Helper()
		rows, err := tn.db.Pool.Query(ctx, `SELECT request_id FROM cuzk.proof_requests r JOIN river_job j ON j.id = r.job_id
		                                     WHERE j.state = 'available' ORDER BY r.id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	if got := admitted(); !slices.Equal(got, []string{"alice-small"}) {
		t.Fatalf("available %v, want only alice-small (a 5-partition request does not fit the 2 partitions left)", got)
	}
	for _, want := range []string{"alice-small", "alice-big-1", "alice-big-2"} {
		got := tn.claim(t, 4)
		if !slices.Equal(got, []string{want}) {
			t.Fatalf("claimed %v, want [%s]", got, want)
		}
	}
	if got := admitted(); len(got) != 0 {
		t.Errorf("available %v after every request was claimed", got)
	}
}

// A claim that frees fewer partitions than the next waiting request has still admits
// it once the share, counted, has room: with a share of 6 and 1 + 1 + 4 available, a
// 2-partition request is admitted at the second claim, not after the 4-partition one.
func TestClaimAdmitsWhatTheCountedShareFits(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	if _, err := tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '6' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ id, inputs string }{
		{"alice-1", `{"X": "1"}`}, {"alice-2", `{"X": "2"}`},
		{"alice-4", `[{"X": "1"}, {"X": "2"}, {"X": "3"}, {"X": "4"}]`},
		{"alice-two", `[{"X": "1"}, {"X": "2"}]`},
	} {
		if _, err := Submit(ctx, tn.alice, &Submission{RequestID: r.id, Circuit: "c", Inputs: []byte(r.inputs)}); err != nil {
			t.Fatal(err)
		}
	}
	hasJob := `SELECT count(*) FROM cuzk.proof_requests WHERE request_id = 'alice-two' AND job_id IS NOT NULL`
	if n := tn.count(t, hasJob); n != 0 {
		t.Fatal("alice-two admitted beside 6 available partitions")
	}
	if got := tn.claim(t, 1); !slices.Equal(got, []string{"alice-1"}) {
		t.Fatalf("claimed %v, want alice-1", got)
	}
	if n := tn.count(t, hasJob); n != 0 {
		t.Fatal("alice-two admitted beside 5 available partitions")
	}
	if got := tn.claim(t, 1); !slices.Equal(got, []string{"alice-2"}) {
		t.Fatalf("claimed %v, want alice-2", got)
	}
	if n := tn.count(t, hasJob); n != 1 {
		t.Fatal("alice-two not admitted with 4 of 6 partitions available")
	}
}

// claimUntil claims fetch jobs at a time, calling after (if set) after each fetch,
// until want is claimed, and returns how many were claimed before it; those must be
// alice's, oldest first. It fails after limit claims without want.
func (tn *tenants) claimUntil(t *testing.T, want string, fetch, limit int, after func(claimed int)) int {
	t.Helper()
	var order []string
	for len(order) < limit {
		got := tn.claim(t, fetch)
		if len(got) == 0 {
			t.Fatalf("no job available after %d claims, with %d requests queued", len(order),
				tn.count(t, `SELECT count(*) FROM cuzk.proof_requests WHERE state = 'queued'`))
		}
		order = append(order, got...)
		if after != nil {
			after(len(order))
		}
		if i := indexOf(order, want); i >= 0 {
			for k, id := range order[:i] {
				if id != fmt.Sprintf("alice-%d", k+1) {
					t.Fatalf("claim %d was %s, want alice-%d", k, id, k+1)
				}
			}
			return i
		}
	}
	t.Fatalf("%s not claimed after %d of alice's", want, len(order))
	return -1
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// 100,000 requests in one statement are all stored, 64 of them admitted to River, and
// each claim admits the next.
func TestHundredThousandInOneStatement(t *testing.T) {
	tn := newTenants(t)
	tn.flood(t, 100_000)
	if n := tn.count(t, `SELECT count(*) FROM cuzk.proof_requests WHERE state = 'queued'`); n != 100_000 {
		t.Fatalf("%d queued, want 100000", n)
	}
	if n := tn.count(t, `SELECT count(*) FROM river_job WHERE state = 'available'`); n != 64 {
		t.Errorf("%d available River jobs, want 64", n)
	}
	if got := tn.claim(t, 10); len(got) != 10 || got[9] != "alice-10" {
		t.Fatalf("claimed %v", got)
	}
	if n := tn.count(t, `SELECT count(*) FROM river_job WHERE state = 'available'`); n != 64 {
		t.Errorf("%d available River jobs after 10 claims, want 64 again", n)
	}
	if n := tn.count(t, `SELECT max(id) - min(id) + 1 FROM cuzk.proof_requests WHERE job_id IS NOT NULL`); n != 74 {
		t.Errorf("admitted requests span %d ids, want the oldest 74", n)
	}
}

// A queued request whose River job is deleted or cancelled through River (as River UI
// does) is repaired by the leader's upkeep: queued again with a new job, or cancelled,
// with last_error saying why. Before the repair, retry_proof refuses it.
func TestRequestWhoseJobVanishedIsRepaired(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	for _, id := range []string{"gone", "cancelled"} {
		if _, err := Submit(ctx, tn.alice, &Submission{RequestID: id, Circuit: "c", Inputs: []byte(`{"X": "1"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	jobOf := func(id string) int64 {
		var j *int64
		if err := tn.db.Pool.QueryRow(ctx, `SELECT job_id FROM cuzk.proof_requests WHERE request_id = $1`, id).Scan(&j); err != nil || j == nil {
			t.Fatalf("job of %s: %v, %v", id, j, err)
		}
		return *j
	}
	gone, cancelled := jobOf("gone"), jobOf("cancelled")
	client, err := river.NewClient(riverpgxv5.New(tn.db.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.JobDelete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := client.JobCancel(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	_, err = Retry(ctx, tn.alice, "gone")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, `request "gone" is queued`) {
		t.Errorf("retry before the repair: %v", err)
	}

	fixed, err := RepairJobs(ctx, tn.wrk)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) != 2 {
		t.Fatalf("repaired %+v, want gone and cancelled", fixed)
	}
	if j := jobOf("gone"); j == gone || tn.count(t, `SELECT count(*) FROM river_job WHERE id = $1 AND state = 'available'`, j) != 1 {
		t.Errorf("gone has job %d (was %d), want a new available one", j, gone)
	}
	for id, want := range map[string][2]string{
		"gone":      {"queued", fmt.Sprintf("River job %d was deleted outside cuzk; queued again", gone)},
		"cancelled": {"cancelled", fmt.Sprintf("River job %d was cancelled outside cuzk", cancelled)},
	} {
		st, le, err := RequestState(ctx, tn.db.Pool, id)
		if err != nil || st != want[0] || le != want[1] {
			t.Errorf("%s: %s %q, %v; want %s %q", id, st, le, err, want[0], want[1])
		}
	}
	if again, err := RepairJobs(ctx, tn.wrk); err != nil || len(again) != 0 {
		t.Errorf("a second repair: %+v, %v; want nothing", again, err)
	}
	if _, err := Retry(ctx, tn.alice, "cancelled"); err != nil {
		t.Errorf("retry of the cancelled one: %v", err)
	}
}

// Failed and cancelled requests keep their inputs for cuzk.settings ended_inputs_kept
// (7 days by default), then the upkeep scrubs them; a scrubbed request cannot be
// retried. Succeeded, queued and recent ones are left alone, and NULL keeps all.
func TestEndedInputsScrubbedAfterRetention(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	if _, err := tn.alice.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES
		 ('old-failed', 'c', '{"X": "1"}'), ('old-cancelled', 'c', '{"X": "2"}'), ('new-failed', 'c', '{"X": "3"}'),
		 ('old-kept', 'c', '{"X": "4"}'), ('queued', 'c', '{"X": "5"}')`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE cuzk.proof_requests SET state = 'failed', finished_at = now() - interval '8 days' WHERE request_id = 'old-failed'`,
		`UPDATE cuzk.proof_requests SET state = 'cancelled', finished_at = now() - interval '8 days' WHERE request_id = 'old-cancelled'`,
		`UPDATE cuzk.proof_requests SET state = 'failed', finished_at = now() - interval '6 days' WHERE request_id = 'new-failed'`,
		`UPDATE cuzk.proof_requests SET state = 'succeeded', finished_at = now() - interval '8 days' WHERE request_id = 'old-kept'`,
	} {
		if _, err := tn.db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	unscrubbed := func() string {
		var s string
		if err := tn.db.Pool.QueryRow(ctx, `SELECT string_agg(request_id, ' ' ORDER BY request_id) FROM cuzk.proof_requests
		                                     WHERE inputs IS NOT NULL AND inputs_scrubbed_at IS NULL`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = NULL WHERE name = 'ended_inputs_kept'`); err != nil {
		t.Fatal(err)
	}
	if n, err := ScrubEndedInputs(ctx, tn.wrk, 100); err != nil || n != 0 {
		t.Errorf("with no retention set: scrubbed %d, %v; want none", n, err)
	}
	if _, err := tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '7 days' WHERE name = 'ended_inputs_kept'`); err != nil {
		t.Fatal(err)
	}
	if n, err := ScrubEndedInputs(ctx, tn.wrk, 100); err != nil || n != 2 {
		t.Errorf("scrubbed %d, %v; want 2", n, err)
	}
	if got := unscrubbed(); got != "new-failed old-kept queued" {
		t.Errorf("requests with inputs: %s, want new-failed old-kept queued", got)
	}
	_, err := Retry(ctx, tn.alice, "old-failed")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55000" || !strings.Contains(pe.Message, `request "old-failed" cannot be retried: its inputs were scrubbed`) {
		t.Errorf("retry of a scrubbed request: %v", err)
	}
	_, err = tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = 'a week' WHERE name = 'ended_inputs_kept'`)
	if !errors.As(err, &pe) || pe.Code != "23514" {
		t.Errorf("an unreadable retention: %v, want a check violation", err)
	}
}

// A job in a retry's backoff holds no place among the available ones: the leader's
// admit_waiting fills the place, oldest first, and a submission behind the backlog
// then admits nothing (River holds the share). Without the upkeep, the submission
// fills it.
func TestAdmitWaitingFillsWhatABackoffFreed(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	if _, err := tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '2' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	tn.flood(t, 5)
	available := `SELECT count(*) FROM river_job WHERE state = 'available'`
	if n := tn.count(t, available); n != 2 {
		t.Fatalf("%d available after 5 requests, want 2", n)
	}
	backoff := func(rid string) {
		t.Helper()
		if _, err := tn.db.Pool.Exec(ctx, `UPDATE river_job SET state = 'retryable', scheduled_at = now() + interval '1 hour'
		                                   WHERE id = (SELECT job_id FROM cuzk.proof_requests WHERE request_id = $1)`, rid); err != nil {
			t.Fatal(err)
		}
	}
	backoff("alice-1")
	if n, err := AdmitWaiting(ctx, tn.wrk); err != nil || n != 1 {
		t.Errorf("admit_waiting admitted %d, %v; want 1", n, err)
	}
	if got := tn.count(t, `SELECT count(*) FROM cuzk.proof_requests WHERE job_id IS NOT NULL AND request_id IN ('alice-1', 'alice-2', 'alice-3')`); got != 3 {
		t.Errorf("%d of alice-1..3 have jobs, want all three (oldest first)", got)
	}
	if _, err := Submit(ctx, tn.alice, &Submission{RequestID: "alice-6", Circuit: "c", Inputs: []byte(`{"X": "6"}`)}); err != nil {
		t.Fatal(err)
	}
	if n := tn.count(t, available); n != 2 {
		t.Errorf("%d available after a submission behind the backlog, want still 2", n)
	}
	if n, err := AdmitWaiting(ctx, tn.wrk); err != nil || n != 0 {
		t.Errorf("admit_waiting again admitted %d, %v; want none", n, err)
	}
	backoff("alice-2")
	if _, err := Submit(ctx, tn.alice, &Submission{RequestID: "alice-7", Circuit: "c", Inputs: []byte(`{"X": "7"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := tn.count(t, `SELECT count(*) FROM cuzk.proof_requests WHERE job_id IS NOT NULL AND request_id = 'alice-4'`); got != 1 {
		t.Errorf("alice-4 has no job after a submission found the place alice-2's backoff freed")
	}
}

// Two submitters inserting in many statements while two claimers take jobs: every
// request is claimed exactly once, none gets a second job, and none is left waiting.
func TestConcurrentSubmitAndClaimLoseNothing(t *testing.T) {
	tn := newTenants(t)
	ctx := context.Background()
	if _, err := tn.db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '8' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	const statements, each = 20, 25
	var inserting sync.WaitGroup
	var inserted atomic.Bool
	errs := make(chan error, 4)
	for _, who := range []struct {
		name string
		pool *pgxpool.Pool
	}{{"a", tn.alice}, {"b", tn.bob}} {
		inserting.Add(1)
		go func() {
			defer inserting.Done()
			for s := range statements {
				if _, err := who.pool.Exec(ctx, `
					INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
					SELECT $1 || '-' || g, 'c', jsonb_build_object('X', g::text) FROM generate_series($2::int, $2::int + $3::int - 1) g`,
					who.name, s*each, each); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	go func() { inserting.Wait(); inserted.Store(true) }()
	// Each claimer stops at its first empty fetch after every insert committed: its
	// own last claim's admission is visible to that fetch, so nothing admitted is left.
	claimed := make(chan []string, 2)
	for range 2 {
		go func() {
			var mine []string
			defer func() { claimed <- mine }()
			for {
				done := inserted.Load()
				res, err := riverpgxv5.New(tn.wrk).GetExecutor().JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{
					ClientID: "test", MaxAttemptedBy: 10, MaxToLock: 4, Queue: jobs.Queue})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Jobs) == 0 {
					if done {
						return
					}
					runtime.Gosched()
					continue
				}
				for _, j := range res.Jobs {
					var args jobs.ProveArgs
					if err := json.Unmarshal(j.EncodedArgs, &args); err != nil {
						errs <- err
						return
					}
					if _, err := BeginAttempt(ctx, tn.wrk, args.RequestID, j.ID, Origin{Worker: "test/1"}, j.CreatedAt); err != nil {
						errs <- err
						return
					}
					mine = append(mine, args.RequestID)
				}
			}
		}()
	}
	seen := map[string]int{}
	for range 2 {
		for _, id := range <-claimed {
			seen[id]++
		}
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if n := tn.count(t, `SELECT count(*) FROM cuzk.proof_requests WHERE state = 'queued'`); n != 0 {
		t.Errorf("%d requests still queued with no job available", n)
	}
	if len(seen) != 2*statements*each {
		t.Errorf("%d requests claimed, want %d", len(seen), 2*statements*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s claimed %d times", id, n)
		}
	}
	if n := tn.count(t, `SELECT count(*) FROM river_job`); n != 2*statements*each {
		t.Errorf("%d River jobs for %d requests", n, 2*statements*each)
	}
}
