package regress

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report for a terminal: a header naming both sides, one line per
// series, and a summary line.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n", r.A, r.B)
	fmt.Fprintf(w, "change = median B / median A − 1; %g%% interval (%s); flagged when the interval's lower bound is above +%g%%\n",
		r.Confidence*100, r.Method, r.ThresholdPct)
	if len(r.Rows) == 0 {
		_, err := fmt.Fprintln(w, "no timings to compare")
		return err
	}
	sources := map[string]bool{}
	for _, row := range r.Rows {
		sources[row.Source] = true
	}
	withSource := len(sources) > 1
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withSource {
		fmt.Fprint(tw, "SOURCE\t")
	}
	fmt.Fprintln(tw, "CIRCUIT\tPHASE\tN A\tN B\tMEDIAN A ms\tMEDIAN B ms\tP95 A ms\tP95 B ms\tCHANGE\tINTERVAL\tVERDICT")
	for _, row := range r.Rows {
		if withSource {
			fmt.Fprintf(tw, "%s\t", row.Source)
		}
		change, interval, verdict := "-", "-", row.Note
		if row.ChangePct != nil {
			change = fmt.Sprintf("%+.1f%%", *row.ChangePct)
			interval = fmt.Sprintf("[%+.1f%%, %+.1f%%]", *row.CILowPct, *row.CIHighPct)
			if row.Interval != "" {
				interval += " (" + string(row.Interval) + ")"
			}
			switch {
			case row.Flagged:
				verdict = "SLOWER"
			case row.Faster:
				verdict = "faster"
			default:
				verdict = "ok"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Circuit, row.Phase, row.NA, row.NB,
			msOrDash(row.MedianA), msOrDash(row.MedianB), msOrDash(row.P95A), msOrDash(row.P95B), change, interval, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.Summary())
	return err
}

// Summary is one line: what was flagged, or that nothing was.
func (r *Report) Summary() string {
	flagged := r.Flagged()
	if len(flagged) == 0 {
		return fmt.Sprintf("no phase slower beyond %g%% (%d series compared)", r.ThresholdPct, r.compared())
	}
	parts := make([]string, len(flagged))
	for i, row := range flagged {
		parts[i] = fmt.Sprintf("%s %s %+.1f%% [%+.1f%%, %+.1f%%]", row.Circuit, row.Phase, *row.ChangePct, *row.CILowPct, *row.CIHighPct)
	}
	noun := "phases"
	if len(flagged) == 1 {
		noun = "phase"
	}
	return fmt.Sprintf("%d %s slower beyond %g%%: %s", len(flagged), noun, r.ThresholdPct, strings.Join(parts, "; "))
}

func (r *Report) compared() int {
	n := 0
	for _, row := range r.Rows {
		if row.ChangePct != nil {
			n++
		}
	}
	return n
}

func msOrDash(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}
