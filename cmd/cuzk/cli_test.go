package main

// Process-level tests: the cuzk binary is built once and run as a subprocess against a
// private PostgreSQL database per test, the way operators and their scripts run it.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/cuzkbin"
	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/keys"
)

// cuzkBin is the binary under test, built by TestMain.
var cuzkBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cuzk-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cuzk cli tests:", err)
		os.Exit(1)
	}
	if cuzkBin, err = cuzkbin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "cuzk cli tests:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one finished run of the binary.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("cuzk %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// baseEnv is the test process's environment without anything cuzk reads, so a
// developer's DATABASE_URL or CUZK_* never leaks into a test; HOME points into the
// test's temp dir so default key and cache directories stay private too.
func baseEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "CUZK_") || k == "HOME" || k == "XDG_CACHE_HOME" || k == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+t.TempDir(), "NO_COLOR=1")
	return append(env, extra...)
}

// cuzk runs the binary to completion (at most timeout) with env on top of baseEnv.
func cuzkEnv(t *testing.T, env []string, stdin string, timeout time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cuzkBin, args...)
	cmd.Env = baseEnv(t, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("cuzk %s did not finish within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), timeout, res.stdout, res.stderr)
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run cuzk %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// cuzkDB runs the binary with DATABASE_URL set to url (none when url is empty).
func cuzkDB(t *testing.T, url string, args ...string) result {
	t.Helper()
	var env []string
	if url != "" {
		env = append(env, "DATABASE_URL="+url)
	}
	return cuzkEnv(t, env, "", 2*time.Minute, args...)
}

// mustOK fails the test unless r exited 0.
func mustOK(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("want exit 0, got %s", r)
	}
	return r
}

// wantExit fails the test unless r exited with code and its stderr contains every sub.
func wantExit(t *testing.T, r result, code int, sub ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("want exit %d, got %s", code, r)
		return
	}
	for _, s := range sub {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr of cuzk %s lacks %q:\n%s", strings.Join(r.args, " "), s, r.stderr)
		}
	}
}

// errorLines are stderr's lines that report the error ("cuzk: ..."), as opposed to logs.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(l, "cuzk: ") {
			out = append(out, l)
		}
	}
	return out
}

// psql runs a script through the psql client, as an orchestrator without Go would.
var psql = pgtest.Psql

// syncBuffer collects a subprocess's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// workerProc is a `cuzk worker` running in the background.
type workerProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

func startWorker(t *testing.T, url string, args ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(cuzkBin, append([]string{"worker"}, args...)...)
	cmd.Env = baseEnv(t, "DATABASE_URL="+url)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start cuzk worker: %v", err)
	}
	w := &workerProc{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { w.err = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = cmd.Process.Kill()
			<-w.done
		}
		if t.Failed() {
			t.Logf("cuzk worker output:\n%s", out.String())
		}
	})
	return w
}

// stop sends SIGTERM and returns the exit code once the worker has exited.
func (w *workerProc) stop(t *testing.T, within time.Duration) int {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM to worker: %v", err)
	}
	select {
	case <-w.done:
	case <-time.After(within):
		t.Fatalf("cuzk worker still running %s after SIGTERM; output:\n%s", within, w.out.String())
	}
	var ee *exec.ExitError
	if errors.As(w.err, &ee) {
		return ee.ExitCode()
	}
	if w.err != nil {
		t.Fatalf("cuzk worker: %v", w.err)
	}
	return 0
}

