package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/phase"
)

// The dashboard's queries. They only read, but for FillAttemptHours, which keeps the
// hourly aggregates that the long windows read current.

// Now is the database's clock.
func Now(ctx context.Context, db DB) (time.Time, error) {
	var now time.Time
	if err := db.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}

// RequestStates counts the requests in each state.
func RequestStates(ctx context.Context, db DB) (map[string]int64, error) {
	rows, err := db.Query(ctx, "SELECT state, count(*) FROM cuzk.proof_status GROUP BY state")
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
	err := db.QueryRow(ctx, `SELECT min(finished_at) FROM cuzk.proof_attempts
	     WHERE outcome IN ('succeeded', 'failed', 'retryable', 'interrupted')
	       AND finished_at >= now() - make_interval(secs => $1)`, window.Seconds()).Scan(&first)
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
	rows, err := db.Query(ctx, `
		SELECT r.circuit, p.phase, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY p.ms),
		       percentile_cont(0.95) WITHIN GROUP (ORDER BY p.ms), avg(p.ms)
		  FROM cuzk.circuits c
		 CROSS JOIN LATERAL (SELECT * FROM cuzk.proof_attempts a
		                      WHERE a.circuit = c.name AND a.outcome = 'succeeded'
		                        AND a.finished_at >= now() - make_interval(secs => $1)
		                      ORDER BY a.finished_at DESC LIMIT $2) r
		 CROSS JOIN LATERAL (`+phaseValues("r")+`) AS p(phase, ord, ms)
		 WHERE p.ms IS NOT NULL
		 GROUP BY r.circuit, p.phase`, window.Seconds(), sample)
	return collect("phase statistics", rows, err, pgx.RowToStructByPos[PhaseStat])
}

// phaseValues is a VALUES list of (phase, ord, ms), one row for each phase of the
// proof_attempts row r.
func phaseValues(r string) string {
	var b strings.Builder
	b.WriteString("VALUES ")
	for i, p := range phase.All() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "('%s', %d, %s.%s)", p.Name, p.Ord, r, p.Column)
	}
	return b.String()
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
	rows, err := db.Query(ctx, `
		SELECT c.name, c.constraints,
		       count(a.*) FILTER (WHERE a.outcome = 'succeeded'),
		       count(a.*) FILTER (WHERE a.outcome IN ('failed', 'retryable', 'interrupted'))
		  FROM cuzk.circuits c
		  LEFT JOIN cuzk.proof_attempts a ON a.circuit = c.name AND a.finished_at >= now() - make_interval(secs => $1)
		 GROUP BY c.name, c.constraints`, window.Seconds())
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
	avgs := make([]string, len(all))
	for i, p := range all {
		avgs[i] = "avg(" + p.Column + ")"
	}
	rows, err := db.Query(ctx, `
		SELECT circuit, date_bin(make_interval(secs => $1), finished_at, timestamptz '2000-01-01'), count(*),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms), percentile_cont(0.95) WITHIN GROUP (ORDER BY total_ms),
		       `+strings.Join(avgs, ", ")+`
		  FROM cuzk.proof_attempts
		 WHERE outcome = 'succeeded' AND total_ms IS NOT NULL AND finished_at >= now() - make_interval(secs => $2)
		 GROUP BY 1, 2`,
		bucket.Seconds(), window.Seconds())
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
	rows, err := db.Query(ctx, `
		SELECT circuit, date_bin(make_interval(secs => $1), finished_at, timestamptz '2000-01-01'), count(*)
		  FROM cuzk.proof_attempts
		 WHERE outcome IN ('failed', 'retryable', 'interrupted') AND finished_at >= now() - make_interval(secs => $2)
		 GROUP BY 1, 2`, bucket.Seconds(), window.Seconds())
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
	rows, err := db.Query(ctx, `
		SELECT c.name, date_bin(make_interval(secs => $1), t.finished_at, timestamptz '2000-01-01'), avg(t.util), count(*)
		  FROM cuzk.circuits c
		 CROSS JOIN LATERAL (SELECT a.finished_at, (a.telemetry->>'gpu_util_pct')::float8 AS util
		                       FROM cuzk.proof_attempts a
		                      WHERE a.circuit = c.name AND a.finished_at >= now() - make_interval(secs => $2)
		                      ORDER BY a.finished_at DESC LIMIT $3) t
		 WHERE t.util IS NOT NULL
		 GROUP BY 1, 2`, bucket.Seconds(), window.Seconds(), sample)
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
	rows, err := db.Query(ctx, `
		WITH recent AS (
		    SELECT request_id, max(coalesce(finished_at, started_at)) AS failed_at
		      FROM (SELECT request_id, finished_at, started_at FROM cuzk.proof_attempts
		             WHERE outcome IN ('failed', 'retryable', 'interrupted')
		             ORDER BY coalesce(finished_at, started_at) DESC LIMIT $2) f
		     GROUP BY request_id
		     ORDER BY failed_at DESC LIMIT $1)
		SELECT r.request_id, l.circuit, coalesce(p.state, ''), l.outcome, coalesce(l.error, ''), l.worker, n.attempts, n.last_at
		  FROM recent r
		 CROSS JOIN LATERAL (SELECT a.circuit, a.outcome, a.error, a.worker FROM cuzk.proof_attempts a
		                      WHERE a.request_id = r.request_id AND a.outcome IN ('failed', 'retryable', 'interrupted')
		                      ORDER BY a.attempt DESC LIMIT 1) l
		 CROSS JOIN LATERAL (SELECT count(*) AS attempts, max(coalesce(a.finished_at, a.started_at)) AS last_at
		                       FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id) n
		  LEFT JOIN cuzk.proof_requests p ON p.request_id = r.request_id
		 ORDER BY r.failed_at DESC`, limit, limit*scan)
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
	rows, err := db.Query(ctx, `
		SELECT w.worker, w.backend, w.devices, w.config, w.started_at, w.last_seen_at,
		       (SELECT count(*) FROM cuzk.proof_attempts a WHERE a.worker = w.worker AND a.outcome = 'running')
		  FROM cuzk.workers w
		 WHERE w.stopped_at IS NULL AND w.last_seen_at >= now() - make_interval(secs => $1)
		 ORDER BY w.worker`, liveAfter.Seconds())
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
	rows, err := db.Query(ctx, `
		SELECT DISTINCT ON (device) device, worker, telemetry
		  FROM cuzk.proof_attempts
		 WHERE telemetry IS NOT NULL AND device IS NOT NULL AND finished_at >= now() - make_interval(secs => $1)
		 ORDER BY device, finished_at DESC`, window.Seconds())
	return collect("device telemetry", rows, err, pgx.RowToStructByPos[DeviceTelemetry])
}

