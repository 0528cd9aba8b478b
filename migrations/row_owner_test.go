package migrations_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/migrations"
)

// owners is submitted_by of request rid's proof, attempt and partition rows, as the
// owner reads them, one table after another.
func owners(t *testing.T, q pgxQuerier, rid string) string {
	t.Helper()
	return scalarText(t, q, `
		SELECT concat_ws(' ', (SELECT string_agg(coalesce(submitted_by, 'NULL'), ',') FROM cuzk.proofs WHERE request_id = $1),
		                      (SELECT string_agg(coalesce(submitted_by, 'NULL'), ',') FROM cuzk.proof_attempts WHERE request_id = $1),
		                      (SELECT string_agg(coalesce(submitted_by, 'NULL'), ',') FROM cuzk.partition_proofs WHERE request_id = $1),
		                      (SELECT string_agg(coalesce(submitted_by, 'NULL'), ',') FROM cuzk.partition_attempts WHERE request_id = $1))`, rid)
}

// addRows stores, as the owner, an attempt, a partition's proof and attempt, and the
// proof of request rid.
func addRows(t *testing.T, db *pgtest.DB, rid string) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, finished_at, total_ms)
		 VALUES ($1, 1, 'c', 'succeeded', 'w', now(), 1)`,
		`INSERT INTO cuzk.partition_proofs (request_id, partition, proof, public_witness, key_version, attempt, worker, backend)
		 VALUES ($1, 0, '\x01', '\x02', 1, 1, 'w', 'cpu')`,
		`INSERT INTO cuzk.partition_attempts (request_id, attempt, partition, outcome, started_at) VALUES ($1, 1, 0, 'succeeded', now())`,
		`INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend)
		 VALUES ($1, 'c', '\x01', '\x02', 1, 'w', 'cpu')`,
	} {
		if _, err := db.Pool.Exec(context.Background(), q, rid); err != nil {
			t.Fatalf("rows of %s: %s: %v", rid, q, err)
		}
	}
}

// seenBy is what each per-request table and attempt_phases show q of the requests.
const seenBy = `SELECT concat_ws(' ', (SELECT string_agg(request_id, ',' ORDER BY request_id) FROM cuzk.proofs),
                                     (SELECT string_agg(DISTINCT request_id, ',') FROM cuzk.proof_attempts),
                                     (SELECT string_agg(DISTINCT request_id, ',') FROM cuzk.partition_proofs),
                                     (SELECT string_agg(DISTINCT request_id, ',') FROM cuzk.partition_attempts),
                                     (SELECT string_agg(DISTINCT request_id, ',') FROM cuzk.attempt_phases))`

// The rows of a request carry its submitted_by whoever writes them and whatever they
// write there; a submitter sees its own rows only; a request given another login moves
// its rows with it.
func TestRowsCarryTheirRequestsSubmitter(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	aliceName, alice := login(t, db, "alice", "cuzk_submitter")
	bobName, bob := login(t, db, "bob", "cuzk_submitter")
	_, wrk := login(t, db, "wrk", "cuzk_worker")
	for rid, p := range map[string]*pgxpool.Pool{"a-1": alice, "b-1": bob} {
		if _, err := p.Exec(ctx, `SELECT cuzk.submit_proof($1, 'c', '[{"X": "1"}]'::jsonb)`, rid); err != nil {
			t.Fatal(err)
		}
		addRows(t, db, rid)
	}
	if got, want := owners(t, db.Pool, "a-1"), aliceName+" "+aliceName+" "+aliceName+" "+aliceName; got != want {
		t.Errorf("rows of alice's request carry %q, want %q", got, want)
	}

	// A worker's insert and update naming another login change nothing.
	if _, err := wrk.Exec(ctx, `INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, submitted_by)
	                            VALUES ('a-1', 2, 'c', 'w', $1)`, bobName); err != nil {
		t.Fatal(err)
	}
	if _, err := wrk.Exec(ctx, `UPDATE cuzk.proofs SET submitted_by = $1 WHERE request_id = 'a-1'`, bobName); err != nil {
		t.Fatal(err)
	}
	if _, err := wrk.Exec(ctx, `UPDATE cuzk.partition_attempts SET submitted_by = $1 WHERE request_id = 'a-1'`, bobName); err != nil {
		t.Fatal(err)
	}
	if got := owners(t, db.Pool, "a-1"); got != aliceName+" "+aliceName+","+aliceName+" "+aliceName+" "+aliceName {
		t.Errorf("after a worker named bob on alice's rows, they carry %q", got)
	}
	for name, c := range map[string]struct {
		p    pgxQuerier
		want string
	}{"alice": {alice, "a-1 a-1 a-1 a-1 a-1"}, "bob": {bob, "b-1 b-1 b-1 b-1 b-1"}, "worker": {wrk, "a-1,b-1 a-1,b-1 a-1,b-1 a-1,b-1 a-1,b-1"}} {
		if got := scalarText(t, c.p, seenBy); got != c.want {
			t.Errorf("%s sees %q, want %q", name, got, c.want)
		}
	}

	// The owner gives alice's request to bob: its rows go with it.
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET submitted_by = $1 WHERE request_id = 'a-1'`, bobName); err != nil {
		t.Fatal(err)
	}
	if got := scalarText(t, alice, seenBy); got != "" {
		t.Errorf("alice sees %q of a request no longer hers", got)
	}
	if got := scalarText(t, bob, seenBy); got != "a-1,b-1 a-1,b-1 a-1,b-1 a-1,b-1 a-1,b-1" {
		t.Errorf("bob sees %q after alice's request became his", got)
	}
}

