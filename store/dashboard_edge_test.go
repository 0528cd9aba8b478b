package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/phase"
)

// The queries that list the phase columns put each phase's value where package phase
// says: one succeeded attempt with a distinct value in every phase column comes back
// as that value under its phase's name or place, from PhaseStats, PeriodTimings and
// BuildSamples alike.
func TestPhaseQueriesReadEachPhaseFromItsColumn(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	mustRegister(t, db.Pool, testCircuit("c", 1))
	mustSubmit(t, db.Pool, &Submission{RequestID: "r", Circuit: "c", Inputs: []byte(`{}`)})
	all := phase.All()
	cols, vals := make([]string, len(all)), make([]string, len(all))
	for i, p := range all {
		cols[i], vals[i] = p.Column, fmt.Sprint(float64(p.Ord)+0.5)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, build, outcome, finished_at, `+
		strings.Join(cols, ", ")+`) VALUES ('r', 1, 'c', 'w', 'b1', 'succeeded', now(), `+strings.Join(vals, ", ")+`)`); err != nil {
		t.Fatal(err)
	}
	want := func(p phase.Phase) float64 { return float64(p.Ord) + 0.5 }

	stats, err := PhaseStats(ctx, db.Pool, time.Hour, 10)
	if err != nil || len(stats) != len(all) {
		t.Fatalf("PhaseStats: %d rows, %v; want %d", len(stats), err, len(all))
	}
	for _, s := range stats {
		p, ok := phase.Lookup(s.Phase)
		if !ok || s.N != 1 || s.Avg != want(p) || s.P50 != want(p) {
			t.Errorf("PhaseStats %s: %+v, want n 1 and %v", s.Phase, s, want(p))
		}
	}
	periods, err := PeriodTimings(ctx, db.Pool, time.Hour, time.Hour)
	if err != nil || len(periods) != 1 || len(periods[0].Means) != len(all) {
		t.Fatalf("PeriodTimings: %+v, %v", periods, err)
	}
	for i, p := range all {
		if m := periods[0].Means[i]; m == nil || *m != want(p) {
			t.Errorf("PeriodTimings mean %d (%s): %v, want %v", i, p.Name, m, want(p))
		}
	}
	samples, err := BuildSamples(ctx, db.Pool, "b1", 10)
	if err != nil || len(samples) != len(all) {
		t.Fatalf("BuildSamples: %d, %v; want %d", len(samples), err, len(all))
	}
	for _, s := range samples {
		if p, ok := phase.Lookup(s.Phase); !ok || s.Ms != want(p) {
			t.Errorf("BuildSamples %s: %v", s.Phase, s.Ms)
		}
	}
}
