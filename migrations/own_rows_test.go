package migrations_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// addAttemptAndProof stores, as the owner, a succeeded attempt and the proof of
// request rid, as a worker would.
func addAttemptAndProof(t *testing.T, db *pgtest.DB, rid, circuit string) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `
		WITH a AS (
			INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, config, build, config_hash,
			                                 finished_at, synth_ms, prove_ms, total_ms)
			VALUES ($1, 1, $2, 'succeeded', 'host-of-' || $1 || '/42', '{"cpu": "secret"}', 'b1', 'cafe0001',
			        now(), 5, 7, 12)
		)
		INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend)
		VALUES ($1, $2, '\x01', '\x02', 1, 'host-of-' || $1 || '/42', 'cpu')`, rid, circuit); err != nil {
		t.Fatalf("attempt and proof of %s: %v", rid, err)
	}
}

func requestIDs(t *testing.T, pool *pgxpool.Pool, q string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return ids
}

// Each per-request table and view shows a submitter its own requests only, and the
// operator, a worker and the owner every request; the timing aggregates stay the
// fleet's for everyone.
func TestSubmitterReadsOnlyItsOwnRows(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	_, alice := login(t, db, "alice", "cuzk_submitter")
	_, bob := login(t, db, "bob", "cuzk_submitter")
	_, op := login(t, db, "op", "cuzk_operator")
	_, wrk := login(t, db, "wrk", "cuzk_worker")
	for _, s := range []struct {
		pool *pgxpool.Pool
		rid  string
	}{{alice, "alice-1"}, {bob, "bob-1"}} {
		if _, err := s.pool.Exec(ctx, `SELECT cuzk.submit_proof($1, 'c', '{"X": "1"}'::jsonb)`, s.rid); err != nil {
			t.Fatal(err)
		}
		addAttemptAndProof(t, db, s.rid, "c")
	}
	if _, err := alice.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('alice-2', 'c', '{"X": "2"}')`); err != nil {
		t.Fatal(err)
	}

	relations := []string{
		"SELECT DISTINCT request_id FROM cuzk.proof_requests ORDER BY 1",
		"SELECT DISTINCT request_id FROM cuzk.proof_status ORDER BY 1",
		"SELECT DISTINCT request_id FROM cuzk.proofs ORDER BY 1",
		"SELECT DISTINCT request_id FROM cuzk.proof_attempts ORDER BY 1",
		"SELECT DISTINCT request_id FROM cuzk.attempt_phases ORDER BY 1",
	}
	all := map[string][]string{
		"proof_requests": {"alice-1", "alice-2", "bob-1"}, "proof_status": {"alice-1", "alice-2", "bob-1"},
		"proofs": {"alice-1", "bob-1"}, "proof_attempts": {"alice-1", "bob-1"}, "attempt_phases": {"alice-1", "bob-1"},
	}
	for _, q := range relations {
		rel := strings.Fields(strings.SplitN(q, "cuzk.", 2)[1])[0]
		var aliceWants []string
		for _, id := range all[rel] {
			if strings.HasPrefix(id, "alice") {
				aliceWants = append(aliceWants, id)
			}
		}
		for _, c := range []struct {
			who  string
			pool *pgxpool.Pool
			want []string
		}{
			{"bob", bob, []string{"bob-1"}},
			{"alice", alice, aliceWants},
			{"the operator", op, all[rel]},
			{"a worker", wrk, all[rel]},
			{"the owner", db.Pool, all[rel]},
		} {
			if got := requestIDs(t, c.pool, q); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s reads %s: %v, want %v", c.who, rel, got, c.want)
			}
		}
	}

	// Asked by name, alice's rows are not there for bob, whatever he joins or filters.
	for _, q := range []string{
		"SELECT request_id FROM cuzk.proof_status WHERE request_id = $1",
		"SELECT request_id FROM cuzk.proof_requests WHERE request_id = $1",
		"SELECT request_id FROM cuzk.proofs WHERE request_id = $1",
		"SELECT worker FROM cuzk.proof_attempts WHERE request_id = $1",
		"SELECT config::text FROM cuzk.proof_attempts WHERE request_id = $1",
		"SELECT worker FROM cuzk.attempt_phases WHERE request_id = $1",
		"SELECT s.request_id FROM cuzk.proof_status s JOIN cuzk.proofs p USING (request_id) WHERE s.request_id = $1",
	} {
		if got := requestIDs(t, bob, q, "alice-1"); len(got) != 0 {
			t.Errorf("bob: %s with alice-1: %v, want no rows", q, got)
		}
	}
	// A function in bob's WHERE sees no row of alice's before the views' filter.
	conn, err := bob.Acquire(ctx) // pg_temp is the connection's
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `
		CREATE FUNCTION pg_temp.peek(r text, w text) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $$
		BEGIN
			IF r LIKE 'alice%' THEN RAISE EXCEPTION 'saw % of %', w, r; END IF;
			RETURN true;
		END $$`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT request_id FROM cuzk.proof_status WHERE pg_temp.peek(request_id, last_error)",
		"SELECT request_id FROM cuzk.attempt_phases WHERE pg_temp.peek(request_id, worker)",
		"SELECT request_id FROM cuzk.proof_attempts WHERE pg_temp.peek(request_id, worker)",
		"SELECT request_id FROM cuzk.proofs WHERE pg_temp.peek(request_id, worker)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Errorf("bob: %s: %v", q, err)
		}
	}

	// Nor in the planner's statistics, which hold a column's most common values.
	if _, err := db.Pool.Exec(ctx, `ANALYZE cuzk.proof_requests, cuzk.proofs, cuzk.proof_attempts`); err != nil {
		t.Fatal(err)
	}
	const stats = `SELECT count(*)::text FROM pg_stats WHERE schemaname = 'cuzk'
	                 AND tablename IN ('proof_requests', 'proofs', 'proof_attempts')`
	if got := scalarText(t, bob, stats); got != "0" {
		t.Errorf("bob reads %s rows of pg_stats on the request tables, want none", got)
	}
	if got := scalarText(t, db.Pool, stats); got == "0" {
		t.Error("the owner reads no pg_stats of the request tables: the check above proves nothing")
	}

	// Timing aggregates and samples are the fleet's: both requests' attempts count.
	for _, q := range []string{
		"SELECT max(n)::text FROM cuzk.timing_history('1 hour', now() - interval '1 day', 'c')",
		"SELECT max(n)::text FROM cuzk.timing_hourly WHERE circuit = 'c'",
		"SELECT count(*)::text FROM cuzk.phase_samples WHERE circuit = 'c' AND phase = 'total'",
	} {
		for who, pool := range map[string]*pgxpool.Pool{"bob": bob, "the operator": op, "the owner": db.Pool} {
			if got := scalarText(t, pool, q); got != "2" {
				t.Errorf("%s: %s = %s, want 2", who, q, got)
			}
		}
	}
	// compare_timings resolves builds and config hashes among every attempt.
	var n int
	if err := bob.QueryRow(ctx, `SELECT count(*) FROM cuzk.compare_timings('build:b1..config:cafe')`).Scan(&n); err != nil || n == 0 {
		t.Errorf("bob compares build b1 with config cafe: %d rows, %v", n, err)
	}
	// No aggregate groups by request.
	if _, err := bob.Exec(ctx, `SELECT request_id FROM cuzk.timing_hourly`); err == nil {
		t.Error("timing_hourly has a request_id column")
	}
}

// planNode is the part of EXPLAIN (ANALYZE, FORMAT JSON) the checks below read.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Loops    float64    `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

// seqScans returns, for each relation scanned sequentially in the plan, how many times.
func (p planNode) seqScans(into map[string]float64) {
	if p.Type == "Seq Scan" {
		into[p.Relation] += p.Loops
	}
	for _, c := range p.Plans {
		c.seqScans(into)
	}
}

func explain(t *testing.T, pool *pgxpool.Pool, q string, args ...any) (map[string]float64, float64) {
	t.Helper()
	var out string
	if err := pool.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+q, args...).Scan(&out); err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
		Ms   float64  `json:"Execution Time"`
	}
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("explain %s: %v\n%s", q, err, out)
	}
	scans := map[string]float64{}
	plans[0].Plan.seqScans(scans)
	return scans, plans[0].Ms
}

