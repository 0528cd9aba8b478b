package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/worker"
)

// freeAddr is a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpDo(t *testing.T, method, url string) (int, string) {
	t.Helper()
	return httpAuth(t, method, url, "", `{"ids": ["1"]}`)
}

// httpAuth sends body with the Authorization header auth (none when "").
func httpAuth(t *testing.T, method, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// waitHTTP polls url until it answers (the worker starts its server after loading).
func waitHTTP(t *testing.T, w *workerProc, url string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-w.done:
			t.Fatalf("cuzk worker exited (%v) before serving http; output:\n%s", w.err, w.out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not answer within a minute", url)
}

// TestWorkerHTTPEndpoints proves one request with a real CPU worker started with
// --http and checks what each endpoint serves about it.
func TestWorkerHTTPEndpoints(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	dir := t.TempDir()
	dirs := []string{"--keys-dir", filepath.Join(dir, "keys"), "--cache-dir", filepath.Join(dir, "r1cs")}
	mustOK(t, cuzkDB(t, db.URL, append([]string{"setup", "--circuit", "synthetic-k6"}, dirs...)...))
	in := mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6"))
	psql(t, db.URL, "SELECT cuzk.submit_proof(request_id => 'http-1', circuit => 'synthetic-k6', inputs => '"+strings.TrimSpace(in.stdout)+"'::jsonb);")

	addr := freeAddr(t)
	base := "http://" + addr
	w := startWorker(t, db.URL, append([]string{"--backend", "cpu", "--mem-budget", "1GiB", "--http", addr}, dirs...)...)
	waitHTTP(t, w, base+"/healthz")
	if st := waitDone(t, db.URL, w, "http-1", 2*time.Minute); st.State != "succeeded" {
		t.Fatalf("http-1 ended %s: %s", st.State, st.LastError)
	}

	code, body := httpDo(t, "GET", base+"/healthz")
	if code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	code, body = httpDo(t, "GET", base+"/readyz")
	if code != 200 || !strings.Contains(body, "database reachable, backend cpu") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	// The memory budget: what the process, the key and the circuit hold, and the
	// request's synthesis, given back.
	if !regexp.MustCompile(`\nmemory budget 1073741824 bytes: \d+ reserved \(peak \d+\), waiting 0; circuit [1-9]\d* \(peak \d+\), key [1-9]\d* \(peak \d+\), process [1-9]\d* \(peak \d+\), synthesis 0 \(peak [1-9]\d*\)\n`).MatchString(body) {
		t.Errorf("/readyz has no memory budget line with the kinds a proof leaves: %q", body)
	}
	// The keys the worker loaded, read from disk and resident on its device.
	if !regexp.MustCompile(`\nkey synthetic-k6 files: resident \d+ bytes, \S+\nkey synthetic-k6 on cpu: resident \d+ bytes, \S+; \d+ bytes on the device, 0 of them precomputed\n`).MatchString(body) {
		t.Errorf("/readyz does not list synthetic-k6's key as resident: %q", body)
	}

	// The attempt row is written before the observer hears of it: poll briefly.
	var metrics string
	for range 50 {
		_, metrics = httpDo(t, "GET", base+"/metrics")
		if strings.Contains(metrics, `outcome="succeeded"`) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{
		`cuzk_proof_attempts_total{circuit="synthetic-k6",outcome="succeeded"} 1`,
		`cuzk_phase_duration_seconds_count{circuit="synthetic-k6",phase="prove"} 1`,
		`cuzk_phase_duration_seconds_count{circuit="synthetic-k6",phase="synth"} 1`,
		`cuzk_phase_duration_seconds_count{circuit="synthetic-k6",phase="queue"} 1`,
		`cuzk_mem_budget_total_bytes 1.073741824e+09`,
		`cuzk_mem_budget_kind_bytes{kind="synthesis"} 0`,
		`cuzk_queue_up 1`,
		`cuzk_build_info{build="` + worker.BuildString() + `"} 1`,
		`cuzk_queue_jobs{queue="cuzk",state="available"} 0`,
		`cuzk_queue_jobs{queue="cuzk_urgent",state="available"} 0`,
	} {
		if !strings.Contains(metrics, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(metrics, "cuzk_gpu_") {
		t.Error("a CPU worker reports GPU metrics")
	}
	// The key is on the device (the CPU prover's key) and pinned; the budget's key
	// reservation holds its host copy and the CPU backend's buffers for it.
	pinned := regexp.MustCompile(`\ncuzk_key_bytes\{circuit="synthetic-k6",tier="pinned"\} (\S+)\n`).FindStringSubmatch(metrics)
	keyKind := regexp.MustCompile(`\ncuzk_mem_budget_kind_bytes\{kind="key"\} (\S+)\n`).FindStringSubmatch(metrics)
	if pinned == nil || keyKind == nil {
		t.Fatalf("/metrics: pinned key bytes %q, budget's key bytes %q: want both", pinned, keyKind)
	}
	if p, k := metricValue(t, pinned[1]), metricValue(t, keyKind[1]); p <= 0 || k < p {
		t.Errorf("/metrics: pinned key bytes %v, budget's key bytes %v: want the copy, and at least it in the budget", p, k)
	}
	for _, re := range []string{
		`\ncuzk_key_bytes\{circuit="synthetic-k6",tier="device"\} [1-9]\S*\n`,
		`\ncuzk_key_last_used_seconds\{circuit="synthetic-k6"\} [1-9]\S*\n`,
		`\ncuzk_key_tier_moves_total\{circuit="synthetic-k6",from="file",to="pinned"\} 1\n`,
		`\ncuzk_key_tier_moves_total\{circuit="synthetic-k6",from="pinned",to="device"\} 1\n`,
		`\ncuzk_key_host_limit_bytes 5.36870912e\+08\n`,
	} {
		if !regexp.MustCompile(re).MatchString(metrics) {
			t.Errorf("/metrics lacks %s", re)
		}
	}
	code, body = httpDo(t, "GET", base+"/readyz?format=json")
	var ready struct {
		Ready bool `json:"ready"`
		Tiers []struct {
			Circuit string           `json:"circuit"`
			Tiers   []string         `json:"tiers"`
			Bytes   map[string]int64 `json:"bytes"`
			Devices []string         `json:"devices"`
		} `json:"key_tiers"`
		HostLimit int64 `json:"key_host_limit_bytes"`
	}
	if err := json.Unmarshal([]byte(body), &ready); code != 200 || err != nil || !ready.Ready || len(ready.Tiers) != 1 ||
		ready.Tiers[0].Circuit != "synthetic-k6" || strings.Join(ready.Tiers[0].Tiers, ",") != "device,pinned,file" ||
		ready.Tiers[0].Bytes["pinned"] <= 0 || strings.Join(ready.Tiers[0].Devices, ",") != "cpu" || ready.HostLimit != 512<<20 {
		t.Errorf("/readyz?format=json: %d %v %+v\n%s", code, err, ready, body)
	}

	code, body = httpDo(t, "GET", base+"/")
	if code != 200 || !strings.Contains(body, "<h3>synthetic-k6</h3>") || !strings.Contains(body, "<svg") {
		t.Errorf("dashboard: %d, circuit or chart missing", code)
	}
	if !regexp.MustCompile(`<h2>Proving keys</h2>[\s\S]*<td>synthetic-k6</td><td>cpu</td><td>resident</td>`).MatchString(body) {
		t.Error("dashboard: the Proving keys section does not show synthetic-k6 resident on cpu")
	}
	if !regexp.MustCompile(`<table id="key-tiers">[\s\S]*<td>synthetic-k6</td><td>device → pinned → file</td><td class="num">[^<]+ \(cpu\)</td><td class="num">\d`).MatchString(body) {
		t.Error("dashboard: the Key tiers table does not show synthetic-k6 on cpu, pinned and in its file")
	}

	code, body = httpDo(t, "GET", base+"/riverui/")
	if code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("/riverui/: %d %.200q", code, body)
	}
	code, body = httpDo(t, "GET", base+"/riverui/api/jobs?state=completed")
	if code != 200 || !regexp.MustCompile(`"kind":\s*"cuzk_prove"`).MatchString(body) {
		t.Errorf("/riverui/api/jobs: %d %.300q", code, body)
	}
	code, body = httpDo(t, "POST", base+"/riverui/api/jobs/cancel")
	if code != http.StatusForbidden || !strings.Contains(body, "--riverui-writable") {
		t.Errorf("River UI changes a job without --riverui-writable: %d %q", code, body)
	}
	if c := w.stop(t, 30*time.Second); c != 0 {
		t.Errorf("worker exit %d", c)
	}
}

// TestRiverUIWritable checks both settings of --riverui-writable against River UI's
// real API: read-only refuses to cancel a job and leaves it queued; writable cancels it.
func TestRiverUIWritable(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	psql(t, db.URL, `INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('c1', 1, 0, 1, '', 'x');
		SELECT cuzk.submit_proof(request_id => 'r1', circuit => 'c1', inputs => '{}'::jsonb);`)
	jobID := psql(t, db.URL, "SELECT id FROM river_job WHERE queue = 'cuzk';")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := &observability{pool: db.Pool, metrics: metrics.New(), backends: []string{"cpu"}}
	tokenFile, token := writeToken(t)
	for _, writable := range []bool{false, true} {
		h, err := o.handler(ctx, httpFlags{RiverUIWritable: writable, TokenFile: tokenFile}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		cancelJob := func(auth string) (int, string, string) {
			code, body := httpAuth(t, "POST", srv.URL+"/riverui/api/jobs/cancel", auth, `{"ids": ["`+jobID+`"]}`)
			return code, body, psql(t, db.URL, "SELECT state FROM river_job WHERE id = "+jobID+";")
		}
		if !writable {
			if code, body, state := cancelJob(""); code != http.StatusForbidden || state != "available" {
				t.Errorf("read-only: cancel answered %d %q, job %s", code, body, state)
			}
		} else {
			if code, body, state := cancelJob(""); code != http.StatusUnauthorized || state != "available" {
				t.Errorf("writable, no token: cancel answered %d %q, job %s", code, body, state)
			}
			if code, body, state := cancelJob("Bearer " + token); code != http.StatusOK || state != "cancelled" {
				t.Errorf("writable, with the token: cancel answered %d %q, job %s", code, body, state)
			}
		}
		srv.Close()
	}
}

// TestPprofFlag: Go's profiles are served only with --pprof; with it, the index and
// an execution trace (what the GPU host's profiling fetches) answer.
func TestPprofFlag(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := &observability{pool: db.Pool, metrics: metrics.New(), backends: []string{"cpu"}}
	tokenFile, token := writeToken(t)
	auth := "Bearer " + token
	for _, on := range []bool{false, true} {
		h, err := o.handler(ctx, httpFlags{Pprof: on, TokenFile: tokenFile}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		code, body := httpAuth(t, "GET", srv.URL+"/debug/pprof/", auth, "")
		served := code == 200 && strings.Contains(body, "goroutine")
		if served != on {
			t.Errorf("--pprof=%v: /debug/pprof/ answered %d, profiles listed: %v", on, code, served)
		}
		if on {
			code, body = httpAuth(t, "GET", srv.URL+"/debug/pprof/trace?seconds=0.2", auth, "")
			if code != 200 || !strings.HasPrefix(body, "go 1.") {
				t.Errorf("--pprof: trace answered %d %.40q", code, body)
			}
		}
		srv.Close()
	}
}

// /readyz names each key's state; an evicted key says why and that it loads again.
func TestKeyLineStates(t *testing.T) {
	for _, c := range []struct {
		k    worker.KeyState
		want string
	}{
		{worker.KeyState{Circuit: "c", Device: "cuda:0", State: worker.KeyResident, Total: 10, Elapsed: 3 * time.Millisecond},
			"key c on cuda:0: resident 10 bytes, 3ms"},
		{worker.KeyState{Circuit: "c", Device: "cuda:0", State: worker.KeyResident, Total: 10, Resident: 40, Precomputed: 26,
			Elapsed: 3 * time.Millisecond},
			"key c on cuda:0: resident 10 bytes, 3ms; 40 bytes on the device, 26 of them precomputed"},
		{worker.KeyState{Circuit: "c", State: worker.KeyFailed, Elapsed: time.Millisecond, Err: "damaged"},
			"key c files: failed after 1ms: damaged"},
		{worker.KeyState{Circuit: "c", Device: "cuda:1", State: worker.KeyEvicted, Total: 10, Err: "device reset: fault"},
			"key c on cuda:1: evicted (device reset: fault), loads again when next used"},
	} {
		if got := keyLine(c.k); got != c.want {
			t.Errorf("keyLine(%+v) = %q, want %q", c.k, got, c.want)
		}
	}
}

// writeToken writes a fresh token to a file of the test's and returns both.
func writeToken(t *testing.T) (file, token string) {
	t.Helper()
	token = "tok-" + strings.ReplaceAll(t.Name(), "/", "-") + "-0123456789"
	file = filepath.Join(t.TempDir(), "http-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, token
}

// TestWorkerHTTPNeedsTheToken runs a worker with --http given as a port alone,
// --riverui-writable and --pprof, its database URL carrying a password: it listens on
// loopback only; River UI's deletes and pauses and Go's profiles answer 401 without
// the token, changing nothing, and work with it (bearer or basic auth); no page it
// serves shows the password.
func TestWorkerHTTPNeedsTheToken(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	psql(t, db.URL, `INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('c1', 1, 0, 1, '', 'x');
		SELECT cuzk.submit_proof(request_id => 'r1', circuit => 'c1', inputs => '{}'::jsonb);
		SELECT cuzk.cancel_proof('r1');`)
	jobID := psql(t, db.URL, "SELECT id FROM river_job WHERE queue = 'cuzk';")
	const secret = "pw-never-served-8d1f"
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secret) // the server trusts the login: any password connects
	tokenFile, token := writeToken(t)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	base := "http://127.0.0.1:" + port
	dir := t.TempDir()
	w := startWorker(t, db.URL, "--database-url", u.String(), "--backend", "cpu", "--mem-budget", "1GiB",
		"--keys-dir", filepath.Join(dir, "keys"), "--cache-dir", filepath.Join(dir, "r1cs"),
		"--http", ":"+port, "--riverui-writable", "--pprof", "--http-token-file", tokenFile)
	waitHTTP(t, w, base+"/healthz")

	bearer := "Bearer " + token
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("operator:"+token))
	wrong := "Bearer " + token + "x"
	jobs := func() string { return psql(t, db.URL, "SELECT count(*) FROM river_job WHERE id = "+jobID+";") }
	paused := func() string {
		return psql(t, db.URL, "SELECT coalesce((SELECT paused_at IS NOT NULL FROM river_queue WHERE name = 'cuzk'), false);")
	}
	for _, auth := range []string{"", wrong} {
		if code, body := httpAuth(t, "POST", base+"/riverui/api/jobs/delete", auth, `{"ids": ["`+jobID+`"]}`); code != http.StatusUnauthorized || jobs() != "1" {
			t.Errorf("delete with %q: %d %q, job rows %s; want 401 and the job kept", auth, code, body, jobs())
		}
		if code, body := httpAuth(t, "PUT", base+"/riverui/api/queues/cuzk/pause", auth, `{}`); code != http.StatusUnauthorized || paused() != "f" {
			t.Errorf("pause with %q: %d %q, paused %s; want 401 and the queue running", auth, code, body, paused())
		}
		if code, _ := httpAuth(t, "GET", base+"/debug/pprof/goroutine?debug=1", auth, ""); code != http.StatusUnauthorized {
			t.Errorf("goroutine profile with %q: %d, want 401", auth, code)
		}
	}
	if code, body := httpAuth(t, "PUT", base+"/riverui/api/queues/cuzk/pause", basic, `{}`); code != http.StatusOK || paused() != "t" {
		t.Errorf("pause with basic auth: %d %q, paused %s", code, body, paused())
	}
	if code, body := httpAuth(t, "PUT", base+"/riverui/api/queues/cuzk/resume", bearer, `{}`); code != http.StatusOK || paused() != "f" {
		t.Errorf("resume with the bearer token: %d %q, paused %s", code, body, paused())
	}
	if code, body := httpAuth(t, "POST", base+"/riverui/api/jobs/delete", bearer, `{"ids": ["`+jobID+`"]}`); code != http.StatusOK || jobs() != "0" {
		t.Errorf("delete with the bearer token: %d %q, job rows %s", code, body, jobs())
	}
	if code, body := httpAuth(t, "GET", base+"/debug/pprof/goroutine?debug=1", bearer, ""); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("goroutine profile with the token: %d %.80q", code, body)
	}
	for _, page := range []string{"/debug/pprof/cmdline", "/debug/pprof/", "/", "/readyz", "/metrics", "/riverui/"} {
		code, body := httpAuth(t, "GET", base+page, bearer, "")
		if strings.Contains(body, secret) {
			t.Errorf("%s (%d) shows the database password", page, code)
		}
	}
	if c := w.stop(t, 30*time.Second); c != 0 {
		t.Errorf("worker exit %d", c)
	}
	if !strings.Contains(w.out.String(), "serving http addr=127.0.0.1:"+port) {
		t.Errorf("--http :%s does not listen on loopback only:\n%s", port, w.out.String())
	}
}

// TestWorkerRefusesUnguardedEndpoints: --riverui-writable and --pprof do not start
// without a token file of at least 16 characters (exit 2, one line naming the flag).
func TestWorkerRefusesUnguardedEndpoints(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--riverui-writable"}, "need --http-token-file"},
		{[]string{"--pprof"}, "need --http-token-file"},
		{[]string{"--pprof", "--http-token-file", short}, "the token has 8 characters, want at least 16"},
		{[]string{"--riverui-writable", "--http-token-file", filepath.Join(t.TempDir(), "none")}, "--http-token-file: open"},
	} {
		r := cuzkDB(t, db.URL, append([]string{"worker", "--backend", "cpu", "--mem-budget", "1GiB", "--http", freeAddr(t)}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// metricValue parses a Prometheus text sample's value.
func metricValue(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("metric value %q: %v", s, err)
	}
	return v
}
