package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cuzk/cuzk/migrations"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

type migrateCmd struct {
	LockWait time.Duration `name:"lock-wait" default:"5m" help:"Wait at most this long for the migration lock (another migration, or any session holding it), then fail naming its holder; 0 waits as long as it takes."`
}

func (c migrateCmd) Run(ctx context.Context, g *globals) error {
	// A migration's warnings are for the operator running it (020's about statistics
	// only a superuser can remove).
	pool, err := g.connectWith(ctx, nil, func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if n.Severity == "WARNING" {
			g.log.Warn("migration: "+n.Message, "hint", n.Hint)
		}
	})
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := migrations.MigrateWithin(ctx, pool, c.LockWait)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "river migrations applied: %d; cuzk schema version %d -> %d\n",
		len(res.RiverApplied), res.CuzkFrom, res.CuzkTo)
	return nil
}

type inputsCmd struct {
	Circuit string `required:"" help:"Built-in circuit name, e.g. synthetic-k10, merkle-poseidon2-d8-c2, sha256-preimage-b64."`
	Seed    uint64 `default:"1" help:"Seed for the generated values (same seed, same inputs)."`
	Count   int    `default:"1" help:"With --out-dir: write the inputs of this many seeds, --seed onwards."`
	OutDir  string `name:"out-dir" placeholder:"DIR" help:"Write DIR/<seed>.json for each seed (with --partitions, the first seed of each array) instead of printing (one process for many requests' inputs)."`
	// Partitions > 1 prints the inputs array of a partitioned request.
	Partitions int `default:"1" help:"Print a JSON array of this many partitions' inputs (seeds --seed onwards), for a partitioned request."`
}

func (c inputsCmd) Run(ctx context.Context, g *globals) error {
	if c.Count < 1 || (c.Count > 1 && c.OutDir == "") {
		return usagef("--count %d: want 1, or more with --out-dir", c.Count)
	}
	if c.Partitions < 1 {
		return usagef("--partitions %d: want 1 or more", c.Partitions)
	}
	per := uint64(c.Partitions)
	last := uint64(c.Count)*per - 1
	if last/per != uint64(c.Count-1) || c.Seed+last < c.Seed {
		return usagef("--seed %d --count %d --partitions %d: the seeds run past 2^64", c.Seed, c.Count, c.Partitions)
	}
	for i := range uint64(c.Count) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var b []byte
		var err error
		if c.Partitions == 1 {
			b, err = synth.Inputs(c.Circuit, c.Seed+i)
		} else {
			b, err = synth.PartitionedInputs(c.Circuit, c.Seed+i*per, c.Partitions)
		}
		if err != nil {
			if synth.IsBadInput(err) {
				return usageError{err.Error()}
			}
			return err
		}
		if c.OutDir == "" {
			_, err = fmt.Fprintln(g.stdout, string(b))
			return err
		}
		if i == 0 { // after the circuit is known, so a typo leaves no directory behind
			if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
				return fmt.Errorf("--out-dir: %w", err)
			}
		}
		seed := c.Seed + i*per // the first of the file's partitions with --partitions
		f := filepath.Join(c.OutDir, fmt.Sprintf("%d.json", seed))
		if err := os.WriteFile(f, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("inputs of seed %d: %w", seed, err)
		}
	}
	return nil
}

type submitCmd struct {
	RequestID   string        `name:"request-id" required:"" help:"Caller's id for the request; submitting it again returns the existing request."`
	Circuit     string        `required:"" help:"Registered circuit name."`
	Inputs      string        `help:"File with the inputs JSON ('-' for stdin)." xor:"payload"`
	Witness     string        `help:"File with a gnark full-witness binary." xor:"payload"`
	Priority    int           `default:"2" help:"1 (most urgent) to 4."`
	MaxAttempts int           `name:"max-attempts" default:"5" help:"Attempts before the request fails for good."`
	Wait        time.Duration `help:"Wait up to this long for the request to finish, then print its status."`
}

