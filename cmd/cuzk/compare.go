package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/regress"
	"github.com/cuzk/cuzk/store"
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
	desc, samples, err := store.SelectorSamples(ctx, pool, sel)
	if err != nil {
		return nil, "", selectorErr(sel, err)
	}
	s := regress.Samples{}
	n := 0
	for _, x := range samples {
		s.Add(regress.Key{Source: x.Source, Circuit: x.Circuit, Phase: x.Phase}, x.Ms)
		if x.Phase == "total" {
			n++
		}
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

// panelSample is how many of each build's latest succeeded attempts the dashboard
// compares: enough for a 5% shift in a tight phase, and a bounded cost per page view
// however long a build has been running (a whole build's history can be millions of
// rows; cuzk timings --compare reads it all).
const panelSample = 2000

// comparisonPanel fills the dashboard's panel: the two builds whose workers most
// recently succeeded, compared on their latest panelSample attempts with order-statistic
// intervals (the method of cuzk.compare_timings: a sort per series, where a bootstrap
// would cost too much for every page view).
func comparisonPanel(pool *pgxpool.Pool) dashboard.ComparisonFunc {
	return func(ctx context.Context) (*dashboard.Comparison, error) {
		builds, err := store.RecentBuilds(ctx, pool, 2)
		if err != nil {
			return nil, err
		}
		if len(builds) < 2 {
			return nil, nil
		}
		older, newer := builds[1], builds[0]
		a, err := latestOfBuild(ctx, pool, older)
		if err != nil {
			return nil, err
		}
		b, err := latestOfBuild(ctx, pool, newer)
		if err != nil {
			return nil, err
		}
		opts := regress.Defaults()
		opts.Method = regress.OrderStat
		rep, err := regress.Compare(a, b, opts)
		if err != nil {
			return nil, err
		}
		cmp := &dashboard.Comparison{
			Title:   fmt.Sprintf("%s (B) vs %s (A)", newer, older),
			Columns: []string{"source", "circuit", "phase", "n A", "n B", "median A ms", "median B ms", "change", "95% interval", ""},
		}
		slower := 0
		for _, r := range rep.Rows {
			if r.Note != "" {
				continue
			}
			verdict := ""
			switch {
			case r.Flagged:
				verdict, slower = "SLOWER", slower+1
			case r.Faster:
				verdict = "faster"
			}
			cmp.Rows = append(cmp.Rows, []string{r.Source, r.Circuit, r.Phase, fmt.Sprint(r.NA), fmt.Sprint(r.NB),
				fmt.Sprintf("%.1f", *r.MedianA), fmt.Sprintf("%.1f", *r.MedianB), fmt.Sprintf("%+.1f%%", *r.ChangePct),
				fmt.Sprintf("[%+.1f%%, %+.1f%%]", *r.CILowPct, *r.CIHighPct), verdict})
		}
		cmp.Note = fmt.Sprintf("%d of %d phases slower beyond 5%% with 95%% confidence, on each build's latest %d succeeded attempts; "+
			"phases with fewer than 10 attempts a side are left out. cuzk timings --compare 'build:%s..build:%s' compares every attempt.",
			slower, len(cmp.Rows), panelSample, older, newer)
		return cmp, nil
	}
}

// latestOfBuild reads the phase timings of a build's latest panelSample succeeded
// attempts.
func latestOfBuild(ctx context.Context, pool *pgxpool.Pool, build string) (regress.Samples, error) {
	samples, err := store.BuildSamples(ctx, pool, build, panelSample)
	if err != nil {
		return nil, err
	}
	s := regress.Samples{}
	for _, x := range samples {
		s.Add(regress.Key{Source: x.Source, Circuit: x.Circuit, Phase: x.Phase}, x.Ms)
	}
	return s, nil
}
