package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/worker"
)

func ms(v float64) *float64 { return &v }

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, b)
	}
	return string(b)
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("metrics lack the line %q", l)
		}
	}
}

func TestAttemptPhasesAndOutcomes(t *testing.T) {
	m := metrics.New()
	m.AttemptFinished(&store.Attempt{Circuit: "synthetic-k10", Outcome: "succeeded",
		SynthMs: ms(1500), ProveMs: ms(250), TotalMs: ms(2000)})
	m.AttemptFinished(&store.Attempt{Circuit: "synthetic-k10", Outcome: "succeeded",
		SynthMs: ms(500), ProveMs: ms(750), TotalMs: ms(1000)})
	// A bad request fails in synthesis: later phases were never reached and are not observed.
	m.AttemptFinished(&store.Attempt{Circuit: "synthetic-k10", Outcome: "failed", SynthMs: ms(3), TotalMs: ms(4)})

	body := scrape(t, m.Handler())
	wantLines(t, body,
		`cuzk_proof_attempts_total{circuit="synthetic-k10",outcome="succeeded"} 2`,
		`cuzk_proof_attempts_total{circuit="synthetic-k10",outcome="failed"} 1`,
		`cuzk_phase_duration_seconds_count{circuit="synthetic-k10",phase="synth"} 3`,
		`cuzk_phase_duration_seconds_sum{circuit="synthetic-k10",phase="synth"} 2.003`,
		`cuzk_phase_duration_seconds_count{circuit="synthetic-k10",phase="prove"} 2`,
		`cuzk_phase_duration_seconds_sum{circuit="synthetic-k10",phase="prove"} 1`,
	)
	if strings.Contains(body, `phase="verify"`) {
		t.Error("a phase no attempt reached has a series")
	}
	if err := m.WatchBuild("v1.2.3 abcdef"); err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, m.Handler()), `cuzk_build_info{build="v1.2.3 abcdef"} 1`)
	if !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_cpu_seconds_total") {
		t.Error("runtime and process collectors missing")
	}
}

// Every phase of the phase table, the device phases inside prove too, has its series.
func TestEveryPhaseIsObserved(t *testing.T) {
	m := metrics.New()
	m.AttemptFinished(&store.Attempt{Circuit: "c", Outcome: "succeeded",
		QueueMs: ms(1), BatchWaitMs: ms(1), MemWaitMs: ms(1), SrsMs: ms(1), SynthMs: ms(1), ProveWaitMs: ms(1),
		ProveMs: ms(1), H2DMs: ms(1), NttMs: ms(1), MsmMs: ms(1), MsmG1Ms: ms(1), MsmG2Ms: ms(1),
		VerifyMs: ms(1), PersistMs: ms(1), TotalMs: ms(1)})
	body := scrape(t, m.Handler())
	for _, p := range phase.All() {
		wantLines(t, body, `cuzk_phase_duration_seconds_count{circuit="c",phase="`+p.Name+`"} 1`)
	}
}

func TestBudgetGauges(t *testing.T) {
	m := metrics.New()
	b := worker.NewBudget(1 << 30)
	if err := m.WatchBudget(b); err != nil {
		t.Fatal(err)
	}
	r, err := b.ReserveFor(context.Background(), worker.KindSynthesis, 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.ReserveFor(context.Background(), worker.KindKey, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, m.Handler()),
		"cuzk_mem_budget_reserved_bytes 3.3554432e+08", "cuzk_mem_budget_total_bytes 1.073741824e+09",
		`cuzk_mem_budget_kind_bytes{kind="synthesis"} 2.68435456e+08`, `cuzk_mem_budget_kind_bytes{kind="key"} 6.7108864e+07`)
	r.Release()
	wantLines(t, scrape(t, m.Handler()), "cuzk_mem_budget_reserved_bytes 6.7108864e+07",
		`cuzk_mem_budget_kind_bytes{kind="synthesis"} 0`, `cuzk_mem_budget_kind_peak_bytes{kind="synthesis"} 2.68435456e+08`,
		"cuzk_mem_budget_peak_bytes 3.3554432e+08")
	k.Release()
}

func TestQueueDepthFromDatabase(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('c1', 1, 0, 1, '', 'x')`)
	for _, id := range []string{"a", "b", "c"} {
		exec(`SELECT cuzk.submit_proof(request_id => $1, circuit => 'c1', inputs => '{}'::jsonb)`, id)
	}
	exec(`SELECT cuzk.submit_proof(request_id => 'u', circuit => 'c1', inputs => '{}'::jsonb, priority => 1)`)
	// One of them is being worked on.
	exec(`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
	       WHERE id = (SELECT min(id) FROM river_job WHERE queue = 'cuzk')`)

	m := metrics.New()
	if err := m.WatchQueue(db.Pool); err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, m.Handler()),
		`cuzk_queue_jobs{queue="cuzk",state="available"} 2`, `cuzk_queue_jobs{queue="cuzk",state="running"} 1`,
		`cuzk_queue_jobs{queue="cuzk",state="retryable"} 0`, `cuzk_queue_jobs{queue="cuzk_urgent",state="available"} 1`,
		`cuzk_queue_jobs{queue="cuzk_urgent",state="running"} 0`, "cuzk_queue_up 1")

	// With the database gone the scrape still answers, with the queue marked down.
	down, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	m2 := metrics.New()
	if err := m2.WatchQueue(down); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	body := scrape(t, m2.Handler())
	wantLines(t, body, "cuzk_queue_up 0")
	if strings.Contains(body, "cuzk_queue_jobs{") {
		t.Error("queue counts reported although the database is unreachable")
	}
	if d := time.Since(start); d > metrics.QueueTimeout+2*time.Second {
		t.Errorf("scrape took %s with the database down", d)
	}
}

func TestGPUGauges(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	m := metrics.New()
	err := m.WatchGPUs(devinfo.Fixed{
		{Index: 0, UUID: "GPU-aaa", At: time.Unix(1700000000, 0), GPUUtilPct: u(87), MemUtilPct: u(40),
			MemUsedBytes: 10 << 30, MemTotalBytes: 80 << 30, TemperatureC: u(64), PowerMW: u(350500)},
		// A device without utilization or temperature readings.
		{Index: 1, UUID: "GPU-bbb", At: time.Unix(1700000000, 0), MemUsedBytes: 1, MemTotalBytes: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := scrape(t, m.Handler())
	wantLines(t, body,
		`cuzk_gpu_utilization_ratio{gpu="0",uuid="GPU-aaa"} 0.87`,
		`cuzk_gpu_memory_used_bytes{gpu="0",uuid="GPU-aaa"} 1.073741824e+10`,
		`cuzk_gpu_memory_total_bytes{gpu="0",uuid="GPU-aaa"} 8.589934592e+10`,
		`cuzk_gpu_temperature_celsius{gpu="0",uuid="GPU-aaa"} 64`,
		`cuzk_gpu_power_watts{gpu="0",uuid="GPU-aaa"} 350.5`,
		`cuzk_gpu_memory_total_bytes{gpu="1",uuid="GPU-bbb"} 2`,
	)
	if strings.Contains(body, `cuzk_gpu_temperature_celsius{gpu="1"`) {
		t.Error("an unsupported reading is reported")
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "cuzk_gpu_utilization_ratio"); err != nil || n != 1 {
		t.Errorf("utilization series: %d, %v", n, err)
	}
}