func (c submitCmd) Run(ctx context.Context, g *globals) error {
	if c.Priority < 1 || c.Priority > 4 {
		return usagef("--priority %d: priority must be 1 (most urgent) to 4", c.Priority)
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 100 {
		return usagef("--max-attempts %d: max attempts must be 1 to 100", c.MaxAttempts)
	}
	var inputs, witness []byte
	var err error
	switch {
	case c.Inputs == "-":
		inputs, err = readAllStdin()
	case c.Inputs != "":
		inputs, err = os.ReadFile(c.Inputs)
	case c.Witness != "":
		witness, err = os.ReadFile(c.Witness)
	default:
		return usagef("give --inputs FILE or --witness FILE")
	}
	if err != nil {
		return usagef("read payload: %v", err)
	}
	if inputs != nil && !json.Valid(inputs) {
		return usagef("--inputs: not valid JSON")
	}
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	id, err := store.Submit(ctx, pool, &store.Submission{RequestID: c.RequestID, Circuit: c.Circuit,
		Inputs: inputs, Witness: witness, Priority: c.Priority, MaxAttempts: c.MaxAttempts})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && callerMistake(pe.Code) {
			return usageError{sqlErr("submit", err).Error()}
		}
		return sqlErr("submit", err)
	}
	fmt.Fprintf(g.stdout, "submitted %s (id %d)\n", c.RequestID, id)
	if c.Wait <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, c.Wait)
	defer cancel()
	for {
		state, lastErr, err := store.RequestState(wctx, pool, c.RequestID)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", c.RequestID, err)
		}
		switch state {
		case "succeeded":
			fmt.Fprintf(g.stdout, "%s succeeded\n", c.RequestID)
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("request %s %s: %s", c.RequestID, state, lastErr)
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("request %s still %s after %s", c.RequestID, state, c.Wait)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type statusCmd struct {
	RequestIDs []string `arg:"" optional:"" name:"request-id" help:"Requests to show (default: the most recent)."`
	State      string   `help:"Only requests in this state." enum:",queued,running,succeeded,failed,cancelled" default:""`
	Limit      int      `default:"20" help:"Most recent requests to show when none are named."`
	JSON       bool     `help:"Print JSON lines."`
}

func (c statusCmd) Run(ctx context.Context, g *globals) error {
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	limit := c.Limit
	if len(c.RequestIDs) > 0 {
		limit = len(c.RequestIDs) // every named request that exists
	}
	statuses, err := store.Statuses(ctx, pool, store.StatusFilter{RequestIDs: c.RequestIDs, State: c.State, Limit: limit})
	if err != nil {
		return sqlErr("status", err)
	}
	// store.Status with the names of the JSON lines.
	type row struct {
		RequestID  string     `json:"request_id"`
		Circuit    string     `json:"circuit"`
		State      string     `json:"state"`
		Attempts   int        `json:"attempts"`
		LastError  string     `json:"last_error,omitempty"`
		CreatedAt  time.Time  `json:"created_at"`
		FinishedAt *time.Time `json:"finished_at,omitempty"`
	}
	list := make([]row, len(statuses))
	for i, s := range statuses {
		list[i] = row(s)
	}
	// Named requests that are not there (or not in --state) are reported after the
	// rows that are, so a script still gets what exists.
	var missing []string
	if len(c.RequestIDs) > 0 {
		found := map[string]bool{}
		for _, r := range list {
			found[r.RequestID] = true
		}
		for _, id := range c.RequestIDs {
			if !found[id] {
				found[id] = true // named twice, reported once
				missing = append(missing, strconv.Quote(id))
			}
		}
	}
	if c.JSON {
		err = writeJSONLines(g.stdout, list)
	} else if len(list) > 0 || len(missing) == 0 {
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "REQUEST\tCIRCUIT\tSTATE\tATTEMPTS\tCREATED\tLAST ERROR")
		for _, r := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.RequestID, r.Circuit, r.State, r.Attempts,
				r.CreatedAt.Format(time.DateTime), truncate(r.LastError, 80))
		}
		err = tw.Flush()
	}
	if err != nil {
		return err
	}
	switch {
	case len(missing) == 0:
		return nil
	case c.State != "":
		return fmt.Errorf("no %s request %s", c.State, strings.Join(missing, ", "))
	case len(missing) == 1:
		return fmt.Errorf("unknown request %s", missing[0])
	default:
		return fmt.Errorf("unknown requests %s", strings.Join(missing, ", "))
	}
}

type timingsCmd struct {
	compareFlags
	Circuit string        `help:"Only this circuit."`
	Since   time.Duration `default:"168h" help:"History window."`
	Bucket  time.Duration `default:"0" help:"Period length; 0 gives one row per circuit and phase over the whole window."`
	JSON    bool          `help:"Print JSON lines."`
}

