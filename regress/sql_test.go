package regress

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// insertAttempts stores s as succeeded proof_attempts rows of build, one request each,
// the way a worker leaves them.
func insertAttempts(t *testing.T, ctx context.Context, db *pgtest.DB, build string, s Samples) {
	t.Helper()
	n := 0
	for _, v := range s {
		n = max(n, len(v))
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs)
		SELECT $1 || '-' || g, 'c', '{}' FROM generate_series(1, $2) g`, build, n); err != nil {
		t.Fatalf("insert requests of %s: %v", build, err)
	}
	cols := []string{"request_id", "attempt", "circuit", "outcome", "worker", "build", "config_hash", "finished_at"}
	for _, p := range Phases() {
		cols = append(cols, p+"_ms")
	}
	rows := make([][]any, n)
	for i := range rows {
		row := []any{fmt.Sprintf("%s-%d", build, i+1), 1, "c", "succeeded", "test/1", build, "0123456789ab", nil}
		for _, p := range Phases() {
			v := s[Key{Source: "worker", Circuit: "c", Phase: p}]
			if i < len(v) {
				row = append(row, v[i])
			} else {
				row = append(row, nil)
			}
		}
		rows[i] = row
	}
	if _, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"cuzk", "proof_attempts"}, cols, pgx.CopyFromRows(rows)); err != nil {
		t.Fatalf("copy attempts of %s: %v", build, err)
	}
}

type sqlRow struct {
	Source, Circuit, Phase string
	NA, NB                 int
	MedA, MedB, P95A, P95B *float64
	Change, Lo, Hi         *float64
	Flagged, Faster        bool
	Note                   *string
}

func TestSQLAgreesWithPackage(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
	                                VALUES ('c', 1, 0, 1, '\x00', 'none')`); err != nil {
		t.Fatal(err)
	}
	// Two shifted datasets and three unchanged ones; srs sits at a few tens of µs and
	// one dataset has too few samples in one phase, to cover the edges.
	type dataset struct {
		shifted string
		nB      int
	}
	sets := []dataset{{"synth", 200}, {"msm_g2", 200}, {"", 200}, {"", 200}, {"", 7}}
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([][2]Samples, len(sets))
	for i, ds := range sets {
		a, b := Samples{}, Samples{}
		draw(rng, a, 200, "", 1)
		draw(rng, b, ds.nB, ds.shifted, 1.15)
		insertAttempts(t, ctx, db, fmt.Sprintf("ds%d-a", i), a)
		insertAttempts(t, ctx, db, fmt.Sprintf("ds%d-b", i), b)
		data[i] = [2]Samples{a, b}
	}
	for i, ds := range sets {
		spec := fmt.Sprintf("build:ds%d-a..build:ds%d-b", i, i)
		rows, err := db.Pool.Query(ctx, `SELECT * FROM cuzk.compare_timings($1)`, spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[sqlRow])
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		ord := Defaults()
		ord.Method = OrderStat
		want, err := Compare(data[i][0], data[i][1], ord)
		if err != nil {
			t.Fatal(err)
		}
		boot, err := Compare(data[i][0], data[i][1], Defaults())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Rows) {
			t.Fatalf("%s: SQL gave %d rows, package %d", spec, len(got), len(want.Rows))
		}
		var flagged []string
		for j, g := range got {
			w, b := want.Rows[j], boot.Rows[j]
			if g.Phase != w.Phase || g.NA != w.NA || g.NB != w.NB {
				t.Fatalf("%s row %d: SQL %s n=%d/%d, package %s n=%d/%d", spec, j, g.Phase, g.NA, g.NB, w.Phase, w.NA, w.NB)
			}
			for _, f := range []struct {
				name string
				s, p *float64
			}{{"median A", g.MedA, w.MedianA}, {"median B", g.MedB, w.MedianB}, {"p95 A", g.P95A, w.P95A},
				{"p95 B", g.P95B, w.P95B}, {"change", g.Change, w.ChangePct}, {"ci low", g.Lo, w.CILowPct}, {"ci high", g.Hi, w.CIHighPct}} {
				if (f.s == nil) != (f.p == nil) || f.s != nil && math.Abs(*f.s-*f.p) > 1e-6*math.Max(1, math.Abs(*f.p)) {
					t.Errorf("%s %s %s: SQL %v, package %v", spec, g.Phase, f.name, deref(f.s), deref(f.p))
				}
			}
			if g.Flagged != w.Flagged || g.Faster != w.Faster || (g.Note != nil) != (w.Note != "") {
				t.Errorf("%s %s: SQL flagged=%v faster=%v note=%v, package (orderstat) %v %v %q", spec, g.Phase, g.Flagged, g.Faster, deref(g.Note), w.Flagged, w.Faster, w.Note)
			}
			if g.Flagged != b.Flagged {
				t.Errorf("%s %s: SQL flagged=%v, package (bootstrap) %v (interval %v..%v)", spec, g.Phase, g.Flagged, b.Flagged, deref(b.CILowPct), deref(b.CIHighPct))
			}
			if g.Flagged {
				flagged = append(flagged, g.Phase)
			}
		}
		switch {
		case ds.nB < 10:
			if len(flagged) != 0 || got[0].Note == nil {
				t.Errorf("%s: with %d samples in B nothing is compared; got flags %v, note %v", spec, ds.nB, flagged, deref(got[0].Note))
			}
		case ds.shifted == "":
			if len(flagged) != 0 {
				t.Errorf("%s: unchanged data flagged %v", spec, flagged)
			}
		default:
			if len(flagged) != 1 || flagged[0] != ds.shifted {
				t.Errorf("%s: flagged %v, want [%s]", spec, flagged, ds.shifted)
			}
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
