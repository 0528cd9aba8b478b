package faults

// The harness: the cuzk binary built once, keys made once, and per test a private
// database with the circuits registered by `cuzk setup`, requests inserted with SQL,
// and `cuzk worker` processes that the test kills, stops, pauses and restarts.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/cuzkbin"
	"github.com/cuzk/cuzk/internal/pgcluster"
	"github.com/cuzk/cuzk/internal/pgtest"
)

// Circuits the tests use: small proves in well under a second; big keeps a worker
// inside one attempt (key load, proof) for a second or more, long enough to signal it.
const (
	small = "synthetic-k10"
	big   = "synthetic-k12"
)

// shared is what TestMain prepares once for every test.
type shared struct {
	bin    string            // the cuzk binary under test
	keys   string            // keys of small and big, copied into each test's own dir
	cache  string            // compiled circuits, shared read-mostly
	inputs map[string]string // circuit -> valid inputs JSON
	// circuits are the cuzk.circuits rows `cuzk setup` registered, copied into each
	// test's database: running setup again per test would load every key again.
	circuits []circuitRow
}

type circuitRow struct {
	Name             string
	Constraints      int64
	PublicInputs     int
	Wires            int64
	VK               []byte
	PKDigest, Source string
	MemEstimateBytes *int64
}

var sh shared

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "cuzk-faults-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := prepare(dir); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			return 1
		}
		return m.Run()
	}())
}

