package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/sql/queries"
)

// The dashboard's queries. They only read, but for FillAttemptHours, which keeps the
// hourly aggregates that the long windows read current.

// Now is the database's clock.
func Now(ctx context.Context, db DB) (time.Time, error) {
	var now time.Time
	if err := db.QueryRow(ctx, queries.SQL("Now")).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}

// RequestStates counts the requests in each state.
func RequestStates(ctx context.Context, db DB) (map[string]int64, error) {
	rows, err := db.Query(ctx, queries.SQL("RequestStates"))
	if err != nil {
		return nil, fmt.Errorf("count requests by state: %w", err)
	}
	states := map[string]int64{}
	var state string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { states[state] = n; return nil }); err != nil {
		return states, fmt.Errorf("count requests by state: %w", err)
	}
	return states, nil
}

// FirstFinished is when the first attempt that ended within the last window ended;
// nil when none did.
func FirstFinished(ctx context.Context, db DB, window time.Duration) (*time.Time, error) {
	var first *time.Time
	err := db.QueryRow(ctx, queries.SQL("FirstFinished"), window.Seconds()).Scan(&first)
	if err != nil {
		return nil, fmt.Errorf("read the first finished attempt: %w", err)
	}
	return first, nil
}

// PhaseStat is one circuit's phase over a window: count, p50, p95 and mean in ms.
type PhaseStat struct {
	Circuit, Phase string
	N              int64
	P50, P95, Avg  float64
}

// PhaseStats is each circuit's phase distributions over the last window, from its
// latest sample succeeded attempts in it: the cost stays bounded however long the
// window.
func PhaseStats(ctx context.Context, db DB, window time.Duration, sample int) ([]PhaseStat, error) {
	rows, err := db.Query(ctx, queries.SQL("PhaseStats"), window.Seconds(), sample)
	return collect("phase statistics", rows, err, pgx.RowToStructByPos[PhaseStat])
}

// CircuitCount is a circuit's attempts over a window.
type CircuitCount struct {
	Circuit           string
	Constraints       int64
	Succeeded, Failed int64 // failed: for good or to be retried
}

// AttemptCounts counts every registered circuit's attempts that ended within the last
// window.
func AttemptCounts(ctx context.Context, db DB, window time.Duration) ([]CircuitCount, error) {
	rows, err := db.Query(ctx, queries.SQL("AttemptCounts"), window.Seconds())
	return collect("attempt counts", rows, err, pgx.RowToStructByPos[CircuitCount])
}

// PeriodTiming is one circuit's succeeded attempts in one period: their count, the
// total's p50 and p95, and each phase's mean (in phase.All order; nil: no attempt
// reached it).
type PeriodTiming struct {
	Circuit  string
	Period   time.Time
	N        int64
	P50, P95 float64
	Means    []*float64
}

// PeriodTimings reads, straight from the attempt rows of the last window, each
// circuit's periods of length bucket: the mean of every phase (one pass, no sort) and
// p50/p95 of the total only. (cuzk.timing_history sorts every phase of every period,
// which a month of a busy fleet makes take many seconds.)
func PeriodTimings(ctx context.Context, db DB, bucket, window time.Duration) ([]PeriodTiming, error) {
	all := phase.All()
	rows, err := db.Query(ctx, queries.SQL("PeriodTimings"), bucket.Seconds(), window.Seconds())
	return collect("timings by period", rows, err, func(r pgx.CollectableRow) (PeriodTiming, error) {
		t := PeriodTiming{Means: make([]*float64, len(all))}
		dest := []any{&t.Circuit, &t.Period, &t.N, &t.P50, &t.P95}
		for i := range t.Means {
			dest = append(dest, &t.Means[i])
		}
		return t, r.Scan(dest...)
	})
}

// PeriodCount is a count of one circuit's attempts in one period.
type PeriodCount struct {
	Circuit string
	Period  time.Time
	N       int64
}

// PeriodFailures counts each circuit's failed attempts (for good or to be retried) of
// the last window by period of length bucket.
func PeriodFailures(ctx context.Context, db DB, bucket, window time.Duration) ([]PeriodCount, error) {
	rows, err := db.Query(ctx, queries.SQL("PeriodFailures"), bucket.Seconds(), window.Seconds())
	return collect("failures by period", rows, err, pgx.RowToStructByPos[PeriodCount])
}

// PeriodGPU is the mean GPU utilization (percent) of one circuit's attempts in one
// period that carry telemetry, and how many do.
type PeriodGPU struct {
	Circuit string
	Period  time.Time
	Util    float64
	N       int64
}

// GPUUtilization is, by period of length bucket, the mean GPU utilization read at the
// end of the attempts with telemetry among each circuit's latest sample attempts in
// the last window: bounded like PhaseStats, however long the window.
func GPUUtilization(ctx context.Context, db DB, bucket, window time.Duration, sample int) ([]PeriodGPU, error) {
	rows, err := db.Query(ctx, queries.SQL("GPUUtilization"), bucket.Seconds(), window.Seconds(), sample)
	return collect("GPU utilization by period", rows, err, pgx.RowToStructByPos[PeriodGPU])
}

