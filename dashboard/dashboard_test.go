package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/internal/pgtest"
)

const circuit = "merkle-poseidon2-d8-c2"

// seed writes what a few hours of a worker's life leave in the database: succeeded
// attempts (two every 6 minutes for 3 hours), a failed request, a retried one, a live GPU
// worker with telemetry and a stopped worker.
func seed(t *testing.T, db *pgtest.DB) {
	t.Helper()
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
	      VALUES ($1, 123456, 3, 130000, '\x00', 'd'), ('synthetic-k10', 1024, 1, 1100, '\x00', 'd')`, circuit)
	// One clock reading for every row, so the two attempts of a pair share a period
	// (statements' own now() differ by milliseconds, which can straddle a boundary).
	var base time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT now()").Scan(&base); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		rid := fmt.Sprintf("ok-%d", i)
		mins := (i / 2) * 6 // two proofs per 6 minutes, so p50 and p95 differ
		exec(`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ($1, $2, '{}')`, rid, circuit)
		exec(`UPDATE cuzk.proof_requests SET state = 'succeeded', attempts = 1, finished_at = now() - make_interval(mins => $2)
		       WHERE request_id = $1`, rid, mins)
		synth := 800.0 + float64(i%5)*100
		prove := 1500.0 + float64(i%3)*400 + float64(i%2)*900
		exec(`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, backend, device,
		          started_at, finished_at, queue_ms, batch_wait_ms, mem_wait_ms, srs_ms, synth_ms, prove_wait_ms,
		          prove_ms, ntt_ms, msm_ms, verify_ms, persist_ms, total_ms, telemetry)
		      VALUES ($1, 1, $2, 'succeeded', 'gpu-host/7', 'cuda', 'NVIDIA H200 GPU-1234',
		          $6::timestamptz - make_interval(mins => $3, secs => 10), $6::timestamptz - make_interval(mins => $3),
		          40, 20, 1, 5, $4::float8, 30, $5::float8, $5::float8 * 0.2, $5::float8 * 0.7, 3, 6, 105 + $4::float8 + $5::float8,
		          '{"index": 0, "uuid": "GPU-1234", "at": "2026-01-01T00:00:00Z", "gpu_util_pct": 93, "mem_used_bytes": 21474836480, "mem_total_bytes": 150323855360, "temperature_c": 61}')`,
			rid, circuit, mins, synth, prove, base)
	}
	exec(`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('bad-1', $1, '{}')`, circuit)
	exec(`UPDATE cuzk.proof_requests SET state = 'failed', attempts = 1, finished_at = now(),
	             last_error = 'inputs: field "Root": not below the modulus' WHERE request_id = 'bad-1'`)
	exec(`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, error, worker, finished_at, synth_ms, total_ms)
	      VALUES ('bad-1', 1, $1, 'failed', 'inputs: field "Root": not below the modulus', 'gpu-host/7', now(), 2, 3)`, circuit)
	exec(`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, attempts) VALUES ('retry-1', 'synthetic-k10', '{}', 1)`)
	exec(`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, error, worker, finished_at)
	      VALUES ('retry-1', 1, 'synthetic-k10', 'retryable', 'cuda: out of memory', 'gpu-host/7', now() - interval '1 minute')`)
	exec(`INSERT INTO cuzk.workers (worker, host, pid, backend, devices, config)
	      VALUES ('gpu-host/7', 'gpu-host', 7, 'cuda:0', '["NVIDIA H200 GPU-1234"]', '{"mem_budget": 21474836480, "max_batch": 4}'),
	             ('old-host/1', 'old-host', 1, 'cpu', '["cpu (2 cores)"]', '{}')`)
	exec(`UPDATE cuzk.workers SET stopped_at = now() WHERE worker = 'old-host/1'`)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestDashboardFromDatabase(t *testing.T) {
	db := pgtest.New(t)
	seed(t, db)
	var cmp dashboard.ComparisonFunc = func(context.Context) (*dashboard.Comparison, error) {
		return &dashboard.Comparison{Title: "build B vs build A", Columns: []string{"circuit", "change"},
			Rows: [][]string{{circuit, "-12%"}}}, nil
	}
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{Comparison: cmp}))
	defer srv.Close()

	code, body := get(t, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for _, want := range []string{
		`<h3>` + circuit + `</h3>`, "synthetic-k10", "bars of 5m",
		"attempts in the window: 60 succeeded", "1 failed", "<b>60</b> succeeded", // the window's counts of the busy circuit
		"not below the modulus", "cuda: out of memory", // recent failures, both kinds
		"gpu-host/7", "20 GiB", // live worker and its budget
		"NVIDIA H200 GPU-1234", "93%", "61 °C", // GPU telemetry from the attempt rows
		"build B vs build A", "-12%", // the comparison provider's panel
		`class="p50"`, `class="p95"`, `class="throughput"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	if strings.Contains(body, "old-host/1") {
		t.Error("a stopped worker is listed as live")
	}
	// 3 hours in 5-minute bars: one stacked bar per period that has proofs (30 pairs,
	// 6 minutes apart, each pair in its own period), each with every stacked phase.
	for _, ph := range dashboard.StackPhases() {
		if n := strings.Count(body, `class="phase-`+ph+`"`); n != 30 {
			t.Errorf("%d %s segments, want 30", n, ph)
		}
	}
	if n := strings.Count(body, `class="throughput"`); n != 30 {
		t.Errorf("%d throughput bars, want 30", n)
	}
	// One failed attempt of each circuit, drawn on its throughput chart.
	if n := strings.Count(body, `class="failed"`); n != 2 {
		t.Errorf("%d failure bars, want 2", n)
	}

	// The window is the operator's to choose; nonsense is refused.
	if code, body := get(t, srv.URL+"/?window=1h"); code != http.StatusOK || !strings.Contains(body, "showing 1h") {
		t.Errorf("?window=1h: %d", code)
	}
	if code, _ := get(t, srv.URL+"/?window=banana"); code != http.StatusBadRequest {
		t.Errorf("?window=banana: %d, want 400", code)
	}
	// Days past a Duration's range (106752d overflows it) and windows past ten years.
	for _, w := range []string{"106752d", "3651d", "87601h", "9223372036854775807d"} {
		if code, body := get(t, srv.URL+"/?window="+w); code != http.StatusBadRequest || !strings.Contains(body, "3650d") {
			t.Errorf("?window=%s: %d %q, want 400 naming the longest window", w, code, body)
		}
	}
	if code, body := get(t, srv.URL+"/?window=3650d"); code != http.StatusOK || !strings.Contains(body, "showing 3650d") {
		t.Errorf("?window=3650d: %d, want 200 showing 3650d", code)
	}
	if resp, err := http.Post(srv.URL+"/", "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %v %v, want 405", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, _ := get(t, srv.URL+"/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing: %d, want 404", code)
	}
}

