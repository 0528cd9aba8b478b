package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/cuzkbin"
	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

// cuzkBin is the binary under test, built once by TestMain.
var cuzkBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cuzk-loadtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
	if cuzkBin, err = cuzkbin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	loadCircuit  = "synthetic-k6"
	loadRequests = 1000
	kills        = 3
	// The whole test must fit CI's 3 minutes on 2 cores; the proving part gets this.
	loadDeadline = 150 * time.Second
)

// loadFlags batch (max-batch > 1) and rescue quickly. Live jobs are held well under a
// second; a 10 s --rescue-after leaves room for a loaded CI host.
var loadFlags = []string{"--max-batch", "4", "--batch-wait", "20ms", "--synth-concurrency", "1", "--queue-depth", "1",
	"--rescue-after", "10s", "--poll-interval", "100ms", "--shutdown-grace", "20s"}

// env is the environment of every cuzk process: none of the developer's cuzk settings,
// a private HOME, the test's database.
type env struct {
	vars              []string
	keysDir, cacheDir string
	logDir            string
}

func newEnv(t testing.TB, dbURL string) *env {
	var vars []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "CUZK_") || k == "HOME" || k == "XDG_CACHE_HOME" {
			continue
		}
		vars = append(vars, kv)
	}
	home := t.TempDir()
	vars = append(vars, "HOME="+home, "NO_COLOR=1", "DATABASE_URL="+dbURL, "CUZK_LOG_FORMAT=text")
	return &env{vars: vars, keysDir: filepath.Join(home, "keys"), cacheDir: filepath.Join(home, "r1cs"), logDir: t.TempDir()}
}

// run runs a cuzk command to completion and fails the test unless it exits 0.
func (e *env) run(t testing.TB, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cuzkBin, args...)
	cmd.Env = e.vars
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cuzk %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// workerProc is one `cuzk worker` process.
type workerProc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan error
}

func (e *env) startWorker(t testing.TB, name string, flags ...string) *workerProc {
	t.Helper()
	logPath := filepath.Join(e.logDir, strings.ReplaceAll(name, "/", "_")+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"worker", "--backend", "cpu", "--name", name, "--keys-dir", e.keysDir, "--cache-dir", e.cacheDir}, flags...)
	cmd := exec.Command(cuzkBin, args...)
	cmd.Env = e.vars
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start worker %s: %v", name, err)
	}
	p := &workerProc{name: name, cmd: cmd, logPath: logPath, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("log of worker %s:\n%s", name, tail(logPath, 4000))
		}
	})
	return p
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (p *workerProc) kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.done
}

