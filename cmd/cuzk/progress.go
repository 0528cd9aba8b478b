package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how a long command is getting on: a bar (a spinner when the amount
// of work is unknown) on a terminal, and plain lines elsewhere, so output sent to a
// file or a CI log stays readable.
type progress struct {
	w     io.Writer
	what  string
	total int // < 0: unknown
	start time.Time
	bar   *progressbar.ProgressBar // nil when w is not a terminal
	last  int
}

// newProgress starts reporting total units of what on w (total < 0: unknown).
func newProgress(w io.Writer, what string, total int) *progress {
	p := &progress{w: w, what: what, total: total, start: time.Now(), last: 0}
	if !isTerminal(w) {
		if total > 0 {
			fmt.Fprintf(w, "%s: 0/%d\n", what, total)
		} else {
			fmt.Fprintf(w, "%s...\n", what)
		}
		return p
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	}
	if total > 0 {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true))
	} else {
		total = -1
		opts = append(opts, progressbar.OptionSpinnerType(14))
	}
	p.bar = progressbar.NewOptions(total, opts...)
	return p
}

// Set reports n units done.
func (p *progress) Set(n int) {
	if p.bar != nil {
		_ = p.bar.Set(n)
		return
	}
	if n != p.last {
		fmt.Fprintf(p.w, "%s: %d/%d\n", p.what, n, p.total)
		p.last = n
	}
}

// Done ends the report, successful or not.
func (p *progress) Done(err error) {
	took := time.Since(p.start).Round(time.Millisecond)
	if p.bar != nil {
		if err == nil {
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit() // leaves the bar where it stopped and ends the line
		}
		return
	}
	if err != nil {
		fmt.Fprintf(p.w, "%s: failed after %s\n", p.what, took)
		return
	}
	fmt.Fprintf(p.w, "%s: done in %s\n", p.what, took)
}

// step runs fn, a step of unknown length, under a spinner (or two plain lines).
func step(w io.Writer, what string, fn func() error) error {
	p := newProgress(w, what, -1)
	err := fn()
	p.Done(err)
	return err
}
