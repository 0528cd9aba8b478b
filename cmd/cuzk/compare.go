package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/regress"
)

// exitRegression is the exit status when a comparison flags a phase, so deploy scripts
// can gate on it; 1 and 2 keep their meaning.
const exitRegression = 3

// compareFlags are the --compare options of `cuzk timings`.
type compareFlags struct {
	Compare    rawValue `placeholder:"A..B" help:"Compare per-phase timings of two sets of attempts and bench runs; each side is build:V (version, revision prefix or full build), config:HASH (prefix), bench:ID[/A|/B], or a window FROM/TO (timestamps, 'now' or intervals from now like -7d); a bare value is accepted when it matches one kind. Exits 3 when a phase is slower beyond --threshold."`
	Threshold  float64  `default:"5" help:"With --compare: slowdown in % that counts as a regression."`
	Confidence float64  `default:"0.95" help:"With --compare: level of the change's interval."`
	MinN       int      `name:"min-n" default:"10" help:"With --compare: fewest samples on each side to compare a phase."`
	Method     string   `enum:"bootstrap,orderstat" default:"bootstrap" help:"With --compare: interval method; orderstat is what SQL's cuzk.compare_timings computes."`
}

func (f compareFlags) options(circuit string) (regress.Options, error) {
	o := regress.Defaults()
	o.ThresholdPct, o.Confidence, o.MinN, o.Method, o.Circuit = f.Threshold, f.Confidence, f.MinN, regress.Method(f.Method), circuit
	if err := o.Validate(); err != nil {
		return o, usageError{err.Error()}
	}
	return o, nil
}

// rawValue is a flag value taken as it is, so that a window from now ("-7d/now..")
// needs no "=": kong's own string flags refuse values that start with "-".
type rawValue string

func (v *rawValue) Decode(ctx *kong.DecodeContext) error {
	t := ctx.Scan.Pop()
	s, ok := t.Value.(string)
	if t.IsEOL() || !ok {
		return errors.New("want a value")
	}
	*v = rawValue(s)
	return nil
}

// compare runs `cuzk timings --compare A..B`.
func (f compareFlags) compare(ctx context.Context, g *globals, circuit string, asJSON bool) error {
	parts := strings.Split(string(f.Compare), "..")
	if len(parts) != 2 || strings.TrimSpace(parts[0]) == "" || strings.TrimSpace(parts[1]) == "" {
		return usagef("--compare %q: want A..B, e.g. build:v1.4.0..build:v1.5.0", f.Compare)
	}
	opts, err := f.options(circuit)
	if err != nil {
		return err
	}
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	var sides [2]regress.Samples
	var names [2]string
	for i, sel := range parts {
		if sides[i], names[i], err = loadSelection(ctx, pool, strings.TrimSpace(sel)); err != nil {
			return err
		}
	}
	rep, err := regress.Compare(sides[0], sides[1], opts)
	if err != nil {
		return err
	}
	rep.A, rep.B = names[0], names[1]
	return printReport(g, rep, asJSON)
}

