package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/internal/hostinfo"
	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/regress"
)

// recordedID is the bench id a `cuzk bench --record` run printed.
func recordedID(t *testing.T, r result) string {
	t.Helper()
	m := regexp.MustCompile(`recorded bench run (\d+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no recorded bench id in %s", r)
	}
	return m[1]
}

// wantCompared fails unless r is a finished comparison (exit 0, or 3 for a flagged
// phase, which two real configurations may well show) naming both sides.
func wantCompared(t *testing.T, r result, names ...string) {
	t.Helper()
	if r.code != 0 && r.code != exitRegression {
		t.Fatalf("comparison failed: %s", r)
	}
	for _, n := range names {
		if !strings.Contains(r.stdout, n) {
			t.Errorf("output does not name %q:\n%s", n, r.stdout)
		}
	}
	if (r.code == exitRegression) != strings.Contains(r.stderr, "cuzk: regression:") {
		t.Errorf("exit %d but stderr:\n%s", r.code, r.stderr)
	}
}

func TestBenchRecordThenCompare(t *testing.T) {
	db := pgtest.New(t)
	one := mustOK(t, cuzkDB(t, db.URL, "bench", "--circuit", "synthetic-k10", "--record", "--runs", "10", "--threads", "1", "--compare", "gnark"))
	lines := strings.Split(strings.TrimSpace(one.stdout), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "speedup_vs_gnark: ") {
		t.Errorf("--record --compare gnark must still end with the speedup line:\n%s", one.stdout)
	}
	two := mustOK(t, cuzkDB(t, db.URL, "bench", "--circuit", "synthetic-k10", "--record", "--runs", "10", "--threads", "2"))
	a, b := recordedID(t, one), recordedID(t, two)

	r := cuzkDB(t, db.URL, "timings", "--compare", "bench:"+a+"..bench:"+b)
	wantCompared(t, r, "A: bench:"+a+" = bench "+a+" (--backend cpu --threads 1)", "B: bench:"+b+" = bench "+b+" (--backend cpu --threads 2)")
	for _, phase := range []string{"synth", "prove", "msm", "total"} {
		if !regexp.MustCompile(`synthetic-k10\s+` + phase + `\s+10\s+10\s`).MatchString(r.stdout) {
			t.Errorf("no %s row with 10 runs a side:\n%s", phase, r.stdout)
		}
	}

	// The same runs through their config hashes, as JSON, with SQL's method; and SQL's
	// function agrees on every flag.
	hashes := strings.Fields(psql(t, db.URL, `SELECT config_hash FROM cuzk.bench_runs GROUP BY bench_id, config_hash ORDER BY bench_id`))
	if len(hashes) != 2 || hashes[0] == hashes[1] {
		t.Fatalf("config hashes of the two runs: %v, want two different", hashes)
	}
	if cpus := psql(t, db.URL, `SELECT string_agg(DISTINCT config->>'cpu', '|') FROM cuzk.bench_runs`); cpus != hostinfo.CPUModel() {
		t.Errorf("bench_runs config.cpu = %q, want this host's processor %q", cpus, hostinfo.CPUModel())
	}
	js := cuzkDB(t, db.URL, "timings", "--compare", "config:"+hashes[0]+"..config:"+hashes[1], "--json", "--method", "orderstat")
	wantCompared(t, js, `"a":"config:`+hashes[0])
	var rep regress.Report
	if err := json.Unmarshal([]byte(js.stdout), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, js.stdout)
	}
	sqlFlags := psql(t, db.URL, `SELECT string_agg(phase || '=' || flagged, ' ' ORDER BY phase)
	                               FROM cuzk.compare_timings('config', '`+hashes[0]+`', 'config', '`+hashes[1]+`')`)
	var cliFlags []string
	for _, row := range rep.Rows {
		if row.ChangePct == nil || row.NA != 10 || row.NB != 10 {
			t.Errorf("JSON row %+v: want 10 runs a side, compared", row)
		}
		cliFlags = append(cliFlags, row.Phase+"="+map[bool]string{true: "true", false: "false"}[row.Flagged])
	}
	if got := sortedJoin(cliFlags); got != sqlFlags {
		t.Errorf("flags: CLI %s, SQL %s", got, sqlFlags)
	}
}

func sortedJoin(s []string) string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return strings.Join(c, " ")
}

func TestBenchABComparesInterleavedArms(t *testing.T) {
	db := pgtest.New(t)
	r := cuzkDB(t, db.URL, "bench", "--circuit", "synthetic-k10", "--record", "--ab", "--threads 1", "--threads 2")
	id := recordedID(t, r)
	wantCompared(t, r, "A: bench:"+id+"/A = --threads 1", "B: bench:"+id+"/B = --threads 2", "run 10 B:")
	again := cuzkDB(t, db.URL, "timings", "--compare", "bench:"+id+"/A..bench:"+id+"/B")
	wantCompared(t, again, "bench "+id+"/A (--threads 1)", "bench "+id+"/B (--threads 2)")

	// An arm's flags are checked like the command's own.
	wantExit(t, cuzkDB(t, db.URL, "bench", "--circuit", "synthetic-k10", "--ab", "--threads 1", "--turbo"), exitUsage, "--ab")
	wantExit(t, cuzkDB(t, db.URL, "bench", "--circuit", "synthetic-k10", "--ab", "--threads 1"), exitUsage, "two quoted flag sets")
}

