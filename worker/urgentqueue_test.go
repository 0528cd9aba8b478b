package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// gatedDevice is the CPU backend whose proofs of circuit slow wait until open is
// closed: a request of slow holds its slot for as long as the test wants.
type gatedDevice struct {
	prover.Backend
	slow    string
	open    chan struct{}
	entered chan struct{} // one send per proof of slow that began to wait
}

func (d *gatedDevice) Prove(ctx context.Context, k prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	if len(sols) > 0 && sols[0].Circuit == d.slow {
		select {
		case d.entered <- struct{}{}:
		default:
		}
		select {
		case <-d.open:
		case <-ctx.Done():
			return nil, prover.PhaseTimes{}, context.Cause(ctx)
		}
	}
	return d.Backend.Prove(ctx, k, sols)
}

// jobQueue is the queue of request rid's job.
func jobQueue(t *testing.T, db *pgtest.DB, rid string) string {
	t.Helper()
	var q string
	if err := db.Pool.QueryRow(context.Background(), `SELECT j.queue FROM cuzk.proof_requests r JOIN river_job j ON j.id = r.job_id
	                                                  WHERE r.request_id = $1`, rid).Scan(&q); err != nil {
		t.Fatalf("queue of %s's job: %v", rid, err)
	}
	return q
}

// jobStates counts the River jobs of the requests named prefix-* by state.
func jobStates(t *testing.T, db *pgtest.DB, prefix string) map[string]int {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `
		SELECT j.state::text, count(*)::int FROM cuzk.proof_requests r JOIN river_job j ON j.id = r.job_id
		 WHERE r.request_id LIKE $1 || '-%' GROUP BY 1`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// An urgent request is claimed and proven while every slot of the worker's normal
// queue holds a long request: it has a slot of its own (jobs.UrgentQueue), and at the
// prover it goes before the long requests already waiting. Without urgent slots the
// worker leaves it in the queue however long the long requests take.
func TestUrgentQueueClaimsWhileEverySlotIsBusy(t *testing.T) {
	const long, short = "synthetic-k8", "synthetic-k10"
	for _, c := range []struct {
		name  string
		slots int
	}{{"urgent slots", 2}, {"no urgent slots", 0}} {
		t.Run(c.name, func(t *testing.T) {
			db := pgtest.New(t)
			register(t, db.Pool, long)
			register(t, db.Pool, short)
			dev := &gatedDevice{Backend: prover.NewCPU(), slow: long, open: make(chan struct{}), entered: make(chan struct{}, 1)}
			opened := false
			release := func() {
				if !opened {
					opened = true
					close(dev.open)
				}
			}
			rw := startWorkerWith(t, db.Pool, []worker.Prover{{Backend: dev}}, nil, func(cfg *worker.Config) {
				cfg.MaxBatch, cfg.QueueDepth, cfg.SynthConcurrency, cfg.BatchWait = 1, 1, 1, 0
				cfg.UrgentSlots = c.slots
			})
			t.Cleanup(release) // before the worker stops: cleanups run last first
			// Three claimed (a batch proving, one waiting for the prover, one
			// synthesized behind it) fill the worker's slots: the fourth stays available.
			const slots = 3
			insertRequests(t, db.Pool, "long", long, slots+1, 2)
			select {
			case <-dev.entered:
			case <-time.After(2 * time.Minute):
				t.Fatal("no proof of the long circuit began")
			}
			deadline := time.Now().Add(2 * time.Minute)
			for s := jobStates(t, db, "long"); s["running"] != slots || s["available"] != 1; s = jobStates(t, db, "long") {
				if time.Now().After(deadline) {
					t.Fatalf("long requests' jobs %v, want %d running and 1 available", s, slots)
				}
				time.Sleep(20 * time.Millisecond)
			}

			insertRequests(t, db.Pool, "urgent", short, 1, jobs.UrgentPriority)
			if q := jobQueue(t, db, "urgent-1"); q != jobs.UrgentQueue {
				t.Fatalf("urgent request's job in queue %q, want %s", q, jobs.UrgentQueue)
			}
			if c.slots == 0 {
				// Many poll intervals (100 ms) and notifications: never claimed.
				time.Sleep(3 * time.Second)
				if s := jobStates(t, db, "urgent"); s["available"] != 1 {
					t.Errorf("urgent job %v with no urgent slots, want it left available", s)
				}
				release()
				waitSucceeded(t, db.Pool, "long", slots+1)
				if s := jobStates(t, db, "urgent"); s["available"] != 1 {
					t.Errorf("urgent job %v once the long requests are done, want it left available", s)
				}
				return
			}
			// Claimed and solved while the long requests hold every slot, and queued
			// ahead of them at the prover.
			deadline = time.Now().Add(2 * time.Minute)
			for rw.w.UrgentQueued() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("urgent request not queued for the prover; its job %v", jobStates(t, db, "urgent"))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if s := jobStates(t, db, "long"); s["running"] != slots || s["available"] != 1 {
				t.Errorf("long requests' jobs %v while the urgent one waits for the prover, want %d running and 1 available", s, slots)
			}
			release()
			waitSucceeded(t, db.Pool, "urgent", 1)
			waitSucceeded(t, db.Pool, "long", slots+1)
			verifyStored(t, db.Pool, "urgent-1")
			var before int
			if err := db.Pool.QueryRow(context.Background(), `
				SELECT count(*) FROM cuzk.proof_requests l, cuzk.proof_requests u
				 WHERE u.request_id = 'urgent-1' AND l.request_id LIKE 'long-%' AND l.finished_at < u.finished_at`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			if before > 1 {
				t.Errorf("%d long requests finished before the urgent one, want at most the one proving when it came", before)
			}
		})
	}
}

// A running urgent request is cancelled through cuzk.cancel_proof (River's cancel
// reaches the worker through the urgent queue, which holds its job) and, retried,
// goes to the urgent queue again and is proven.
func TestUrgentRequestCancelledAndRetried(t *testing.T) {
	db := pgtest.New(t)
	register(t, db.Pool, partitionCircuit)
	gate := &gatedProve{Backend: prover.NewCPU(), at: 1, hold: true, entered: make(chan struct{})}
	startWorkerWith(t, db.Pool, []worker.Prover{{Backend: gate}}, nil, nil)
	insertRequests(t, db.Pool, "u", partitionCircuit, 1, jobs.UrgentPriority)
	select {
	case <-gate.entered:
	case <-time.After(2 * time.Minute):
		t.Fatal("the urgent request's proof never began")
	}
	if out := psql(t, db.URL, "SELECT cuzk.cancel_proof('u-1');"); out != "t" {
		t.Fatalf("cancel_proof: %q", out)
	}
	waitState(t, db.Pool, "u-1", "cancelled")
	waitAttemptOutcome(t, db.Pool, "u-1", 1, "cancelled")
	psql(t, db.URL, "SELECT cuzk.retry_proof('u-1');")
	if q := jobQueue(t, db, "u-1"); q != jobs.UrgentQueue {
		t.Errorf("retried urgent request's job in queue %q, want %s", q, jobs.UrgentQueue)
	}
	waitState(t, db.Pool, "u-1", "succeeded")
	verifyStored(t, db.Pool, "u-1")
}