// FillAttemptHours fills cuzk.attempt_hours up to the last closed hour, back to
// horizon ago, and returns the hour it is filled until.
func FillAttemptHours(ctx context.Context, db DB, horizon time.Duration) (time.Time, error) {
	var until time.Time
	err := db.QueryRow(ctx, `SELECT cuzk.fill_attempt_hours(now() - make_interval(secs => $1))`,
		horizon.Seconds()).Scan(&until)
	if err != nil {
		return time.Time{}, fmt.Errorf("fill hourly attempt statistics: %w", err)
	}
	return until, nil
}

// FilledHours is the span of hours cuzk.attempt_hours holds; zero times when none.
func FilledHours(ctx context.Context, db DB) (from, until time.Time, err error) {
	err = db.QueryRow(ctx, `SELECT filled_from, filled_until FROM cuzk.attempt_hours_mark`).Scan(&from, &until)
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
	rows, err := db.Query(ctx, `
		SELECT circuit, date_bin(make_interval(secs => $1), hour, timestamptz '2000-01-01'),
		       succeeded, failed, timed, sums, counts, hist_b, hist_n
		  FROM cuzk.attempt_hours WHERE hour >= $2 AND hour < $3`, bucket.Seconds(), from, until)
	return collect("hourly attempt statistics", rows, err, pgx.RowToStructByPos[PeriodStats])
}

// AttemptStats aggregates the attempt rows in [from, until) by circuit and period of
// length bucket (cuzk.attempt_stats).
func AttemptStats(ctx context.Context, db DB, from, until time.Time, bucket time.Duration) ([]PeriodStats, error) {
	rows, err := db.Query(ctx, `SELECT * FROM cuzk.attempt_stats($1, $2, make_interval(secs => $3))`,
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
