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
// queue holds a long request and the device's lane is held by one: it has a slot of
// its own (jobs.UrgentQueue) and a prover lane of its own. Without urgent slots the
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
			startWorkerWith(t, db.Pool, []worker.Prover{{Backend: dev}}, nil, func(cfg *worker.Config) {
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
			// Claimed, solved and proven while the long requests hold every slot and
			// the device's lanes: a lane of the device is kept for urgent requests.
			waitSucceeded(t, db.Pool, "urgent", 1)
			if s := jobStates(t, db, "long"); s["running"] != slots || s["available"] != 1 {
				t.Errorf("long requests' jobs %v once the urgent one is proven, want %d running and 1 available", s, slots)
			}
			release()
			waitSucceeded(t, db.Pool, "long", slots+1)
			verifyStored(t, db.Pool, "urgent-1")
		})
	}
}

// An urgent request is solved while every synthesis slot is taken: its solve does not
// wait for other requests' solves to end. A request that is not urgent waits for a
// slot, and the wait is in its mem_wait phase, so the phases still add up to its total.
func TestUrgentSolvesWhileEverySynthesisSlotIsTaken(t *testing.T) {
	const circuit = "synthetic-k8"
	db := pgtest.New(t)
	register(t, db.Pool, circuit)
	rw := startWorker(t, db.Pool, func(cfg *worker.Config) {
		cfg.SynthConcurrency, cfg.BatchWait = 1, 0
	})
	release := rw.w.HoldSynthSlots()
	held := true
	defer func() {
		if held {
			release()
		}
	}()
	insertRequests(t, db.Pool, "urgent", circuit, 1, jobs.UrgentPriority)
	waitSucceeded(t, db.Pool, "urgent", 1)
	verifyStored(t, db.Pool, "urgent-1")

	insertRequests(t, db.Pool, "normal", circuit, 1, 2)
	deadline := time.Now().Add(2 * time.Minute)
	for jobStates(t, db, "normal")["running"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("request not claimed: its job %v", jobStates(t, db, "normal"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	const hold = 2 * time.Second
	time.Sleep(hold)
	var started *time.Time
	if err := db.Pool.QueryRow(context.Background(), `SELECT max(synth_started_at) FROM cuzk.proof_attempts a
		JOIN cuzk.proof_requests r USING (request_id) WHERE r.request_id = 'normal-1'`).Scan(&started); err != nil {
		t.Fatal(err)
	}
	if started != nil {
		t.Fatalf("request not urgent began synthesis at %v while every slot was taken", started)
	}
	released := time.Now()
	release()
	held = false
	waitSucceeded(t, db.Pool, "normal", 1)
	var memWait, total, sum float64
	var synthStarted time.Time
	if err := db.Pool.QueryRow(context.Background(), `
		SELECT mem_wait_ms, total_ms, queue_ms + batch_wait_ms + mem_wait_ms + srs_ms + synth_ms + prove_wait_ms + prove_ms + verify_ms + persist_ms,
		       synth_started_at
		  FROM cuzk.proof_attempts WHERE request_id = 'normal-1'`).Scan(&memWait, &total, &sum, &synthStarted); err != nil {
		t.Fatal(err)
	}
	if synthStarted.Before(released) {
		t.Errorf("synthesis began at %v, before the slots were released at %v", synthStarted, released)
	}
	if memWait < float64(hold/time.Millisecond)/2 {
		t.Errorf("mem_wait_ms %.1f, want the wait for a slot (at least %v) in it", memWait, hold/2)
	}
	if sum < total*0.9 {
		t.Errorf("phases add up to %.1f ms of the total %.1f", sum, total)
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