func (c timingsCmd) Run(ctx context.Context, g *globals) error {
	if c.Compare != "" {
		return c.compare(ctx, g, c.Circuit, c.JSON)
	}
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	bucket := c.Bucket
	if bucket <= 0 {
		bucket = c.Since + time.Hour // one period covers the window
	}
	history, err := store.TimingHistory(ctx, pool, bucket, c.Since, c.Circuit)
	if err != nil {
		return sqlErr("timings", err)
	}
	// store.HistoryRow with the names of the JSON lines.
	type row struct {
		Circuit string    `json:"circuit"`
		Period  time.Time `json:"period"`
		Phase   string    `json:"phase"`
		N       int64     `json:"n"`
		P50     float64   `json:"p50_ms"`
		P95     float64   `json:"p95_ms"`
		Mean    float64   `json:"mean_ms"`
	}
	list := make([]row, len(history))
	for i, h := range history {
		list[i] = row(h)
	}
	if c.JSON {
		return writeJSONLines(g.stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(g.stdout, "no succeeded attempts in the window")
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CIRCUIT\tPERIOD\tPHASE\tN\tP50 ms\tP95 ms\tMEAN ms\t")
	for _, r := range list {
		period := r.Period.Format("2006-01-02 15:04")
		if c.Bucket <= 0 {
			period = "last " + c.Since.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t\n", r.Circuit, period, r.Phase, r.N, r.P50, r.P95, r.Mean)
	}
	return tw.Flush()
}

type retryCmd struct {
	RequestIDs []string      `arg:"" optional:"" name:"request-id" help:"Requests to retry."`
	Failed     bool          `help:"Retry every failed request (with --since)."`
	Since      time.Duration `default:"24h" help:"With --failed: only requests that finished this recently."`
}

func (c retryCmd) Run(ctx context.Context, g *globals) error {
	if len(c.RequestIDs) == 0 && !c.Failed {
		return usagef("name requests to retry, or give --failed [--since D]")
	}
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	ids := c.RequestIDs
	if c.Failed {
		more, err := store.FailedSince(ctx, pool, c.Since)
		if err != nil {
			return sqlErr("retry", err)
		}
		ids = append(ids, more...)
	}
	var failed int
	for _, id := range ids {
		job, err := store.Retry(ctx, pool, id)
		if err != nil {
			fmt.Fprintf(g.stderr, "cuzk: retry %s: %s\n", id, sqlErr("", err))
			failed++
			continue
		}
		if job == nil {
			fmt.Fprintf(g.stdout, "queued %s again (waiting for a job behind its submitter's queued requests)\n", id)
			continue
		}
		fmt.Fprintf(g.stdout, "queued %s again (job %d)\n", id, *job)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d requests could not be retried", failed, len(ids))
	}
	if len(ids) == 0 {
		fmt.Fprintln(g.stdout, "nothing to retry")
	}
	return nil
}

type cancelCmd struct {
	RequestIDs []string `arg:"" name:"request-id" help:"Requests to cancel."`
}

func (c cancelCmd) Run(ctx context.Context, g *globals) error {
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	var failed int
	for _, id := range c.RequestIDs {
		ok, state, err := store.Cancel(ctx, pool, id)
		if err != nil {
			fmt.Fprintf(g.stderr, "cuzk: cancel %s: %s\n", id, sqlErr("", err))
			failed++
			continue
		}
		switch {
		case ok:
			fmt.Fprintf(g.stdout, "cancelled %s\n", id)
		case state == "cancelled":
			fmt.Fprintf(g.stdout, "%s already cancelled\n", id)
		default:
			fmt.Fprintf(g.stdout, "%s already finished (%s)\n", id, state)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d requests could not be cancelled", failed, len(c.RequestIDs))
	}
	return nil
}

// sqlErr turns a PostgreSQL error into one line with its message and hint.
func sqlErr(what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Hint != "" {
			msg += " (" + pe.Hint + ")"
		}
		if what == "" {
			return errors.New(msg)
		}
		return fmt.Errorf("%s: %s", what, msg)
	}
	if what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// callerMistake tells whether the insert trigger refused the request's own values
// (exit 2) rather than failed: a bad request id or inputs (check_violation), an
// unknown circuit (foreign_key_violation), a bad value (invalid_parameter_value),
// inputs over the size limit (program_limit_exceeded).
func callerMistake(sqlstate string) bool {
	switch sqlstate {
	case "23514", "23503", "22023", "54000":
		return true
	}
	return false
}

func readAllStdin() ([]byte, error) { return io.ReadAll(os.Stdin) }

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// writeJSONLines prints one JSON object per line.
func writeJSONLines[T any](w io.Writer, list []T) error {
	enc := json.NewEncoder(w)
	for _, r := range list {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
