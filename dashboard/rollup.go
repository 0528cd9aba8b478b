package dashboard

import (
	"context"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/store"
)

// Charts with periods of an hour or more read hourly aggregates (cuzk.attempt_hours,
// migration 009) for the hours KeepRollup has filled, and aggregate only the rest of
// the window from the attempt rows: a month's view costs a few rows per circuit and
// hour instead of every attempt. Means are exact; the total's p50/p95 come from a
// histogram with 16 buckets per doubling, so they are within about 2.2%.

// RollupHorizon is how far back KeepRollup keeps hours filled: the longest window the
// page offers, plus a day.
const RollupHorizon = 31 * 24 * time.Hour

// KeepRollup fills cuzk.attempt_hours up to the last closed hour now and then every
// `every` until ctx ends. Any number of processes may run it (the fill takes a row
// lock); the first fill of a large table takes a while, so it runs here, in the
// background, never in a page view.
func KeepRollup(ctx context.Context, db store.DB, every time.Duration, log *slog.Logger) {
	for {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		_, err := store.FillAttemptHours(fctx, db, RollupHorizon)
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Warn("dashboard: hourly rollup", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// stats is cuzk.attempt_stats' aggregate of one circuit and period, or a merge of them.
type stats struct {
	succeeded, failed, timed int64
	sums                     []float64 // per phase, in phase.All order (attempt_stats')
	counts                   []int64
	hist                     map[int16]int64 // total_ms bucket -> attempts
}

func (s *stats) add(succeeded, failed, timed int64, sums []float64, counts []int64, hb []int16, hn []int64) {
	s.succeeded += succeeded
	s.failed += failed
	s.timed += timed
	if s.sums == nil {
		n := len(phase.All())
		s.sums, s.counts, s.hist = make([]float64, n), make([]int64, n), map[int16]int64{}
	}
	for i := range min(len(sums), len(s.sums)) {
		s.sums[i] += sums[i]
		s.counts[i] += counts[i]
	}
	for i, b := range hb {
		s.hist[b] += hn[i]
	}
}

// quantile of the total from the histogram: the middle (geometric) of the bucket
// holding the q-th attempt.
func (s *stats) quantile(q float64) float64 {
	var n int64
	for _, c := range s.hist {
		n += c
	}
	if n == 0 {
		return 0
	}
	bs := make([]int16, 0, len(s.hist))
	for b := range s.hist {
		bs = append(bs, b)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i] < bs[j] })
	rank := int64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	var cum int64
	for _, b := range bs {
		if cum += s.hist[b]; cum >= rank {
			return math.Exp2((float64(b) + 0.5) / 16)
		}
	}
	return math.Exp2((float64(bs[len(bs)-1]) + 0.5) / 16)
}

func (s *stats) point(period time.Time) *Point {
	p := &Point{Period: period, N: s.timed, Failed: s.failed, Mean: map[string]float64{},
		P50: s.quantile(0.5), P95: s.quantile(0.95)}
	for i, ph := range phase.Names(phase.All()) {
		if i < len(s.counts) && s.counts[i] > 0 {
			p.Mean[ph] = s.sums[i] / float64(s.counts[i])
		}
	}
	return p
}

// periodStats reads the window [start, now] by circuit and period (d.Bucket, at least
// an hour): filled hours from cuzk.attempt_hours, the rest from the attempt rows.
func periodStats(ctx context.Context, db store.DB, d *Data, start time.Time) (map[string]map[time.Time]*stats, error) {
	// Filled hours that lie whole inside the window.
	from, until, err := store.FilledHours(ctx, db)
	if err != nil {
		return nil, err
	}
	hs := start.Truncate(time.Hour)
	if hs.Before(start) {
		hs = hs.Add(time.Hour)
	}
	if from.Before(hs) {
		from = hs
	}
	out := map[string]map[time.Time]*stats{}
	at := func(circuit string, period time.Time) *stats {
		if out[circuit] == nil {
			out[circuit] = map[time.Time]*stats{}
		}
		s := out[circuit][period]
		if s == nil {
			s = &stats{}
			out[circuit][period] = s
		}
		return s
	}
	each := func(ps []store.PeriodStats, err error) error {
		for _, p := range ps {
			at(p.Circuit, p.Period).add(p.Succeeded, p.Failed, p.Timed, p.Sums, p.Counts, p.HistB, p.HistN)
		}
		return err
	}
	raw := [][2]time.Time{{start, d.Now.Add(time.Second)}}
	if from.Before(until) {
		if err := each(store.HourStats(ctx, db, d.Bucket, from, until)); err != nil {
			return nil, err
		}
		raw = [][2]time.Time{{start, from}, {until, d.Now.Add(time.Second)}}
	}
	for _, r := range raw {
		if !r[0].Before(r[1]) {
			continue
		}
		if err := each(store.AttemptStats(ctx, db, r[0], r[1], d.Bucket)); err != nil {
			return nil, err
		}
	}
	return out, nil
}
