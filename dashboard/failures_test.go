package dashboard_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/internal/pgtest"
)

// longError is a 10 kB error: markup to be escaped, then one unbroken token that only
// wrapping anywhere keeps within the page.
var longError = `prove: <script>alert("x")</script> & more: ` + strings.Repeat("0123456789abcdef", 640)

// seedFailures writes a request that failed three times (the last with longError) and
// one that failed once, on a circuit whose attempts carry no GPU telemetry.
func seedFailures(t *testing.T, db *pgtest.DB) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('cpu-only', 10, 1, 10, '\x00', 'd');
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('flaky-1', 'cpu-only', '{}'), ('once-1', 'cpu-only', '{}');
		UPDATE cuzk.proof_requests SET state = 'failed', attempts = 3, finished_at = now() WHERE request_id = 'flaky-1';
		UPDATE cuzk.proof_requests SET state = 'succeeded', attempts = 2, finished_at = now() WHERE request_id = 'once-1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(context.Background(), `
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, error, worker, started_at, finished_at, total_ms) VALUES
		    ('flaky-1', 1, 'cpu-only', 'retryable', 'first error', 'w/1', now() - interval '30 min', now() - interval '29 min', 5),
		    ('flaky-1', 2, 'cpu-only', 'retryable', 'second error', 'w/1', now() - interval '20 min', now() - interval '19 min', 5),
		    ('flaky-1', 3, 'cpu-only', 'failed', $1, 'w/2', now() - interval '10 min', now() - interval '9 min', 5),
		    ('once-1', 1, 'cpu-only', 'retryable', 'cuda: out of memory', 'w/1', now() - interval '5 min', now() - interval '4 min', 5),
		    ('once-1', 2, 'cpu-only', 'succeeded', NULL, 'w/1', now() - interval '3 min', now() - interval '2 min', 5)`,
		longError); err != nil {
		t.Fatal(err)
	}
}

// failureRows are the failures table's rows, header left out.
func failureRows(t *testing.T, page string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<table id="failures">.*?</table>`).FindString(page)
	if m == "" {
		t.Fatalf("no failures table in the page")
	}
	rows := regexp.MustCompile(`(?s)<tr><td>.*?</tr>`).FindAllString(m, -1)
	return rows
}

// dashboardPage is the dashboard of db with default options.
func dashboardPage(t *testing.T, db *pgtest.DB) string {
	t.Helper()
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{}))
	defer srv.Close()
	code, page := get(t, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%.2000s", code, page)
	}
	return page
}

func TestDashboardFailuresOneRowPerRequest(t *testing.T) {
	db := pgtest.New(t)
	seedFailures(t, db)
	page := dashboardPage(t, db)
	rows := failureRows(t, page)
	if len(rows) != 2 {
		t.Fatalf("%d failure rows, want one per request (2):\n%s", len(rows), strings.Join(rows, "\n"))
	}
	once, flaky := rows[0], rows[1] // latest failure first
	if !strings.Contains(flaky, `<td class="rid">flaky-1</td>`) || !strings.Contains(flaky, `<td class="num">3</td>`) ||
		!strings.Contains(flaky, `<td class="bad" title="latest failed attempt: failed">failed</td>`) || !strings.Contains(flaky, "<td>w/2</td>") {
		t.Errorf("flaky-1's row does not show its 3 attempts, its state and the last failure's worker:\n%.600s", flaky)
	}
	if strings.Contains(flaky, "first error") || strings.Contains(flaky, "second error") {
		t.Errorf("flaky-1's row shows an older attempt's error")
	}
	// once-1 failed once and then succeeded: its row counts both attempts and says so.
	if !strings.Contains(once, `<td class="rid">once-1</td>`) || !strings.Contains(once, `<td class="num">2</td>`) ||
		!strings.Contains(once, `<td title="latest failed attempt: retryable">succeeded</td>`) || !strings.Contains(once, "cuda: out of memory") {
		t.Errorf("once-1's row:\n%.600s", once)
	}

	// The 10 kB error: a short escaped summary, the whole text (escaped) behind it.
	summary := regexp.MustCompile(`(?s)<summary[^>]*>(.*?)</summary>`).FindStringSubmatch(flaky)
	if summary == nil {
		t.Fatalf("the long error is not folded into a details element:\n%.600s", flaky)
	}
	if shown := html.UnescapeString(strings.TrimSuffix(summary[1], "…")); len(shown) > 400 || !strings.HasPrefix(longError, shown) {
		t.Errorf("summary shows %d bytes %.80q…, want the error's start, cut to a few hundred bytes", len(shown), shown)
	}
	full := regexp.MustCompile(`(?s)</summary>(.*?)</details>`).FindStringSubmatch(flaky)
	if full == nil || html.UnescapeString(full[1]) != longError {
		t.Errorf("the details element does not hold the whole error")
	}
	if strings.Contains(page, "<script>") || !strings.Contains(flaky, "&lt;script&gt;") {
		t.Errorf("the error's markup is not escaped")
	}
	if !regexp.MustCompile(`#failures td \{[^}]*overflow-wrap: anywhere`).MatchString(page) ||
		!strings.Contains(page, "table-layout: fixed") {
		t.Errorf("the failures table's cells are not set to wrap anywhere in a fixed layout")
	}
	if strings.Contains(page, "GPU utilization") || strings.Contains(page, `class="gpu-util"`) {
		t.Errorf("a GPU utilization chart is drawn without any GPU telemetry")
	}
}

// The seeded attempts carry GPU telemetry (93% busy): each period with proofs gets a
// utilization bar beside the phase bars, and only the circuit that has readings.
func TestDashboardGPUUtilizationChart(t *testing.T) {
	db := pgtest.New(t)
	seed(t, db)
	page := dashboardPage(t, db)
	if n := strings.Count(page, `class="gpu-util"`); n != 30 {
		t.Errorf("%d GPU utilization bars, want 30 (one per period with proofs)", n)
	}
	if !strings.Contains(page, "GPU 93% busy (mean of 2 readings)") {
		t.Errorf("the bars do not give the periods' mean utilization")
	}
	other := regexp.MustCompile(`(?s)<section class="circuit" id="circuit-synthetic-k10">.*?</section>`).FindString(page)
	if other == "" || strings.Contains(other, "GPU utilization") {
		t.Errorf("the circuit without telemetry has a GPU chart (or is missing):\n%.300s", other)
	}
}