func TestCompareFlagsARegressionWithExit3(t *testing.T) {
	db := pgtest.New(t)
	insertTwoBuilds(t, db.URL)
	r := cuzkDB(t, db.URL, "timings", "--compare", "v1.0.0..ddddeeee")
	wantExit(t, r, exitRegression, "cuzk: regression: 1 phase slower beyond 5%: c synth +")
	wantCompared(t, r, "A: v1.0.0 = build v1.0.0 aaaabbbbcccc (40 timed)", "B: ddddeeee = build v1.1.0 ddddeeeeffff")
	if !regexp.MustCompile(`c\s+synth\s+40\s+40\s.*SLOWER`).MatchString(r.stdout) || strings.Count(r.stdout, "SLOWER") != 1 {
		t.Errorf("want synth, and only synth, SLOWER:\n%s", r.stdout)
	}
	// A higher threshold, a circuit with no timings, the reverse direction: nothing flagged.
	mustOK(t, cuzkDB(t, db.URL, "timings", "--compare", "build:v1.0.0..build:v1.1.0", "--threshold", "30"))
	mustOK(t, cuzkDB(t, db.URL, "timings", "--compare", "build:v1.1.0..build:v1.0.0"))
	if out := mustOK(t, cuzkDB(t, db.URL, "timings", "--compare", "v1.0.0..v1.1.0", "--circuit", "other")).stdout; !strings.Contains(out, "no timings to compare") {
		t.Errorf("--circuit other:\n%s", out)
	}
	// Windows: the first 40 hours against the last 40.
	wantExit(t, cuzkDB(t, db.URL, "timings", "--compare", "-100h/-39.5h..-39.5h/now"), exitRegression, "synth")
	// From SQL, as an orchestrator's role (cuzk_submitter) runs it.
	if got := psql(t, db.URL, `SET ROLE cuzk_submitter;
	        SELECT string_agg(phase, ',') FROM cuzk.compare_timings('build:v1.0.0..build:v1.1.0') WHERE flagged`); got != "synth" {
		t.Errorf("SQL flagged %q, want synth", got)
	}

	// Selectors the database cannot resolve are the caller's mistake.
	wantExit(t, cuzkDB(t, db.URL, "timings", "--compare", "build:v9..build:v1.0.0"), exitUsage, `no timings of a build matching "v9"`)
	wantExit(t, cuzkDB(t, db.URL, "timings", "--compare", "v1.0.0"), exitUsage, "want A..B")
	wantExit(t, cuzkDB(t, db.URL, "timings", "--compare", "config:zz..config:abcd"), exitUsage, "hex digits")
	wantExit(t, cuzkDB(t, db.URL, "timings", "--compare", "now/-1h..v1.0.0"), exitUsage, "is not before")
	wantExit(t, cuzkDB(t, db.URL, "timings", "--compare", "v1.0.0..v1.1.0", "--confidence", "1.5"), exitUsage, "confidence")
}

// insertTwoBuilds stores 40 succeeded attempts of each of two builds, as a worker does;
// the newer build's synthesis is 20% slower, its other phases unchanged.
func insertTwoBuilds(t *testing.T, url string) {
	t.Helper()
	psql(t, url, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('c', 1, 0, 1, '\x00', 'x');
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) SELECT 'r' || g, 'c', '{}' FROM generate_series(1, 80) g;
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, outcome, worker, build, config_hash, finished_at,
		                                 synth_ms, prove_ms, total_ms)
		SELECT 'r' || g, 1, 'c', 'succeeded', 'h/1', CASE WHEN g <= 40 THEN 'v1.0.0 aaaabbbbcccc' ELSE 'v1.1.0 ddddeeeeffff' END,
		       'abcdef012345', now() - interval '1 hour' * (80 - g),
		       100 * (1 + 0.02 * sin(g)) * CASE WHEN g > 40 THEN 1.2 ELSE 1 END, 300 + cos(g), 400 + sin(g)
		  FROM generate_series(1, 80) g;`)
}

func TestDashboardPanelComparesTheTwoLatestBuilds(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	panel := comparisonPanel(db.Pool)
	if c, err := panel(ctx); c != nil || err != nil {
		t.Fatalf("no builds yet: %+v, %v", c, err)
	}
	insertTwoBuilds(t, db.URL)
	c, err := panel(ctx)
	if err != nil || c == nil {
		t.Fatalf("panel: %+v, %v", c, err)
	}
	if c.Title != "v1.1.0 ddddeeeeffff (B) vs v1.0.0 aaaabbbbcccc (A)" {
		t.Errorf("title %q", c.Title)
	}
	var slower []string
	for _, row := range c.Rows {
		if len(row) != len(c.Columns) {
			t.Fatalf("row %v has %d cells for %d columns", row, len(row), len(c.Columns))
		}
		if row[len(row)-1] == "SLOWER" {
			slower = append(slower, row[2])
		}
	}
	if len(c.Rows) != 3 || strings.Join(slower, ",") != "synth" {
		t.Errorf("rows %v: want synth, prove, total with synth slower", c.Rows)
	}
	if !strings.Contains(c.Note, "1 of 3 phases slower") {
		t.Errorf("note %q", c.Note)
	}
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{Comparison: panel}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "SLOWER") || !strings.Contains(string(page), "v1.1.0 ddddeeeeffff (B)") {
		t.Errorf("dashboard: %s\n%s", resp.Status, page)
	}
}