// Beside another submitter's 100,000 requests, proofs and attempts, a submitter's
// reads of its own by request_id use the keys, and a read of all of its own scans each
// table at most once, never once per row.
func TestOwnRowsFilterUsesIndexes(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	alice, _ := login(t, db, "alice", "cuzk_submitter")
	bobName, bob := login(t, db, "bob", "cuzk_submitter")
	const n = 100000
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`SET LOCAL session_replication_role = replica`, nil}, // alice's history, written without admission
		{`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, state, submitted_by, finished_at)
		  SELECT 'a-' || g, 'c', '{"X": "1"}', 'succeeded', $1, now() FROM generate_series(1, $2) g`, []any{alice, n}},
		{`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, finished_at, total_ms)
		  SELECT 'a-' || g, 1, 'c', 'succeeded', 'h/1', now(), g FROM generate_series(1, $1) g`, []any{n}},
		{`INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend, key_version)
		  SELECT 'a-' || g, 'c', '\x01', '\x02', 1, 'h/1', 'cpu', (SELECT key_version FROM cuzk.circuits WHERE name = 'c')
		    FROM generate_series(1, $1) g`, []any{n}},
	} {
		if _, err := tx.Exec(ctx, st.q, st.args...); err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Exec(ctx, `SELECT cuzk.submit_proof('b-1', 'c', '{"X": "1"}'::jsonb)`); err != nil {
		t.Fatal(err)
	}
	addAttemptAndProof(t, db, "b-1", "c")
	if _, err := db.Pool.Exec(ctx, `ANALYZE cuzk.proof_requests, cuzk.proof_attempts, cuzk.proofs`); err != nil {
		t.Fatal(err)
	}

	for _, q := range []string{
		"SELECT * FROM cuzk.proof_status WHERE request_id = $1",
		"SELECT request_id, state FROM cuzk.proof_requests WHERE request_id = $1",
		"SELECT * FROM cuzk.proofs WHERE request_id = $1",
		"SELECT * FROM cuzk.proof_attempts WHERE request_id = $1",
		"SELECT * FROM cuzk.attempt_phases WHERE request_id = $1",
	} {
		scans, ms := explain(t, bob, q, "b-1")
		if len(scans) != 0 {
			t.Errorf("bob: %s scans %v sequentially, want only index lookups", q, scans)
		}
		t.Logf("bob, one request: %s: %.2f ms", q, ms)
	}
	// Each read of all of bob's, and for reference the owner's hand-written filter that
	// returns the same rows without row-level security.
	const bobs = "SELECT r.request_id FROM cuzk.proof_requests r WHERE r.submitted_by = $1"
	for _, c := range []struct{ q, ref string }{
		{"SELECT * FROM cuzk.proof_status", "SELECT r.request_id, r.circuit, r.state, r.attempts, r.last_error, r.priority, " +
			"r.created_at, r.updated_at, r.finished_at, r.submitted_by FROM cuzk.proof_requests r WHERE r.submitted_by = $1"},
		{"SELECT * FROM cuzk.proofs", "SELECT * FROM cuzk.proofs WHERE request_id IN (" + bobs + ")"},
		{"SELECT * FROM cuzk.proof_attempts", "SELECT * FROM cuzk.proof_attempts WHERE request_id IN (" + bobs + ")"},
		{"SELECT * FROM cuzk.attempt_phases", "SELECT * FROM cuzk.attempt_phases WHERE request_id IN (" + bobs + ")"},
	} {
		scans, ms := explain(t, bob, c.q)
		for rel, loops := range scans {
			if loops > 1 {
				t.Errorf("bob: %s scans %s %v times, want at most once", c.q, rel, loops)
			}
		}
		_, refMs := explain(t, db.Pool, c.ref, bobName)
		t.Logf("bob, all of his beside %d of alice's: %s: %.2f ms (%.2fx the owner's filter by hand, %.2f ms), sequential scans %v",
			n, c.q, ms, ms/refMs, refMs, scans)
	}
	if got := requestIDs(t, bob, "SELECT request_id FROM cuzk.proof_status"); fmt.Sprint(got) != "[b-1]" {
		t.Errorf("bob's proof_status: %v", got)
	}
}