func TestDashboardEmptyDatabase(t *testing.T) {
	db := pgtest.New(t)
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{}))
	defer srv.Close()
	code, body := get(t, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for _, want := range []string{"no proof requests yet", "no circuits registered", "no worker has reported"} {
		if !strings.Contains(body, want) {
			t.Errorf("empty dashboard lacks %q", want)
		}
	}
	if strings.Contains(body, "build-comparison") {
		t.Error("the comparison panel shows without a provider")
	}
}

func TestDashboardDatabaseDown(t *testing.T) {
	db := pgtest.New(t)
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{QueryTimeout: 3 * time.Second}))
	defer srv.Close()
	db.Pool.Close()
	code, body := get(t, srv.URL+"/")
	if code != http.StatusServiceUnavailable || !regexp.MustCompile(`dashboard: .*closed`).MatchString(body) {
		t.Errorf("with the pool closed: %d %q, want 503 naming the failed read", code, body)
	}
}

func TestDashboardLiveGPUs(t *testing.T) {
	db := pgtest.New(t)
	util, temp, power := uint32(77), uint32(58), uint32(412000)
	live := devinfo.Fixed{{Index: 1, UUID: "GPU-live", At: time.Now(), GPUUtilPct: &util, TemperatureC: &temp,
		PowerMW: &power, MemUsedBytes: 3 << 30, MemTotalBytes: 80 << 30}}
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{GPUs: live}))
	defer srv.Close()
	code, body := get(t, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for _, want := range []string{"1 GPU-live", "this worker (live)", "77%", "58 °C", "412 W", "3.0 GiB / 80 GiB"} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks the live reading %q", want)
		}
	}
}

// With more attempts in the window than the phase table reads, the table says it is a
// sample and counts exactly the sample; the charts still count every attempt.
func TestDashboardPhaseTableSamplesLargeWindows(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const n = 20005
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('big', 10, 1, 10, '\x00', 'd');
		ALTER TABLE cuzk.proof_requests DISABLE TRIGGER USER;
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, state)
		SELECT 'r' || g, 'big', '{}', 'succeeded' FROM generate_series(1, 20005) g;
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, outcome, finished_at, synth_ms, prove_ms, total_ms)
		SELECT 'r' || g, 1, 'big', 'w', 'succeeded', now() - g * interval '100 ms', 1, 2, 3 FROM generate_series(1, 20005) g;`); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{}))
	defer srv.Close()
	code, page := get(t, srv.URL+"/?window=1h")
	if code != http.StatusOK {
		t.Fatalf("status %d:\n%s", code, page)
	}
	if !strings.Contains(page, "latest 20000 succeeded attempts in the window") {
		t.Errorf("the phase table does not say it is a sample")
	}
	if !regexp.MustCompile(`<td>total</td><td class="num">20000</td>`).MatchString(page) {
		t.Errorf("the phase table's total row does not count the 20000 sampled attempts")
	}
	if !strings.Contains(page, fmt.Sprintf("%d succeeded", n)) {
		t.Errorf("the circuit's header does not count all %d attempts in the window", n)
	}
}

// A stacked phase without a colour would be drawn in the default fill, unlike its legend.
func TestEveryStackedPhaseHasAColour(t *testing.T) {
	for _, ph := range dashboard.StackPhases() {
		if dashboard.PhaseColors[ph] == "" {
			t.Errorf("stacked phase %s has no colour", ph)
		}
	}
}