// prepare builds the binary and runs the key ceremonies once, against a throw-away
// database (setup registers what it makes).
func prepare(dir string) error {
	sh = shared{keys: filepath.Join(dir, "keys"), cache: filepath.Join(dir, "cache"), inputs: map[string]string{}}
	var err error
	if sh.bin, err = cuzkbin.Build(dir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		return fmt.Errorf("connect to %s: %w", pgtest.AdminURL(), err)
	}
	defer admin.Close(context.Background())
	name := "cuzk_faults_keys_" + randHex(4)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") //nolint:errcheck
	url := strings.Replace(pgtest.AdminURL(), "/postgres?", "/"+name+"?", 1)
	if url == pgtest.AdminURL() {
		return fmt.Errorf("cannot derive a database URL from %s", pgtest.AdminURL())
	}
	env := []string{"DATABASE_URL=" + url}
	if _, err := runCmd(ctx, env, "migrate"); err != nil {
		return err
	}
	// The ceremonies run side by side: they are most of TestMain's time.
	setups := make(chan error, 2)
	for _, c := range []string{small, big} {
		go func() {
			_, err := runCmd(ctx, env, "setup", "--circuit", c, "--keys-dir", sh.keys, "--cache-dir", sh.cache)
			setups <- err
		}()
	}
	for _, c := range []string{small, big} {
		out, err := runCmd(ctx, nil, "inputs", "--circuit", c)
		if err != nil {
			return err
		}
		sh.inputs[c] = out
	}
	for range 2 {
		if err := <-setups; err != nil {
			return err
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, `SELECT name, constraints, public_inputs, wires, vk, pk_digest, source, mem_estimate_bytes FROM cuzk.circuits`)
	if err != nil {
		return err
	}
	sh.circuits, err = pgx.CollectRows(rows, pgx.RowToStructByPos[circuitRow])
	return err
}

func runCmd(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, sh.bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cuzk %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// cleanEnv is the test's environment without anything cuzk reads, so a developer's
// DATABASE_URL or CUZK_* never leaks into a test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "CUZK_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "NO_COLOR=1", "CUZK_LOG_FORMAT=text")
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// env is one test's database, keys and workers.
type env struct {
	t    *testing.T
	url  string
	pool *pgxpool.Pool
	keys string
}

// newEnv gives t a fresh database (on the shared server) with small and big set up.
func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	return setupEnv(t, db.URL, db.Pool)
}

// setupEnv registers small and big on the migrated database at url as `cuzk setup`
// did in TestMain, with a private copy of the keys (a test may delete one).
func setupEnv(t *testing.T, url string, pool *pgxpool.Pool) *env {
	t.Helper()
	e := &env{t: t, url: url, pool: pool, keys: filepath.Join(t.TempDir(), "keys")}
	e.logAttempts()
	if err := os.CopyFS(e.keys, os.DirFS(sh.keys)); err != nil {
		t.Fatalf("copy keys: %v", err)
	}
	for _, c := range sh.circuits {
		_, err := pool.Exec(context.Background(), `
			INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest, source, mem_estimate_bytes)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			c.Name, c.Constraints, c.PublicInputs, c.Wires, c.VK, c.PKDigest, c.Source, c.MemEstimateBytes)
		if err != nil {
			t.Fatalf("register %s: %v", c.Name, err)
		}
	}
	return e
}

// pkFile is the path of circuit's pk.bin in the test's keys and its content, to put
// back after a test spoils it.
func (e *env) pkFile(circuit string) (string, []byte) {
	e.t.Helper()
	// cuzk setup writes the key once, as pk.dump; imported keys keep pk.bin.
	path := filepath.Join(e.keys, circuit, "pk.bin")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		path = filepath.Join(e.keys, circuit, "pk.dump")
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return path, saved
}

// cuzk runs a cuzk command against the test's database and returns its stdout.
func (e *env) cuzk(args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runCmd(ctx, []string{"DATABASE_URL=" + e.url}, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// submit inserts n requests of circuit with plain SQL, as an orchestrator would.
func (e *env) submit(prefix, circuit string, n, maxAttempts int) []string {
	e.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		_, err := e.pool.Exec(context.Background(),
			`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, max_attempts) VALUES ($1, $2, $3::jsonb, $4)`,
			ids[i], circuit, sh.inputs[circuit], maxAttempts)
		if err != nil {
			e.t.Fatalf("insert request %s: %v", ids[i], err)
		}
	}
	return ids
}

// proc is a `cuzk worker` process; its stdout and stderr go to a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// output is what the worker has written so far.
func (p *proc) output() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", p.log, err)
	}
	return string(b)
}

// workerArgs are the settings that keep the tests fast: short polls, short rescue and
// retry delays, one synthesis at a time.
func (e *env) workerArgs(extra ...string) []string {
	return append([]string{"worker", "--backend", "cpu", "--mem-budget", "2GiB",
		"--keys-dir", e.keys, "--cache-dir", sh.cache, "--poll-interval", "200ms",
		"--synth-concurrency", "1", "--queue-depth", "1", "--max-batch", "1", "--batch-wait", "0s",
		"--rescue-after", "60s", "--retry-backoff", "500ms", "--shutdown-grace", "20s"}, extra...)
}

// start runs a worker named name on the test's database; flags given later override
// earlier ones.
func (e *env) start(name string, extra ...string) *proc {
	e.t.Helper()
	cmd := exec.Command(sh.bin, e.workerArgs(append([]string{"--name", name}, extra...)...)...)
	cmd.Env = append(cleanEnv(), "DATABASE_URL="+e.url)
	p := &proc{name: name, cmd: cmd, log: filepath.Join(e.t.TempDir(), name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start worker %s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	e.t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot die
			_ = cmd.Process.Kill()
			<-p.done
		}
		if e.t.Failed() {
			e.t.Logf("worker %s (%v) output:\n%s", name, p.err, p.output())
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to worker %s: %v", sig, p.name, err)
	}
}

// kill9 kills the worker with SIGKILL and waits for it to be gone.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGKILL)
	<-p.done
}

// wait returns the worker's exit code once it has exited, failing after within.
func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("worker %s still running after %s", p.name, within)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("worker %s: %v", p.name, p.err)
	}
	return 0
}

// alive fails the test if the worker has exited.
func (p *proc) alive(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Errorf("worker %s died (%v)", p.name, p.err)
	}
}

// waitFor polls cond until it reports done, failing the test after within with cond's
// last description of what it saw. A cond error (the database briefly gone) is not
// fatal: it is what some tests provoke.
func (e *env) waitFor(within time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ok, seen, err := cond(ctx)
		cancel()
		if err != nil {
			seen = "error: " + err.Error()
		}
		if ok && err == nil {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not reached within %s; last seen: %s", what, within, last)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// waitStates waits until every request in ids is in state want.
func (e *env) waitStates(within time.Duration, want string, ids []string) {
	e.t.Helper()
	e.waitFor(within, fmt.Sprintf("%d requests %s", len(ids), want), func(ctx context.Context) (bool, string, error) {
		rows, err := e.pool.Query(ctx, `SELECT state, count(*) FROM cuzk.proof_requests WHERE request_id = ANY($1) GROUP BY state ORDER BY state`, ids)
		if err != nil {
			return false, "", err
		}
		type sc struct {
			State string
			N     int
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[sc])
		if err != nil {
			return false, "", err
		}
		return len(got) == 1 && got[0].State == want && got[0].N == len(ids), fmt.Sprint(got), nil
	})
}

// exactlyOnce checks the guarantee every fault must keep: each request succeeded with
// one proof row, one succeeded attempt, the proof verifies with gnark, and no attempt
// is left 'running'.
func (e *env) exactlyOnce(ids []string) {
	e.t.Helper()
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `
		SELECT r.request_id, r.state,
		       (SELECT count(*) FROM cuzk.proofs p WHERE p.request_id = r.request_id),
		       (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id AND a.outcome = 'succeeded'),
		       (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id AND a.outcome = 'running')
		  FROM cuzk.proof_requests r WHERE r.request_id = ANY($1) ORDER BY r.request_id`, ids)
	if err != nil {
		e.t.Fatal(err)
	}
	type row struct {
		ID, State                string
		Proofs, Succeeded, Alive int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		e.t.Fatal(err)
	}
	if len(got) != len(ids) {
		e.t.Fatalf("want %d requests, found %d", len(ids), len(got))
	}
	for _, r := range got {
		if r.State != "succeeded" || r.Proofs != 1 || r.Succeeded != 1 || r.Alive != 0 {
			e.t.Errorf("request %s: state %s, %d proof rows, %d succeeded attempts, %d attempts still running; want succeeded, 1, 1, 0",
				r.ID, r.State, r.Proofs, r.Succeeded, r.Alive)
		}
	}
	out := e.cuzk(append([]string{"verify"}, ids...)...)
	if strings.Count(out, ": ok\n") != len(ids) {
		e.t.Errorf("cuzk verify: want %d proofs ok, got:\n%s", len(ids), out)
	}
}

// logAttempts writes every attempt row to the test log when the test has failed, with
// what decides who hands a dead worker's jobs back: the workers' rows, River's jobs and
// River's leader.
func (e *env) logAttempts() {
	e.t.Cleanup(func() {
		if !e.t.Failed() {
			return
		}
		rows, err := e.pool.Query(context.Background(), `
			SELECT request_id, attempt, worker, outcome, coalesce(error, ''), started_at, finished_at
			  FROM cuzk.proof_attempts ORDER BY request_id, attempt`)
		if err != nil {
			e.t.Logf("attempts: %v", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var id, worker, outcome, msg string
			var n int
			var started time.Time
			var finished *time.Time
			if err := rows.Scan(&id, &n, &worker, &outcome, &msg, &started, &finished); err != nil {
				e.t.Logf("attempts: %v", err)
				return
			}
			e.t.Logf("attempt %s #%d by %s: %s %q started %s finished %v", id, n, worker, outcome, msg, started.Format("15:04:05.000"), finished)
		}
		e.logRows("workers", `SELECT worker, coalesce(river_client_id, '-'), started_at::text, last_seen_at::text, coalesce(stopped_at::text, '-')
			FROM cuzk.workers ORDER BY worker`)
		e.logRows("river_job", `SELECT id::text, state::text, queue, attempt::text, coalesce(array_to_string(attempted_by, ','), '-')
			FROM river_job ORDER BY id`)
		e.logRows("river_leader", `SELECT leader_id, elected_at::text, expires_at::text, now()::text FROM river_leader`)
	})
}

// logRows writes the text columns of query's rows to the test log.
func (e *env) logRows(what, query string) {
	rows, err := e.pool.Query(context.Background(), query)
	if err != nil {
		e.t.Logf("%s: %v", what, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			e.t.Logf("%s: %v", what, err)
			return
		}
		e.t.Logf("%s: %v", what, vals)
	}
}

// jobErrors is every error River recorded on the job of request id, joined with "; ".
func (e *env) jobErrors(id string) string {
	e.t.Helper()
	return scalar[string](e.t, e.pool, `
		SELECT coalesce(string_agg(e->>'error', '; '), '') FROM river_job j, unnest(j.errors) e
		 WHERE j.args->>'request_id' = $1`, id)
}

// clusterEnv is newEnv on a private PostgreSQL cluster of the test's own, migrated,
// which the test may stop and start.
func clusterEnv(t *testing.T, ctx context.Context) (*env, *pgcluster.Cluster) {
	t.Helper()
	cluster, err := pgcluster.Start(ctx, pgcluster.FreePort())
	if err != nil {
		t.Fatalf("start a private PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Logf("stop cluster: %v", err)
		}
	})
	url := cluster.URL("postgres")
	if _, err := runCmd(ctx, []string{"DATABASE_URL=" + url}, "migrate"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return setupEnv(t, url, pool), cluster
}

// scalar reads one value.
func scalar[T any](t *testing.T, pool *pgxpool.Pool, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}
