package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/jobs"
)

func exec(t *testing.T, db DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), query, args...); err != nil {
		t.Fatal(err)
	}
}

func jobOf(t *testing.T, db DB, requestID string) int64 {
	t.Helper()
	var id int64
	if err := db.QueryRow(context.Background(), "SELECT job_id FROM cuzk.proof_requests WHERE request_id = $1", requestID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// The queries over River's jobs: a cancel is seen only on a running job of the queue,
// a dead worker's running job is handed back once, and a request whose job was
// discarded is failed once.
func TestRiverJobQueries(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	mustRegister(t, p, testCircuit("c", 1))
	mustSubmit(t, p, &Submission{RequestID: "r1", Circuit: "c", Inputs: []byte(`{}`)})
	mustSubmit(t, p, &Submission{RequestID: "r2", Circuit: "c", Inputs: []byte(`{}`)})
	j1, j2 := jobOf(t, p, "r1"), jobOf(t, p, "r2")
	if counts, err := QueueJobs(ctx, p, "cuzk"); err != nil || counts[0] != (JobCount{"available", 2}) || counts[1].N != 0 {
		t.Fatalf("QueueJobs: %v, %v; want 2 available", counts, err)
	}

	// r1's job runs under client-1 of worker w, and a cancel was asked for.
	exec(t, p, `UPDATE public.river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['client-1'],
	                   metadata = metadata || '{"cancel_attempted_at": "2026-01-01T00:00:00Z"}' WHERE id = $1`, j1)
	if _, err := BeginAttempt(ctx, p, "r1", j1, Origin{Worker: "w"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job   int64
		queue string
		want  bool
	}{{j1, "cuzk", true}, {j1, "other", false}, {j2, "cuzk", false}} {
		if got, err := CancelRequested(ctx, p, tc.job, tc.queue); err != nil || got.Requested != tc.want {
			t.Errorf("CancelRequested(%d, %s): %+v, %v; want requested %t", tc.job, tc.queue, got, err, tc.want)
		}
	}

	if _, err := Heartbeat(ctx, p, &Beat{Worker: "w", Host: "h", PID: 1, Backend: "cpu", Devices: []byte(`[]`), Config: []byte(`{}`),
		RiverClientID: "client-1"}); err != nil {
		t.Fatal(err)
	}
	if jobs, err := RescueDeadWorkers(ctx, p, "self", time.Hour, []string{"cuzk"}); err != nil || len(jobs) != 0 {
		t.Fatalf("rescue with a live worker: %v, %v", jobs, err)
	}
	exec(t, p, "UPDATE cuzk.workers SET last_seen_at = now() - interval '1 hour'")
	if jobs, err := RescueDeadWorkers(ctx, p, "w", time.Minute, []string{"cuzk"}); err != nil || len(jobs) != 0 {
		t.Fatalf("rescue by the worker itself: %v, %v", jobs, err)
	}
	jobs, err := RescueDeadWorkers(ctx, p, "self", time.Minute, []string{"cuzk"})
	if err != nil || len(jobs) != 1 || jobs[0] != (RescuedJob{JobID: j1, Worker: "w"}) {
		t.Fatalf("rescue of a dead worker: %+v, %v; want job %d of w, not discarded", jobs, err, j1)
	}
	if jobs, err := RescueDeadWorkers(ctx, p, "self", time.Minute, []string{"cuzk"}); err != nil || len(jobs) != 0 {
		t.Fatalf("second rescue: %v, %v; want none", jobs, err)
	}
	if counts, err := QueueJobs(ctx, p, "cuzk"); err != nil || counts[0].N != 2 || counts[1].N != 0 {
		t.Fatalf("after the rescue: %v, %v; want 2 available", counts, err)
	}
	if last, _, _ := LastHeartbeat(ctx, p, "w"); !last.Stopped {
		t.Fatal("the dead worker is not marked stopped")
	}

	// r2's job was discarded while r2 still looked queued.
	exec(t, p, "UPDATE public.river_job SET state = 'discarded', finalized_at = now() WHERE id = $1", j2)
	if n, err := FailOrphaned(ctx, p); err != nil || n != 1 {
		t.Fatalf("FailOrphaned: %d, %v; want 1", n, err)
	}
	if state, last, err := RequestState(ctx, p, "r2"); err != nil || state != "failed" || last == "" {
		t.Fatalf("orphaned request: %q, %q, %v; want failed with an error", state, last, err)
	}
	if n, err := FailOrphaned(ctx, p); err != nil || n != 0 {
		t.Fatalf("second FailOrphaned: %d, %v; want 0", n, err)
	}
}

// A dead worker's running jobs are handed back from each queue named, the urgent one
// included, and counted per queue.
func TestRescueCoversTheUrgentQueue(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	mustRegister(t, p, testCircuit("c", 1))
	mustSubmit(t, p, &Submission{RequestID: "n", Circuit: "c", Inputs: []byte(`{}`)})
	mustSubmit(t, p, &Submission{RequestID: "u", Circuit: "c", Inputs: []byte(`{}`), Priority: jobs.UrgentPriority})
	for _, q := range jobs.Queues() {
		if counts, err := QueueJobs(ctx, p, q); err != nil || counts[0] != (JobCount{"available", 1}) {
			t.Fatalf("QueueJobs(%s): %v, %v; want 1 available", q, counts, err)
		}
	}
	exec(t, p, `UPDATE public.river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['client-1']`)
	if _, err := Heartbeat(ctx, p, &Beat{Worker: "w", Host: "h", PID: 1, Backend: "cpu", Devices: []byte(`[]`), Config: []byte(`{}`),
		RiverClientID: "client-1"}); err != nil {
		t.Fatal(err)
	}
	exec(t, p, "UPDATE cuzk.workers SET last_seen_at = now() - interval '1 hour'")
	rescued, err := RescueDeadWorkers(ctx, p, "self", time.Minute, jobs.Queues())
	if err != nil || len(rescued) != 2 {
		t.Fatalf("rescue of a dead worker: %+v, %v; want both jobs", rescued, err)
	}
	for _, q := range jobs.Queues() {
		if counts, err := QueueJobs(ctx, p, q); err != nil || counts[0] != (JobCount{"available", 1}) || counts[1].N != 0 {
			t.Errorf("QueueJobs(%s) after the rescue: %v, %v; want 1 available, none running", q, counts, err)
		}
	}
}

// A worker marked stopped while alive (its heartbeat was late) claims a job before its
// next beat and dies: the job is handed back once the row is silent for deadAfter,
// although the row was already stopped; a stopped worker with no running job is left
// as it was.
func TestRescueLooksAgainAtStoppedWorkersWithRunningJobs(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	mustRegister(t, p, testCircuit("c", 1))
	mustSubmit(t, p, &Submission{RequestID: "r", Circuit: "c", Inputs: []byte(`{}`)})
	for _, b := range []*Beat{{Worker: "w", RiverClientID: "client-w"}, {Worker: "idle", RiverClientID: "client-idle"}} {
		b.Host, b.PID, b.Backend, b.Devices, b.Config = "h", 1, "cpu", []byte(`[]`), []byte(`{}`)
		if _, err := Heartbeat(ctx, p, b); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, p, "UPDATE cuzk.workers SET last_seen_at = now() - interval '1 hour'")
	if jobs, err := RescueDeadWorkers(ctx, p, "self", time.Minute, []string{"cuzk"}); err != nil || len(jobs) != 0 {
		t.Fatalf("rescue with no running job: %v, %v; want none", jobs, err)
	}
	var stoppedAt time.Time
	if err := p.QueryRow(ctx, "SELECT stopped_at FROM cuzk.workers WHERE worker = 'idle'").Scan(&stoppedAt); err != nil {
		t.Fatal(err)
	}
	if last, _, _ := LastHeartbeat(ctx, p, "w"); !last.Stopped {
		t.Fatal("the silent worker is not marked stopped")
	}

	j := jobOf(t, p, "r")
	exec(t, p, `UPDATE public.river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['client-w']
	             WHERE id = $1`, j)
	jobs, err := RescueDeadWorkers(ctx, p, "self", time.Minute, []string{"cuzk"})
	if err != nil || len(jobs) != 1 || jobs[0] != (RescuedJob{JobID: j, Worker: "w"}) {
		t.Fatalf("rescue of a stopped worker's running job: %+v, %v; want job %d of w", jobs, err, j)
	}
	if counts, err := QueueJobs(ctx, p, "cuzk"); err != nil || counts[0] != (JobCount{"available", 1}) || counts[1].N != 0 {
		t.Fatalf("after the rescue: %v, %v; want 1 available, none running", counts, err)
	}
	var again time.Time
	if err := p.QueryRow(ctx, "SELECT stopped_at FROM cuzk.workers WHERE worker = 'idle'").Scan(&again); err != nil || !again.Equal(stoppedAt) {
		t.Fatalf("the idle stopped worker's stopped_at moved from %s to %s (%v)", stoppedAt, again, err)
	}
}

// A selector that matches nothing is refused with code 22023 (as SelectorSamples
// says); each RecordBench gets an id of its own, even for no runs, and stores all its
// runs or none (two runs of one number and arm conflict).
func TestTimingQueriesEdgeCases(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	_, _, err := SelectorSamples(ctx, db.Pool, "build:")
	wantErr(t, err, "resolve build:: ", "22023")
	_, _, err = SelectorSamples(ctx, db.Pool, "nothing-matches")
	wantErr(t, err, "resolve nothing-matches: ", "22023")

	now := time.Now()
	run := BenchRun{Circuit: "c", Worker: "w", Build: "v1", Backend: "cpu", StartedAt: now, FinishedAt: now, TotalMs: 1}
	_, err = RecordBench(ctx, db.Pool, []BenchRun{run, run})
	wantErr(t, err, "record bench: store bench runs: ", "23505")
	second := run
	second.Run = 1
	first, err := RecordBench(ctx, db.Pool, []BenchRun{run, second})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := RecordBench(ctx, db.Pool, nil)
	if err != nil || empty == first {
		t.Fatalf("RecordBench of no runs: id %d, %v; want a new id", empty, err)
	}
	if n := count(t, db.Pool, "SELECT count(*) FROM cuzk.bench_runs WHERE bench_id = $1", first); n != 2 {
		t.Fatalf("%d runs stored under bench %d, want 2", n, first)
	}
	run.Arm = "C" // arms are '', A or B
	_, err = RecordBench(ctx, db.Pool, []BenchRun{run})
	wantErr(t, err, "record bench: store bench runs: ", "23514")
	if n := count(t, db.Pool, "SELECT count(*) FROM cuzk.bench_runs"); n != 2 {
		t.Fatalf("%d runs after a refused bench, want 2", n)
	}
}

// ClaimJobsExcept claims as River's fetch does (the same row, the same columns set),
// leaving out the jobs it is told to.
func TestClaimJobsExceptIsRiversFetchWithoutSome(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	mustRegister(t, p, testCircuit("c", 1))
	for _, id := range []string{"r1", "r2", "r3"} {
		mustSubmit(t, p, &Submission{RequestID: id, Circuit: "c", Inputs: []byte(`{}`)})
	}
	j1, j2, j3 := jobOf(t, p, "r1"), jobOf(t, p, "r2"), jobOf(t, p, "r3")
	params := &riverdriver.JobGetAvailableParams{ClientID: "client-1", MaxAttemptedBy: 2, MaxToLock: 1, Queue: jobs.Queue}

	got, err := ClaimJobsExcept(ctx, p, params, []int64{j1})
	if err != nil || len(got) != 1 || got[0].ID != j2 {
		t.Fatalf("ClaimJobsExcept(except %d): %v, %v; want job %d", j1, got, err, j2)
	}
	river, err := riverpgxv5.New(p).GetExecutor().JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{
		ClientID: "client-1", MaxAttemptedBy: 2, MaxToLock: 1, Queue: jobs.Queue})
	if err != nil || len(river.Jobs) != 1 || river.Jobs[0].ID != j1 {
		t.Fatalf("River's fetch: %v, %v; want job %d", river, err, j1)
	}
	mine, theirs := got[0], river.Jobs[0]
	if mine.State != rivertype.JobStateRunning || mine.State != theirs.State || mine.Attempt != 1 || mine.Attempt != theirs.Attempt ||
		!slices.Equal(mine.AttemptedBy, theirs.AttemptedBy) || mine.AttemptedAt == nil || theirs.AttemptedAt == nil {
		t.Errorf("claimed %+v, River's fetch %+v: want the same state, attempt, attempted_by and an attempted_at", mine, theirs)
	}

	// attempted_by keeps its last MaxAttemptedBy entries, as River's fetch does.
	exec(t, p, `UPDATE public.river_job SET state = 'available', attempted_by = ARRAY['a', 'b'] WHERE id = $1`, j3)
	exec(t, p, `UPDATE public.river_job SET state = 'available', attempted_by = ARRAY['a', 'b'] WHERE id = $1`, j2)
	got, err = ClaimJobsExcept(ctx, p, params, []int64{j2})
	if err != nil || len(got) != 1 || got[0].ID != j3 || !slices.Equal(got[0].AttemptedBy, []string{"b", "client-1"}) {
		t.Fatalf("ClaimJobsExcept(except %d): %+v, %v; want job %d attempted by b, client-1", j2, got, err, j3)
	}
	// Nothing left but the job left out.
	if got, err := ClaimJobsExcept(ctx, p, params, []int64{j2}); err != nil || len(got) != 0 {
		t.Fatalf("ClaimJobsExcept with only the left-out job available: %v, %v; want none", got, err)
	}
}
