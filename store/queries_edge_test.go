package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// On a database with no requests, attempts, workers or River jobs, every reading
// query answers nothing (or zeros) without error.
func TestReadingQueriesWithNoRows(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	empty := func(what string, n int, err error) {
		t.Helper()
		if err != nil || n != 0 {
			t.Errorf("%s: %d rows, %v; want none", what, n, err)
		}
	}
	states, err := RequestStates(ctx, p)
	empty("RequestStates", len(states), err)
	first, err := FirstFinished(ctx, p, time.Hour)
	if err != nil || first != nil {
		t.Errorf("FirstFinished: %v, %v; want nil (NULL)", first, err)
	}
	ps, err := PhaseStats(ctx, p, time.Hour, 100)
	empty("PhaseStats", len(ps), err)
	ac, err := AttemptCounts(ctx, p, time.Hour)
	empty("AttemptCounts", len(ac), err)
	pt, err := PeriodTimings(ctx, p, time.Minute, time.Hour)
	empty("PeriodTimings", len(pt), err)
	pf, err := PeriodFailures(ctx, p, time.Minute, time.Hour)
	empty("PeriodFailures", len(pf), err)
	gu, err := GPUUtilization(ctx, p, time.Minute, time.Hour, 100)
	empty("GPUUtilization", len(gu), err)
	rf, err := RecentFailures(ctx, p, 10, 10)
	empty("RecentFailures", len(rf), err)
	lw, err := LiveWorkers(ctx, p, time.Minute)
	empty("LiveWorkers", len(lw), err)
	lt, err := LatestTelemetry(ctx, p, time.Hour)
	empty("LatestTelemetry", len(lt), err)
	if from, until, err := FilledHours(ctx, p); err != nil || !from.IsZero() || !until.IsZero() {
		t.Errorf("FilledHours before any fill: %v, %v, %v; want zero times", from, until, err)
	}
	now, err := Now(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := HourStats(ctx, p, time.Hour, now.Add(-time.Hour), now)
	empty("HourStats", len(hs), err)
	as, err := AttemptStats(ctx, p, now.Add(-time.Hour), now, time.Hour)
	empty("AttemptStats", len(as), err)
	th, err := TimingHistory(ctx, p, time.Hour, 24*time.Hour, "")
	empty("TimingHistory", len(th), err)
	rb, err := RecentBuilds(ctx, p, 5)
	empty("RecentBuilds", len(rb), err)
	bs, err := BuildSamples(ctx, p, "v0", 5)
	empty("BuildSamples", len(bs), err)

	if c, err := CancelRequested(ctx, p, 1, "cuzk"); err != nil || c != (CancelRequest{}) {
		t.Errorf("CancelRequested of no job: %+v, %v", c, err)
	}
	if paused, ok, err := QueuePaused(ctx, p, "nope"); err != nil || ok || paused {
		t.Errorf("QueuePaused of no queue: %t, %t, %v", paused, ok, err)
	}
	counts, err := QueueJobs(ctx, p, "nope")
	var got []string
	for _, c := range counts {
		got = append(got, c.State)
		if c.N != 0 {
			t.Errorf("QueueJobs of no queue: %s = %d", c.State, c.N)
		}
	}
	if err != nil || strings.Join(got, ",") != "available,running,scheduled,retryable,pending" {
		t.Errorf("QueueJobs of no queue: %v, %v; want every state, zero", counts, err)
	}
	if b, ok, err := LastHeartbeat(ctx, p, "nope"); err != nil || ok || b != (LastBeat{}) {
		t.Errorf("LastHeartbeat of no worker: %+v, %t, %v", b, ok, err)
	}
	if n, err := PruneWorkers(ctx, p, 0); err != nil || n != 0 {
		t.Errorf("PruneWorkers: %d, %v", n, err)
	}
	if jobs, err := RescueDeadWorkers(ctx, p, "self", time.Second, []string{"cuzk"}); err != nil || len(jobs) != 0 {
		t.Errorf("RescueDeadWorkers: %v, %v", jobs, err)
	}
	if jobs, err := HandBackClientJobs(ctx, p, "nope", []string{"cuzk"}, "restart"); err != nil || len(jobs) != 0 {
		t.Errorf("HandBackClientJobs: %v, %v", jobs, err)
	}
	if err := MarkWorkerStopped(ctx, p, "nope", "nope"); err != nil {
		t.Errorf("MarkWorkerStopped of no worker: %v", err)
	}
}

// Every query's error says what failed and wraps the cause: here a cancelled context,
// the one failure every query meets alike.
func TestQueryErrorsSayWhatFailed(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := db.Pool
	now := time.Now()
	for prefix, run := range map[string]func() error{
		"read the database clock":                    func() error { _, err := Now(ctx, p); return err },
		"count requests by state":                    func() error { _, err := RequestStates(ctx, p); return err },
		"read the first finished attempt":            func() error { _, err := FirstFinished(ctx, p, time.Hour); return err },
		"read phase statistics":                      func() error { _, err := PhaseStats(ctx, p, time.Hour, 1); return err },
		"read attempt counts":                        func() error { _, err := AttemptCounts(ctx, p, time.Hour); return err },
		"read timings by period":                     func() error { _, err := PeriodTimings(ctx, p, time.Minute, time.Hour); return err },
		"read failures by period":                    func() error { _, err := PeriodFailures(ctx, p, time.Minute, time.Hour); return err },
		"read GPU utilization by period":             func() error { _, err := GPUUtilization(ctx, p, time.Minute, time.Hour, 1); return err },
		"read recent failures":                       func() error { _, err := RecentFailures(ctx, p, 1, 1); return err },
		"read live workers":                          func() error { _, err := LiveWorkers(ctx, p, time.Minute); return err },
		"read device telemetry":                      func() error { _, err := LatestTelemetry(ctx, p, time.Hour); return err },
		"fill hourly attempt statistics":             func() error { _, err := FillAttemptHours(ctx, p, time.Hour); return err },
		"read the span of hourly attempt statistics": func() error { _, _, err := FilledHours(ctx, p); return err },
		"read hourly attempt statistics":             func() error { _, err := HourStats(ctx, p, time.Hour, now, now); return err },
		"read attempt statistics":                    func() error { _, err := AttemptStats(ctx, p, now, now, time.Hour); return err },
		"read timing history":                        func() error { _, err := TimingHistory(ctx, p, time.Hour, time.Hour, ""); return err },
		"resolve build:x":                            func() error { _, _, err := SelectorSamples(ctx, p, "build:x"); return err },
		"recent builds":                              func() error { _, err := RecentBuilds(ctx, p, 1); return err },
		"timings of build x":                         func() error { _, err := BuildSamples(ctx, p, "x", 1); return err },
		"record bench":                               func() error { _, err := RecordBench(ctx, p, nil); return err },
		`register circuit "c"`:                       func() error { return RegisterCircuit(ctx, p, testCircuit("c", 1)) },
		`read key of circuit "c"`:                    func() error { _, _, _, err := CurrentKey(ctx, p, "c"); return err },
		"read circuit sizes":                         func() error { _, err := CircuitSizes(ctx, p); return err },
		"read circuit names":                         func() error { _, err := CircuitNames(ctx, p); return err },
		`read pk digest of circuit "c"`:              func() error { _, _, err := PKDigest(ctx, p, "c"); return err },
		"fail orphaned requests":                     func() error { _, err := FailOrphaned(ctx, p); return err },
		"read the circuits of queued requests":       func() error { _, err := QueuedCircuits(ctx, p); return err },
		`read state of "r"`:                          func() error { _, _, err := RequestState(ctx, p, "r"); return err },
		"read request status":                        func() error { _, err := Statuses(ctx, p, StatusFilter{Limit: 1}); return err },
		"read failed requests":                       func() error { _, err := FailedSince(ctx, p, time.Hour); return err },
		"count finished requests":                    func() error { _, _, err := RequestCounts(ctx, p); return err },
		"read stored proofs":                         func() error { _, err := StoredProofs(ctx, p, nil, true); return err },
		`lock request "r"`:                           func() error { return StoreProof(ctx, p, &Proof{RequestID: "r"}, false) },
		`mark "r" failed`:                            func() error { return SetRequestOutcome(ctx, p, "r", 1, "e", true) },
		"discard job 1":                              func() error { return DiscardJob(ctx, p, 1, 1, now, "e") },
		`hand "r" back to the queue`:                 func() error { return HandBack(ctx, p, "r", 1, "e") },
		`record attempt 1 of "r"`:                    func() error { return FinishAttempt(ctx, p, &Attempt{RequestID: "r", Attempt: 1}) },
		"read cancel request of job 1":               func() error { _, err := CancelRequested(ctx, p, 1, "q"); return err },
		"read pause state of queue q":                func() error { _, _, err := QueuePaused(ctx, p, "q"); return err },
		"count River jobs in queue q":                func() error { _, err := QueueJobs(ctx, p, "q"); return err },
		"rescue the jobs of dead workers":            func() error { _, err := RescueDeadWorkers(ctx, p, "w", time.Second, []string{"q"}); return err },
		"hand back the jobs of the previous process": func() error { _, err := HandBackClientJobs(ctx, p, "c", []string{"q"}, "e"); return err },
		"prune stopped workers":                      func() error { _, err := PruneWorkers(ctx, p, time.Hour); return err },
		`heartbeat of worker "w"`:                    func() error { _, err := Heartbeat(ctx, p, &Beat{Worker: "w"}); return err },
		`mark worker "w" stopped`:                    func() error { return MarkWorkerStopped(ctx, p, "w", "c") },
		`read the last heartbeat of worker "w"`:      func() error { _, _, err := LastHeartbeat(ctx, p, "w"); return err },
		`try the name lock of worker "w"`:            func() error { _, err := TryNameLock(ctx, p, "w"); return err },
		`submit "r"`:                                 func() error { _, err := Submit(ctx, p, &Submission{RequestID: "r"}); return err },
		"cuzk.retry_proof":                           func() error { _, err := Retry(ctx, p, "r"); return err },
		"cuzk.cancel_proof":                          func() error { _, _, err := Cancel(ctx, p, "r"); return err },
	} {
		err := run()
		if err == nil || !strings.HasPrefix(err.Error(), prefix+": ") || !errors.Is(err, context.Canceled) {
			t.Errorf("got %v; want an error starting %q that wraps context.Canceled", err, prefix+": ")
		}
	}
}