// The planner's row estimates answer a submitter's EXPLAIN through leakproof operators
// (=, <) from statistics of every row, row-level security or not. With the private
// columns' statistics off, bob's estimates about alice's login, request_ids and error
// texts are the same as about values that exist nowhere.
func TestPlannerEstimatesRevealNoOthersValues(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	aliceName, alice := login(t, db, "alice", "cuzk_submitter")
	_, bob := login(t, db, "bob", "cuzk_submitter")
	if _, err := alice.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
		SELECT 'alice-' || g, 'c', '{"X": "1"}' FROM generate_series(1, 300) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Exec(ctx, `SELECT cuzk.submit_proof('bob-1', 'c', '{"X": "1"}'::jsonb)`); err != nil {
		t.Fatal(err)
	}
	// alice's failures quote her inputs, as a bad value's error does.
	for _, q := range []string{
		`UPDATE cuzk.proof_requests SET state = 'failed', last_error = '"secret' || (id % 10) || '" is not a decimal'
		  WHERE request_id LIKE 'alice-%'`,
		`ANALYZE cuzk.proof_requests`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	estimate := func(where string) string {
		t.Helper()
		var plan []map[string]map[string]any
		if err := bob.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT 1 FROM cuzk.proof_requests WHERE `+where).Scan(&plan); err != nil {
			t.Fatalf("bob: EXPLAIN ... WHERE %s: %v", where, err)
		}
		return fmt.Sprint(plan[0]["Plan"]["Plan Rows"])
	}
	for _, pair := range [][2]string{
		{fmt.Sprintf("submitted_by = '%s'", aliceName), "submitted_by = 'nobody'"},
		{`last_error = '"secret3" is not a decimal'`, `last_error = 'nothing'`},
		{`last_error < '"secret3'`, `last_error < '"secret9'`},
		{`request_id < 'alice-150'`, `request_id < 'alice-999'`},
	} {
		if a, b := estimate(pair[0]), estimate(pair[1]); a != b {
			t.Errorf("bob's estimate for %s is %s rows, for %s %s: alice's values show through", pair[0], a, pair[1], b)
		}
	}
}
