package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/sql/queries"
)

// HistoryRow is one circuit's phase in one period of cuzk.timing_history.
type HistoryRow struct {
	Circuit string
	Period  time.Time
	Phase   string
	N       int64
	P50     float64
	P95     float64
	Mean    float64
}

// TimingHistory reads cuzk.timing_history: per circuit (only circuit, unless ""),
// period of length bucket and phase, over the last since.
func TimingHistory(ctx context.Context, db DB, bucket, since time.Duration, circuit string) ([]HistoryRow, error) {
	rows, err := db.Query(ctx, queries.SQL("TimingHistory"),
		interval(bucket), interval(since), circuit)
	if err != nil {
		return nil, fmt.Errorf("read timing history: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[HistoryRow])
	if err != nil {
		return nil, fmt.Errorf("read timing history: %w", err)
	}
	return list, nil
}

// Sample is one timing of one phase: of a worker's attempt or a bench run (Source
// "worker" or "bench").
type Sample struct {
	Source, Circuit, Phase string
	Ms                     float64
}

// SelectorSamples reads the timings a selector stands for (build:, config:, bench:,
// a window), resolved by the SQL that cuzk.compare_timings uses, and the database's
// description of them. A selector the database rejects is a PgError with code 22023.
func SelectorSamples(ctx context.Context, db DB, sel string) (desc string, samples []Sample, err error) {
	if err := db.QueryRow(ctx, queries.SQL("ResolveSelector"), sel).Scan(&desc); err != nil {
		return "", nil, fmt.Errorf("resolve %s: %w", sel, err)
	}
	rows, err := db.Query(ctx, queries.SQL("SelectorSamples"), sel)
	if err != nil {
		return "", nil, fmt.Errorf("read timings of %s: %w", sel, err)
	}
	samples, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Sample])
	if err != nil {
		return "", nil, fmt.Errorf("read timings of %s: %w", sel, err)
	}
	return desc, samples, nil
}

// RecentBuilds are the builds whose attempts most recently succeeded, newest first,
// at most n.
func RecentBuilds(ctx context.Context, db DB, n int) ([]string, error) {
	rows, err := db.Query(ctx, queries.SQL("RecentBuilds"), n)
	if err != nil {
		return nil, fmt.Errorf("recent builds: %w", err)
	}
	builds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("recent builds: %w", err)
	}
	return builds, nil
}

// BuildSamples reads every phase's timing of build's latest limit succeeded attempts
// (Source "worker"); a phase an attempt never reached has no sample.
func BuildSamples(ctx context.Context, db DB, build string, limit int) ([]Sample, error) {
	phases := phase.All()
	rows, err := db.Query(ctx, queries.SQL("BuildSamples"), build, limit)
	if err != nil {
		return nil, fmt.Errorf("timings of build %s: %w", build, err)
	}
	var out []Sample
	var circuit string
	ms := make([]*float64, len(phases))
	dest := []any{&circuit}
	for i := range ms {
		dest = append(dest, &ms[i])
	}
	_, err = pgx.ForEachRow(rows, dest, func() error {
		for i, v := range ms {
			if v != nil {
				out = append(out, Sample{Source: "worker", Circuit: circuit, Phase: phases[i].Name, Ms: *v})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("timings of build %s: %w", build, err)
	}
	return out, nil
}

// BenchRun is one run of cuzk bench --record, a row of cuzk.bench_runs. Nil timings
// are phases the run did not measure.
type BenchRun struct {
	Arm, Label, Circuit, Worker, Build, ConfigHash string
	Config                                         []byte // jsonb
	Run                                            int
	Backend, Device                                string
	StartedAt, FinishedAt                          time.Time
	SynthMs, ProveMs, NttMs, MsmMs                 float64
	MsmG1Ms, MsmG2Ms, H2DMs, VerifyMs              *float64
	TotalMs                                        float64
}

// RecordBench stores runs in cuzk.bench_runs under one new bench id, in one
// transaction, and returns the id.
func RecordBench(ctx context.Context, db DB, runs []BenchRun) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, queries.SQL("NextBenchID")).Scan(&id); err != nil {
			return fmt.Errorf("new bench id: %w", err)
		}
		cols := []string{"bench_id", "arm", "run", "label", "circuit", "worker", "build", "config_hash", "config",
			"backend", "device", "started_at", "finished_at",
			"synth_ms", "prove_ms", "ntt_ms", "msm_ms", "msm_g1_ms", "msm_g2_ms", "h2d_ms", "verify_ms", "total_ms"}
		rows := make([][]any, len(runs))
		for i, r := range runs {
			rows[i] = []any{id, r.Arm, r.Run, r.Label, r.Circuit, r.Worker, r.Build, r.ConfigHash, r.Config,
				r.Backend, r.Device, r.StartedAt, r.FinishedAt,
				r.SynthMs, r.ProveMs, r.NttMs, r.MsmMs, r.MsmG1Ms, r.MsmG2Ms, r.H2DMs, r.VerifyMs, r.TotalMs}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cuzk", "bench_runs"}, cols, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("store bench runs: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record bench: %w", err)
	}
	return id, nil
}