// migrateTo migrates an empty database: River's migrations, then cuzk's up to
// version v.
func migrateTo(ctx context.Context, pool *pgxpool.Pool, v int32) error {
	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA cuzk"); err != nil {
		return err
	}
	m, err := migrate.NewMigrator(ctx, conn.Conn(), "cuzk.schema_version")
	if err != nil {
		return err
	}
	files, err := fs.Sub(migrations.Files(), "cuzk")
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(files); err != nil {
		return err
	}
	return m.MigrateTo(ctx, v)
}

// Migration 018 fills the column in the rows written before it.
func TestRowOwnerBackfilled(t *testing.T) {
	db := pgtest.Empty(t)
	ctx := context.Background()
	if err := migrateTo(ctx, db.Pool, 17); err != nil {
		t.Fatalf("migrate to 017: %v", err)
	}

	addCircuit(t, db, "c")
	aliceName, alice := login(t, db, "alice", "cuzk_submitter")
	_, bob := login(t, db, "bob", "cuzk_submitter")
	if _, err := alice.Exec(ctx, `SELECT cuzk.submit_proof('a-1', 'c', '[{"X": "1"}]'::jsonb)`); err != nil {
		t.Fatal(err)
	}
	addRows(t, db, "a-1")
	if _, err := migrations.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	if got, want := owners(t, db.Pool, "a-1"), aliceName+" "+aliceName+" "+aliceName+" "+aliceName; got != want {
		t.Errorf("after 018, alice's rows carry %q, want %q", got, want)
	}
	if got := scalarText(t, alice, seenBy); got != "a-1 a-1 a-1 a-1 a-1" {
		t.Errorf("alice sees %q of her rows written before 018", got)
	}
	if got := scalarText(t, bob, seenBy); got != "" {
		t.Errorf("bob sees %q of alice's rows", got)
	}
}

// Submitters read bench runs' timings but not the worker, device or configuration
// that ran them; comparisons by bench run and config hash still work for them, and
// describe a config hash with a bench run's config only to the operator.
func TestSubmittersCannotReadBenchRunsWorkerOrConfig(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.bench_runs (bench_id, run, circuit, worker, build, config_hash, config, backend, device,
		                             started_at, finished_at, synth_ms, prove_ms, total_ms)
		SELECT nextval('cuzk.bench_id_seq'), g, 'c', 'gpu7/99', 'v1', 'cafe0001', '{"keys_dir": "/secret"}', 'cuda', 'H100 GPU-1234',
		       now(), now(), g, g, 2 * g
		  FROM generate_series(1, 3) g`); err != nil {
		t.Fatal(err)
	}
	_, sub := login(t, db, "sub", "cuzk_submitter")
	_, op := login(t, db, "op", "cuzk_operator")
	for _, q := range []string{
		`SELECT worker FROM cuzk.bench_runs`,
		`SELECT config FROM cuzk.bench_runs`,
		`SELECT device FROM cuzk.bench_runs`,
		`SELECT * FROM cuzk.bench_runs`,
	} {
		_, err := sub.Exec(ctx, q)
		wantError(t, err, "42501", "permission denied")
	}
	if got := scalarText(t, sub, `SELECT count(*) || ' ' || min(circuit) || ' ' || min(config_hash) || ' ' || sum(total_ms) FROM cuzk.bench_runs`); got != "3 c cafe0001 12" {
		t.Errorf("a submitter reads the bench runs' timings as %q", got)
	}
	if got := scalarText(t, op, `SELECT DISTINCT worker || ' ' || device || ' ' || (config->>'keys_dir') FROM cuzk.bench_runs`); got != "gpu7/99 H100 GPU-1234 /secret" {
		t.Errorf("the operator reads %q", got)
	}
	if got := scalarText(t, sub, `SELECT description FROM cuzk.resolve_selector('config:cafe0001')`); got != "config cafe0001" {
		t.Errorf("a submitter's description of the config hash: %q", got)
	}
	if got := scalarText(t, op, `SELECT description FROM cuzk.resolve_selector('config:cafe0001')`); got != `config cafe0001 {"keys_dir": "/secret"}` {
		t.Errorf("the operator's description of the config hash: %q", got)
	}
	if got := scalarText(t, sub, `SELECT count(*) FROM cuzk.timing_samples('bench:1')`); got != "3" {
		t.Errorf("a submitter's samples of bench run 1: %s, want 3", got)
	}
}
