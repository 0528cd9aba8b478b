package phase_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/phase"
)

// ms is the value the test stores in phase p's column: it tells which column a view
// read a phase from.
func ms(p phase.Phase) float64 { return float64(p.Ord*100 + 7) }

// sample is one row of a timing view: a phase, its ord and its milliseconds.
type sample struct {
	Ord   int
	Phase string
	Ms    float64
}

func (s sample) String() string { return fmt.Sprintf("%d:%s=%g", s.Ord, s.Phase, s.Ms) }

func want(ps []phase.Phase) []sample {
	out := make([]sample, len(ps))
	for i, p := range ps {
		out[i] = sample{p.Ord, p.Name, ms(p)}
	}
	return out
}

// The timing views and functions in the migrations name, order and read the phases as
// package phase lists them: each of its phases once, from its own column.
func TestViewsAgreeWithTheTable(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	all := phase.All()

	// Every millisecond column of an attempt is a phase, and every phase a column; a
	// bench run has some of them and no other.
	var tableCols []string
	for _, p := range all {
		tableCols = append(tableCols, p.Column)
	}
	attemptCols := msColumns(t, db, "proof_attempts")
	if !sameSet(attemptCols, tableCols) {
		t.Fatalf("cuzk.proof_attempts has the millisecond columns %v, the phase table %v", attemptCols, tableCols)
	}
	benchCols := msColumns(t, db, "bench_runs")
	for _, c := range benchCols {
		if !slices.Contains(tableCols, c) {
			t.Errorf("cuzk.bench_runs has %s, which is no phase's column", c)
		}
	}

	// One succeeded attempt with a distinct value in each phase's column, and one bench
	// run with the phase columns cuzk.bench_runs has.
	set := make([]string, len(all))
	vals := make([]string, len(all))
	for i, p := range all {
		set[i] = p.Column
		vals[i] = fmt.Sprint(ms(p))
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		VALUES ('c', 1, 0, 1, '\x00', 'd');
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('r', 'c', '{}');
		INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, outcome, finished_at, `+
		strings.Join(set, ", ")+`)
		VALUES ('r', 1, 'c', 'w', 'succeeded', now(), `+strings.Join(vals, ", ")+`)`); err != nil {
		t.Fatal(err)
	}
	var benchPhases []phase.Phase
	set, vals = nil, nil
	for _, p := range all {
		if slices.Contains(benchCols, p.Column) {
			benchPhases = append(benchPhases, p)
			set = append(set, p.Column)
			vals = append(vals, fmt.Sprint(ms(p)))
		}
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.bench_runs (bench_id, arm, run, circuit, worker, backend, started_at, finished_at, `+
		strings.Join(set, ", ")+`)
		VALUES (nextval('cuzk.bench_id_seq'), 'A', 1, 'c', 'w', 'cpu', now(), now(), `+strings.Join(vals, ", ")+`)`); err != nil {
		t.Fatal(err)
	}

	views := []struct {
		name, query string
		want        []phase.Phase
	}{
		{"cuzk.attempt_phases", `SELECT ord, phase, ms FROM cuzk.attempt_phases ORDER BY ord`, all},
		{"cuzk.phase_samples of attempts", `SELECT ord, phase, ms FROM cuzk.phase_samples WHERE source = 'worker' ORDER BY ord`, all},
		{"cuzk.phase_samples of bench runs", `SELECT ord, phase, ms FROM cuzk.phase_samples WHERE source = 'bench' ORDER BY ord`, benchPhases},
		// timing_history returns no ord but is ordered by it; with one attempt, each
		// phase's mean is its value.
		{"cuzk.timing_history", `SELECT row_number() OVER ()::int, phase, mean_ms FROM cuzk.timing_history('1 hour', now() - interval '1 hour', 'c')`, all},
	}
	for _, v := range views {
		rows, err := db.Pool.Query(ctx, v.query)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[sample])
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want(v.want)) {
			t.Errorf("%s disagrees with the phase table:\n got %v\nwant %v", v.name, got, want(v.want))
		}
	}

	// attempt_stats (and so attempt_hours) holds per-phase sums and counts in arrays
	// in the table's order.
	var sums []float64
	var counts []int64
	if err := db.Pool.QueryRow(ctx, `
		SELECT sums, counts FROM cuzk.attempt_stats(now() - interval '1 hour', now() + interval '1 hour', '1 hour')`).
		Scan(&sums, &counts); err != nil {
		t.Fatal(err)
	}
	var wantSums []float64
	for _, p := range all {
		wantSums = append(wantSums, ms(p))
	}
	if fmt.Sprint(sums) != fmt.Sprint(wantSums) {
		t.Errorf("cuzk.attempt_stats sums are not in the table's order:\n got %v\nwant %v", sums, wantSums)
	}
	if len(counts) != len(all) || slices.ContainsFunc(counts, func(n int64) bool { return n != 1 }) {
		t.Errorf("cuzk.attempt_stats counts %v, want one per phase (%d)", counts, len(all))
	}
}

// msColumns are the double precision columns of cuzk.table whose names end in _ms.
func msColumns(t *testing.T, db *pgtest.DB, table string) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `
		SELECT column_name FROM information_schema.columns
		 WHERE table_schema = 'cuzk' AND table_name = $1
		   AND data_type = 'double precision' AND column_name LIKE '%\_ms'
		 ORDER BY ordinal_position`, table)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) == 0 {
		t.Fatalf("cuzk.%s has no millisecond column", table)
	}
	return cols
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