// stop sends SIGTERM and expects a clean exit 0 (the operators' contract).
func (p *workerProc) stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("worker %s after SIGTERM: %v (want exit 0)", p.name, err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("worker %s did not exit within 60s of SIGTERM", p.name)
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitFor polls the query (one integer) until cond holds or the deadline passes.
func waitFor(t testing.TB, pool *pgxpool.Pool, deadline time.Time, what, query string, cond func(int) bool, args ...any) int {
	t.Helper()
	var n int
	for {
		if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if cond(n) {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: gave up at %d after the deadline", what, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func count(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestThousandRequestsTwoWorkersKilledThrice inserts 1,000 requests with one SQL
// statement, proves them with two worker processes while one of them is killed with
// SIGKILL (and restarted) three times, and checks that nothing was lost or doubled:
// every request succeeded once, every proof verifies with gnark alone, and every
// attempt row is complete.
func TestThousandRequestsTwoWorkersKilledThrice(t *testing.T) {
	start := time.Now()
	db := pgtest.New(t)
	e := newEnv(t, db.URL)
	e.run(t, "setup", "--circuit", loadCircuit, "--keys-dir", e.keysDir, "--cache-dir", e.cacheDir)
	setupDone := time.Now()

	// Ten distinct valid inputs, spread over the requests by the insert itself.
	var inputs []string
	for seed := range uint64(10) {
		in, err := synth.Inputs(loadCircuit, seed+1)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(in))
	}
	tag, err := db.Pool.Exec(context.Background(), `
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
		SELECT 'load-' || g, $1, ($2::jsonb[])[1 + g % 10]
		  FROM generate_series(1, $3::int) g`, loadCircuit, inputs, loadRequests)
	if err != nil {
		t.Fatalf("insert requests: %v", err)
	}
	if tag.RowsAffected() != loadRequests {
		t.Fatalf("inserted %d requests, want %d", tag.RowsAffected(), loadRequests)
	}

	deadline := time.Now().Add(loadDeadline)
	steady := e.startWorker(t, "load-a", loadFlags...)
	victim := e.startWorker(t, "load-b-0", loadFlags...)

	const succeeded = `SELECT count(*) FROM cuzk.proof_requests WHERE state = 'succeeded'`
	// killedAttempts are the attempt rows that were running in a process when it was
	// killed: each must end 'interrupted' (or, if its store transaction's COMMIT had
	// reached the server as the process died, 'succeeded' with the stored proof).
	type attemptKey struct {
		requestID string
		attempt   int
		kill      int
	}
	var killedAttempts []attemptKey
	for k := 1; k <= kills; k++ {
		// Spread the kills over the first half, so rescues overlap the rest of the run.
		waitFor(t, db.Pool, deadline, fmt.Sprintf("before kill %d", k), succeeded,
			func(n int) bool { return n >= k*loadRequests/(2*kills) })
		waitFor(t, db.Pool, deadline, fmt.Sprintf("%s holds work", victim.name),
			`SELECT count(*) FROM cuzk.proof_attempts WHERE worker = $1 AND outcome = 'running'`,
			func(n int) bool { return n > 0 }, victim.name)
		victim.kill(t)
		rows, err := db.Pool.Query(context.Background(),
			`SELECT request_id, attempt FROM cuzk.proof_attempts WHERE worker = $1 AND outcome = 'running'`, victim.name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			a := attemptKey{kill: k}
			if err := rows.Scan(&a.requestID, &a.attempt); err != nil {
				t.Fatal(err)
			}
			killedAttempts = append(killedAttempts, a)
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill %d of %s at %s: %d attempts in flight", k, victim.name, time.Since(start).Round(time.Millisecond), n)
		victim = e.startWorker(t, fmt.Sprintf("load-b-%d", k), loadFlags...)
	}
	if len(killedAttempts) == 0 {
		t.Fatal("no attempt was in flight at any kill: the kills tested nothing")
	}

	waitFor(t, db.Pool, deadline, "all requests succeeded", succeeded, func(n int) bool { return n == loadRequests })
	proven := time.Now()
	steady.stop(t)
	victim.stop(t)

	// Nothing failed, nothing is left running, in cuzk's tables or River's.
	if n := count(t, db.Pool, `SELECT count(*) FROM cuzk.proof_status WHERE state <> 'succeeded'`); n != 0 {
		t.Errorf("%d requests not succeeded", n)
	}
	if n := count(t, db.Pool, `SELECT count(*) FROM river_job WHERE state <> 'completed'`); n != 0 {
		t.Errorf("%d River jobs not completed", n)
	}
	// Exactly one proof and one succeeded attempt per request, and they agree.
	if n := count(t, db.Pool, `SELECT count(*) FROM cuzk.proofs`); n != loadRequests {
		t.Errorf("%d proof rows, want %d", n, loadRequests)
	}
	if n := count(t, db.Pool, `
		SELECT count(*) FROM cuzk.proof_requests r
		 WHERE (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id AND a.outcome = 'succeeded') <> 1
		    OR NOT EXISTS (SELECT 1 FROM cuzk.proofs p JOIN cuzk.proof_attempts a
		                       ON a.request_id = p.request_id AND a.attempt = p.attempt AND a.outcome = 'succeeded'
		                    WHERE p.request_id = r.request_id)`); n != 0 {
		t.Errorf("%d requests without exactly one succeeded attempt matching their proof", n)
	}
	// Attempt rows are complete: numbered 1..n, none left running, every phase of a
	// succeeded attempt recorded.
	if n := count(t, db.Pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE outcome = 'running' OR finished_at IS NULL`); n != 0 {
		t.Errorf("%d attempts left running or unfinished", n)
	}
	if n := count(t, db.Pool, `
		SELECT count(*) FROM (SELECT request_id FROM cuzk.proof_attempts GROUP BY request_id
		                       HAVING max(attempt) <> count(*) OR min(attempt) <> 1) gaps`); n != 0 {
		t.Errorf("%d requests with gaps in their attempt numbers", n)
	}
	if n := count(t, db.Pool, `
		SELECT count(*) FROM cuzk.proof_attempts WHERE outcome = 'succeeded' AND (
		    queue_ms IS NULL OR batch_wait_ms IS NULL OR mem_wait_ms IS NULL OR srs_ms IS NULL OR
		    synth_ms IS NULL OR prove_wait_ms IS NULL OR prove_ms IS NULL OR ntt_ms IS NULL OR
		    msm_ms IS NULL OR verify_ms IS NULL OR persist_ms IS NULL OR total_ms IS NULL OR
		    synth_started_at IS NULL OR prove_started_at IS NULL OR batch_id IS NULL OR
		    batch_size IS NULL OR mem_reserved_bytes IS NULL OR backend IS NULL OR device IS NULL)`); n != 0 {
		t.Errorf("%d succeeded attempts with a phase or identity missing", n)
	}
	interrupted := make([]int, kills+1)
	for _, a := range killedAttempts {
		var outcome string
		var stored bool
		if err := db.Pool.QueryRow(context.Background(), `
			SELECT outcome, EXISTS (SELECT 1 FROM cuzk.proofs p WHERE p.request_id = a.request_id AND p.attempt = a.attempt)
			  FROM cuzk.proof_attempts a WHERE request_id = $1 AND attempt = $2`, a.requestID, a.attempt).Scan(&outcome, &stored); err != nil {
			t.Fatal(err)
		}
		switch {
		case outcome == "interrupted":
			interrupted[a.kill]++
		case outcome == "succeeded" && stored:
			t.Logf("attempt %d of %s committed as its worker was killed", a.attempt, a.requestID)
		default:
			t.Errorf("attempt %d of %s was running in a killed worker and ended %q, want interrupted", a.attempt, a.requestID, outcome)
		}
	}
	for k := 1; k <= kills; k++ {
		if interrupted[k] == 0 {
			t.Errorf("kill %d interrupted no attempt", k)
		}
	}
	batched := count(t, db.Pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE outcome = 'succeeded' AND batch_size > 1`)
	if batched == 0 {
		t.Error("no attempt was proven in a batch of more than one: batching was not exercised")
	}

	verifyAll(t, db.Pool)
	t.Logf("wall: total %s (setup %s, proving with %d kills %s, checks %s); %d killed attempts rescued; %d of %d proofs in batches > 1",
		time.Since(start).Round(time.Millisecond), setupDone.Sub(start).Round(time.Millisecond), kills,
		proven.Sub(setupDone).Round(time.Millisecond), time.Since(proven).Round(time.Millisecond),
		len(killedAttempts), batched, loadRequests)
}

// verifyAll checks every stored proof with gnark alone: the vk from cuzk.circuits, the
// proof and public witness from cuzk.proofs, on all cores.
func verifyAll(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var vkBytes []byte
	if err := pool.QueryRow(context.Background(), `SELECT vk FROM cuzk.circuits WHERE name = $1`, loadCircuit).Scan(&vkBytes); err != nil {
		t.Fatalf("load vk: %v", err)
	}
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(bytes.NewReader(vkBytes)); err != nil {
		t.Fatalf("decode vk: %v", err)
	}
	type stored struct {
		requestID     string
		proof, public []byte
	}
	rows, err := pool.Query(context.Background(), `SELECT request_id, proof, public_witness FROM cuzk.proofs`)
	if err != nil {
		t.Fatal(err)
	}
	var all []stored
	for rows.Next() {
		var s stored
		if err := rows.Scan(&s.requestID, &s.proof, &s.public); err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	work := make(chan stored)
	var mu sync.Mutex
	var failures []error
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				if err := verifyOne(vk, s.proof, s.public); err != nil {
					mu.Lock()
					failures = append(failures, fmt.Errorf("%s: %w", s.requestID, err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, s := range all {
		work <- s
	}
	close(work)
	wg.Wait()
	if len(all) != loadRequests {
		t.Errorf("verified %d proofs, want %d", len(all), loadRequests)
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d stored proofs do not verify, e.g. %v", len(failures), len(all), errors.Join(failures[:min(3, len(failures))]...))
	}
}

func verifyOne(vk groth16.VerifyingKey, proofBytes, public []byte) error {
	proof := groth16.NewProof(ecc.BLS12_381)
	if _, err := proof.ReadFrom(bytes.NewReader(proofBytes)); err != nil {
		return fmt.Errorf("decode proof: %w", err)
	}
	pw, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return err
	}
	if err := pw.UnmarshalBinary(public); err != nil {
		return fmt.Errorf("decode public witness: %w", err)
	}
	return groth16.Verify(proof, vk, pw)
}