// FailedRequest is a request with a recent attempt that did not succeed: its latest
// failed attempt, and how many attempts the request has had in all.
type FailedRequest struct {
	RequestID, Circuit, State string // State: the request's state now
	Outcome, Error, Worker    string // of the latest failed attempt
	Attempts                  int64  // every attempt of the request, failed or not
	LastAttemptAt             time.Time
}

// RecentFailures lists the requests of the latest failed attempts, one row each, at
// most limit. It reads only the latest limit*scan failed attempts: enough unless a few
// requests failed hundreds of times each.
func RecentFailures(ctx context.Context, db DB, limit, scan int) ([]FailedRequest, error) {
	rows, err := db.Query(ctx, queries.SQL("RecentFailures"), limit, limit*scan)
	return collect("recent failures", rows, err, pgx.RowToStructByPos[FailedRequest])
}

// WorkerRow is a row of cuzk.workers with its attempts in progress.
type WorkerRow struct {
	Worker, Backend       string
	Devices, Config       []byte // jsonb
	StartedAt, LastSeenAt time.Time
	Running               int64
}

// LiveWorkers are the workers not stopped that heartbeat within the last liveAfter,
// by name.
func LiveWorkers(ctx context.Context, db DB, liveAfter time.Duration) ([]WorkerRow, error) {
	rows, err := db.Query(ctx, queries.SQL("LiveWorkers"), liveAfter.Seconds())
	return collect("live workers", rows, err, pgx.RowToStructByPos[WorkerRow])
}

// DeviceTelemetry is a device's latest telemetry (jsonb) recorded in an attempt row.
type DeviceTelemetry struct {
	Device, Worker string
	Telemetry      []byte
}

// LatestTelemetry is each device's latest telemetry among the attempts that ended
// within the last window, by device.
func LatestTelemetry(ctx context.Context, db DB, window time.Duration) ([]DeviceTelemetry, error) {
	rows, err := db.Query(ctx, queries.SQL("LatestTelemetry"), window.Seconds())
	return collect("device telemetry", rows, err, pgx.RowToStructByPos[DeviceTelemetry])
}

// FillAttemptHours fills cuzk.attempt_hours up to the last closed hour, back to
// horizon ago, and returns the hour it is filled until.
func FillAttemptHours(ctx context.Context, db DB, horizon time.Duration) (time.Time, error) {
	var until time.Time
	err := db.QueryRow(ctx, queries.SQL("FillAttemptHours"), horizon.Seconds()).Scan(&until)
	if err != nil {
		return time.Time{}, fmt.Errorf("fill hourly attempt statistics: %w", err)
	}
	return until, nil
}

// FilledHours is the span of hours cuzk.attempt_hours holds; zero times when none.
func FilledHours(ctx context.Context, db DB) (from, until time.Time, err error) {
	err = db.QueryRow(ctx, queries.SQL("FilledHours")).Scan(&from, &until)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, time.Time{}, fmt.Errorf("read the span of hourly attempt statistics: %w", err)
	}
	return from, until, nil
}

// PeriodStats is the aggregate of one circuit's attempts in one period, as
// cuzk.attempt_hours and cuzk.attempt_stats hold it: counts, per-phase sums and
// counts (in phase.All order), and a histogram of total_ms (bucket, attempts).
type PeriodStats struct {
	Circuit                  string
	Period                   time.Time
	Succeeded, Failed, Timed int64
	Sums                     []float64
	Counts                   []int64
	HistB                    []int16
	HistN                    []int64
}

// HourStats reads the filled hours in [from, until) of cuzk.attempt_hours, by circuit
// and period of length bucket (at least an hour).
func HourStats(ctx context.Context, db DB, bucket time.Duration, from, until time.Time) ([]PeriodStats, error) {
	rows, err := db.Query(ctx, queries.SQL("HourStats"), bucket.Seconds(), from, until)
	return collect("hourly attempt statistics", rows, err, pgx.RowToStructByPos[PeriodStats])
}

// AttemptStats aggregates the attempt rows in [from, until) by circuit and period of
// length bucket (cuzk.attempt_stats).
func AttemptStats(ctx context.Context, db DB, from, until time.Time, bucket time.Duration) ([]PeriodStats, error) {
	rows, err := db.Query(ctx, queries.SQL("AttemptStats"),
		from, until, bucket.Seconds())
	return collect("attempt statistics", rows, err, pgx.RowToStructByPos[PeriodStats])
}

// collect reads every row of a query's answer with to; an error from either says
// what was read.
func collect[T any](what string, rows pgx.Rows, err error, to pgx.RowToFunc[T]) ([]T, error) {
	if err == nil {
		var list []T
		if list, err = pgx.CollectRows(rows, to); err == nil {
			return list, nil
		}
	}
	return nil, fmt.Errorf("read %s: %w", what, err)
}