// statusRow is one line of `cuzk status --json`.
type statusRow struct {
	RequestID string `json:"request_id"`
	Circuit   string `json:"circuit"`
	State     string `json:"state"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

// waitDone polls `cuzk status REQ --json` until the request is finished.
func waitDone(t *testing.T, url string, w *workerProc, requestID string, within time.Duration) statusRow {
	t.Helper()
	deadline := time.Now().Add(within)
	var last statusRow
	for time.Now().Before(deadline) {
		r := mustOK(t, cuzkDB(t, url, "status", "--json", requestID))
		var rows []statusRow
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		for dec.More() {
			var s statusRow
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("cuzk status --json: %v in %q", err, r.stdout)
			}
			rows = append(rows, s)
		}
		if len(rows) != 1 || rows[0].RequestID != requestID {
			t.Fatalf("cuzk status --json %s: want exactly that request, got %q", requestID, r.stdout)
		}
		last = rows[0]
		switch last.State {
		case "succeeded", "failed", "cancelled":
			return last
		}
		select {
		case <-w.done:
			t.Fatalf("cuzk worker exited (%v) while %s was %s; output:\n%s", w.err, requestID, last.State, w.out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("request %s still %s after %s (last error %q)", requestID, last.State, within, last.LastError)
	return last
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestMigrateTwiceOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.Empty(t)
	first := mustOK(t, cuzkDB(t, db.URL, "migrate"))
	m := regexp.MustCompile(`river migrations applied: (\d+); cuzk schema version (\d+) -> (\d+)`).FindStringSubmatch(first.stdout)
	if m == nil {
		t.Fatalf("first migrate: unexpected report %q", first.stdout)
	}
	if m[1] == "0" || m[2] != "0" || m[3] == "0" {
		t.Errorf("first migrate on an empty database should apply River's migrations and move cuzk from 0: %q", first.stdout)
	}
	second := mustOK(t, cuzkDB(t, db.URL, "migrate"))
	want := fmt.Sprintf("river migrations applied: 0; cuzk schema version %s -> %s", m[3], m[3])
	if !strings.Contains(second.stdout, want) {
		t.Errorf("second migrate should change nothing: want %q, got %q", want, second.stdout)
	}
	if got := psql(t, db.URL, "SELECT count(*) FROM cuzk.proof_status;"); got != "0" {
		t.Errorf("cuzk.proof_status after migrate: %q rows, want 0", got)
	}
}

func TestSetupBuiltinRegistersCircuit(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keysDir, cacheDir := t.TempDir(), t.TempDir()
	args := []string{"setup", "--circuit", "synthetic-k6", "--keys-dir", keysDir, "--cache-dir", cacheDir}
	r := mustOK(t, cuzkDB(t, db.URL, args...))
	if !strings.Contains(r.stderr, "WARNING: running a DEVELOPMENT key ceremony") {
		t.Errorf("setup did not warn about the development ceremony on stderr:\n%s", r.stderr)
	}
	if strings.Contains(r.stdout, "WARNING") {
		t.Errorf("the ceremony warning belongs on stderr, not stdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "registered synthetic-k6") {
		t.Errorf("setup stdout lacks the registration line:\n%s", r.stdout)
	}

	pkPath := filepath.Join(keysDir, "synthetic-k6", "pk.dump")
	vkFile, err := os.ReadFile(filepath.Join(keysDir, "synthetic-k6", "vk.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var vk []byte
	var digest, source string
	var constraints int64
	err = db.Pool.QueryRow(context.Background(),
		"SELECT vk, pk_digest, constraints, source FROM cuzk.circuits WHERE name = 'synthetic-k6'").Scan(&vk, &digest, &constraints, &source)
	if err != nil {
		t.Fatalf("cuzk.circuits row for synthetic-k6: %v", err)
	}
	want, err := keys.DumpDigest(pkPath)
	if err != nil || digest != want {
		t.Errorf("pk_digest %s, tree digest of %s is %s (%v)", digest, pkPath, want, err)
	}
	dumpSum := fileSHA256(t, pkPath)
	if !bytes.Equal(vk, vkFile) {
		t.Errorf("registered vk (%d bytes) differs from vk.bin (%d bytes)", len(vk), len(vkFile))
	}
	if len(vk) == 0 || constraints < 32 || constraints > 256 || source != "builtin" {
		t.Errorf("registered synthetic-k6: %d vk bytes, %d constraints, source %q", len(vk), constraints, source)
	}

	// Again: the keys are reused, not regenerated, and the registration is unchanged.
	again := mustOK(t, cuzkDB(t, db.URL, args...))
	if strings.Contains(again.stderr, "WARNING") || !strings.Contains(again.stderr, "reusing them") {
		t.Errorf("second setup should reuse the existing keys without a ceremony:\n%s", again.stderr)
	}
	if got := fileSHA256(t, pkPath); got != dumpSum {
		t.Errorf("second setup rewrote pk.dump (SHA-256 %s, was %s)", got, dumpSum)
	}
	if got := psql(t, db.URL, "SELECT pk_digest FROM cuzk.circuits WHERE name = 'synthetic-k6';"); got != digest {
		t.Errorf("pk_digest after second setup %q, want %q", got, digest)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	dirs := []string{"--keys-dir", t.TempDir(), "--cache-dir", t.TempDir()}

	r := cuzkDB(t, "", "frobnicate")
	wantExit(t, r, exitUsage, "frobnicate")

	r = cuzkDB(t, "", "status", "--no-such-flag")
	wantExit(t, r, exitUsage, "--no-such-flag")

	r = cuzkDB(t, "", "worker", "--backend", "opencl")
	wantExit(t, r, exitUsage, "opencl")

	r = cuzkDB(t, "", "status")
	wantExit(t, r, exitUsage, "DATABASE_URL")
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 {
		t.Errorf("cuzk status without a database: want one line on stderr, got %d:\n%s", len(lines), r.stderr)
	}

	// A database that is down, or not there: one line that says where and what to check.
	down := freeAddr(t) // nothing listens there once it returns
	r = cuzkDB(t, "postgres://postgres@"+down+"/x", "status")
	wantExit(t, r, exitRuntime, "database at "+down+": connection refused: is PostgreSQL running", "check the host and port in DATABASE_URL")
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 {
		t.Errorf("cuzk status with the database down: want one line on stderr, got %d:\n%s", len(lines), r.stderr)
	}
	r = cuzkDB(t, pgtest.URL(t, "cuzk_no_such_database"), "status")
	wantExit(t, r, exitRuntime, `database "cuzk_no_such_database" does not exist (SQLSTATE 3D000): create the database`)

	r = cuzkDB(t, "", "inputs", "--circuit", "nope")
	wantExit(t, r, exitUsage, `unknown circuit "nope"`)
	if r.stdout != "" {
		t.Errorf("cuzk inputs --circuit nope printed %q on stdout", r.stdout)
	}

	r = cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--partitions", "0")
	wantExit(t, r, exitUsage, "--partitions 0")

	r = cuzkDB(t, "", "setup", "--import", "x", "--r1cs", filepath.Join(t.TempDir(), "missing.r1cs"))
	wantExit(t, r, exitUsage, "missing.r1cs")

	r = cuzkDB(t, "", "bench", "--circuit", "synthetic-k6", "--runs", "0")
	wantExit(t, r, exitUsage, "--runs")

	// GPUs named that this host lacks are refused before anything starts, naming what
	// was found, whatever the backend; auto does not fall back to the CPU for them.
	for _, backend := range []string{"auto", "cuda", "cpu"} {
		r = cuzkEnv(t, []string{"DATABASE_URL=postgres://127.0.0.1:1/none"}, "", time.Minute,
			append([]string{"worker", "--backend", backend, "--devices", "5", "--mem-budget", "1GiB"}, dirs...)...)
		wantExit(t, r, exitUsage, "5")
		if el := errorLines(r.stderr); len(el) != 1 || !strings.Contains(el[0], "found") && !strings.Contains(el[0], "uses no GPU") {
			t.Errorf("cuzk worker --backend %s --devices 5: want one error line naming the GPUs found, got %s", backend, r)
		}
	}

	// CUDA on a host without a usable GPU: the library path is made to point nowhere so
	// the outcome is the same whether or not this host has a driver.
	r = cuzkEnv(t, []string{"DATABASE_URL=postgres://127.0.0.1:1/none", "CUZK_GPU_LIB=" + filepath.Join(t.TempDir(), "libcuzkgpu.so")}, "", time.Minute,
		append([]string{"worker", "--backend", "cuda", "--mem-budget", "1GiB"}, dirs...)...)
	if r.code == 0 {
		t.Errorf("cuzk worker --backend cuda without a GPU exited 0:\n%s", r)
	} else if el := errorLines(r.stderr); len(el) != 1 || !strings.Contains(el[0], "unavailable") {
		t.Errorf("cuzk worker --backend cuda without a GPU: want one error line saying unavailable, got %s", r)
	}
}

// cuzk inputs --partitions N prints the inputs of seeds --seed onwards as one array.
func TestInputsPartitions(t *testing.T) {
	t.Parallel()
	r := mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", "4", "--partitions", "3"))
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &parts); err != nil || len(parts) != 3 {
		t.Fatalf("cuzk inputs --partitions 3: %d elements (%v):\n%s", len(parts), err, r.stdout)
	}
	for i, got := range parts {
		one := mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", fmt.Sprint(4+i)))
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(one.stdout)); err != nil {
			t.Fatal(err)
		}
		var g bytes.Buffer
		if err := json.Compact(&g, got); err != nil {
			t.Fatal(err)
		}
		if g.String() != want.String() {
			t.Errorf("partition %d is not the inputs of seed %d", i, 4+i)
		}
	}
}

func TestBenchCompareGnark(t *testing.T) {
	t.Parallel()
	r := mustOK(t, cuzkDB(t, "", "bench", "--circuit", "synthetic-k8", "--compare", "gnark", "--runs", "2",
		"--keys-dir", t.TempDir(), "--cache-dir", t.TempDir()))
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	if !regexp.MustCompile(`^speedup_vs_gnark: [0-9]+\.[0-9]{2}$`).MatchString(last) {
		t.Errorf("last line of bench output %q does not match speedup_vs_gnark: X.XX; output:\n%s", last, r.stdout)
	}
	if n := len(regexp.MustCompile(`(?m)^run \d+: cuzk .*\| gnark `).FindAllString(r.stdout, -1)); n != 2 {
		t.Errorf("want 2 timed runs against gnark, got %d:\n%s", n, r.stdout)
	}
}