// loadSelection reads the timings a selector stands for, resolved by the same SQL that
// cuzk.compare_timings uses, and a description naming them.
func loadSelection(ctx context.Context, pool *pgxpool.Pool, sel string) (regress.Samples, string, error) {
	var desc string
	if err := pool.QueryRow(ctx, "SELECT description FROM cuzk.resolve_selector($1)", sel).Scan(&desc); err != nil {
		return nil, "", selectorErr(sel, err)
	}
	rows, err := pool.Query(ctx, "SELECT source, circuit, phase, ms FROM cuzk.timing_samples($1)", sel)
	if err != nil {
		return nil, "", selectorErr(sel, err)
	}
	defer rows.Close()
	s := regress.Samples{}
	var k regress.Key
	var ms float64
	n := 0
	for rows.Next() {
		if err := rows.Scan(&k.Source, &k.Circuit, &k.Phase, &ms); err != nil {
			return nil, "", fmt.Errorf("read timings of %s: %w", sel, err)
		}
		s.Add(k, ms)
		if k.Phase == "total" {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, "", selectorErr(sel, err)
	}
	return s, fmt.Sprintf("%s = %s (%d timed)", sel, desc, n), nil
}

// selectorErr makes a selector the database rejected a usage error (exit 2).
func selectorErr(sel string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "22023" { // invalid_parameter_value
		return usageError{sqlErr(sel, err).Error()}
	}
	return sqlErr("timings of "+sel, err)
}

// printReport writes the report as a table or JSON; when a phase is flagged it returns
// an exitError with exitRegression.
func printReport(g *globals, rep *regress.Report, asJSON bool) error {
	if err := writeReport(g.stdout, rep, asJSON); err != nil {
		return err
	}
	if len(rep.Flagged()) > 0 {
		return exitError{code: exitRegression, msg: "regression: " + rep.Summary()}
	}
	return nil
}

func writeReport(w io.Writer, rep *regress.Report, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rep)
	}
	return rep.WriteTable(w)
}

// comparisonPanel fills the dashboard's panel: the two builds whose workers most
// recently succeeded, compared by cuzk.compare_timings (order statistics: a sort per
// series, cheap enough for every page view, where a bootstrap would not be).
func comparisonPanel(pool *pgxpool.Pool) dashboard.ComparisonFunc {
	return func(ctx context.Context) (*dashboard.Comparison, error) {
		rows, err := pool.Query(ctx, `
			SELECT build FROM cuzk.proof_attempts
			 WHERE outcome = 'succeeded' AND build IS NOT NULL
			 GROUP BY build ORDER BY max(finished_at) DESC LIMIT 2`)
		if err != nil {
			return nil, fmt.Errorf("recent builds: %w", err)
		}
		builds, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("recent builds: %w", err)
		}
		if len(builds) < 2 {
			return nil, nil
		}
		older, newer := builds[1], builds[0]
		rows, err = pool.Query(ctx, `
			SELECT source, circuit, phase, n_a, n_b, median_a_ms, median_b_ms, change_pct, ci_low_pct, ci_high_pct, flagged, faster
			  FROM cuzk.compare_timings('build', $1, 'build', $2)
			 WHERE note IS NULL`, older, newer)
		if err != nil {
			return nil, fmt.Errorf("compare %s with %s: %w", older, newer, err)
		}
		cmp := &dashboard.Comparison{
			Title:   fmt.Sprintf("%s (B) vs %s (A)", newer, older),
			Columns: []string{"source", "circuit", "phase", "n A", "n B", "median A ms", "median B ms", "change", "95% interval", ""},
		}
		var source, circuit, phase string
		var na, nb int
		var ma, mb, ch, lo, hi float64
		var flagged, faster bool
		var slower int
		_, err = pgx.ForEachRow(rows, []any{&source, &circuit, &phase, &na, &nb, &ma, &mb, &ch, &lo, &hi, &flagged, &faster}, func() error {
			verdict := ""
			switch {
			case flagged:
				verdict, slower = "SLOWER", slower+1
			case faster:
				verdict = "faster"
			}
			cmp.Rows = append(cmp.Rows, []string{source, circuit, phase, fmt.Sprint(na), fmt.Sprint(nb),
				fmt.Sprintf("%.1f", ma), fmt.Sprintf("%.1f", mb), fmt.Sprintf("%+.1f%%", ch),
				fmt.Sprintf("[%+.1f%%, %+.1f%%]", lo, hi), verdict})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("compare %s with %s: %w", older, newer, err)
		}
		cmp.Note = fmt.Sprintf("%d of %d phases slower beyond 5%% with 95%% confidence; phases with fewer than 10 attempts a side are left out. "+
			"cuzk timings --compare 'build:%s..build:%s' gives the full table.", slower, len(cmp.Rows), older, newer)
		return cmp, nil
	}
}
