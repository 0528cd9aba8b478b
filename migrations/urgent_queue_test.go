package migrations_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/migrations"
)

// jobOf is the queue and River priority of request rid's current job, "" when it has
// none (waiting for admission).
func jobOf(t *testing.T, q pgxQuerier, rid string) (queue string, priority int) {
	t.Helper()
	err := q.QueryRow(context.Background(), `
		SELECT coalesce(j.queue, ''), coalesce(j.priority, 0)
		  FROM cuzk.proof_requests r LEFT JOIN river_job j ON j.id = r.job_id WHERE r.request_id = $1`, rid).
		Scan(&queue, &priority)
	if err != nil {
		t.Fatalf("job of %s: %v", rid, err)
	}
	return queue, priority
}

// runJob marks request rid's job running, as River's claim by a worker does.
func runJob(t *testing.T, pool *pgxpool.Pool, rid string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `
		UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = '{client-1}'
		 WHERE id = (SELECT job_id FROM cuzk.proof_requests WHERE request_id = $1)`, rid); err != nil {
		t.Fatalf("run the job of %s: %v", rid, err)
	}
}

func wantJob(t *testing.T, q pgxQuerier, rid, queue string, priority int) {
	t.Helper()
	if gq, gp := jobOf(t, q, rid); gq != queue || gp != priority {
		t.Errorf("job of %s: queue %q priority %d, want %q %d", rid, gq, gp, queue, priority)
	}
}

// The job of an urgent request (priority 1) is in queue cuzk_urgent, every other in
// cuzk, the same as jobs.QueueFor says, whether it is admitted at insert, after a
// cancel of another makes room, or on retry; a cancel's notification names the queue
// its worker claimed the job from.
func TestUrgentJobsHaveTheirOwnQueue(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	_, op := login(t, db, "op", "cuzk_operator")
	_, sub := login(t, db, "sub", "cuzk_submitter")
	for p := 1; p <= 4; p++ {
		if got := scalarText(t, sub, `SELECT cuzk.job_queue($1)`, p); got != jobs.QueueFor(p) {
			t.Errorf("cuzk.job_queue(%d) = %q, jobs.QueueFor says %q", p, got, jobs.QueueFor(p))
		}
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '1' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`SELECT cuzk.submit_proof('u1', 'c', '{"X": "1"}'::jsonb, priority => 1)`,
		`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority) VALUES ('u2', 'c', '{"X": "2"}', 1)`,
		`SELECT cuzk.submit_proof('n1', 'c', '{"X": "3"}'::jsonb)`,
		`SELECT cuzk.submit_proof('n4', 'c', '{"X": "4"}'::jsonb, priority => 4)`,
	} {
		if _, err := op.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	wantJob(t, db.Pool, "u1", jobs.UrgentQueue, 1)
	wantJob(t, db.Pool, "u2", "", 0) // one admitted per submitter and priority
	wantJob(t, db.Pool, "n1", jobs.Queue, 2)
	wantJob(t, db.Pool, "n4", jobs.Queue, 4)

	// A worker claims u1 (River's claim, then the attempt's): u2 is admitted.
	runJob(t, db.Pool, "u1")
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET state = 'running', attempts = 1 WHERE request_id = 'u1'`); err != nil {
		t.Fatal(err)
	}
	wantJob(t, db.Pool, "u2", jobs.UrgentQueue, 1)

	// Cancelling the running u1 tells the producer of cuzk_urgent, which holds it.
	listener, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, `LISTEN "public.river_control"`); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Exec(ctx, `SELECT cuzk.cancel_proof('u1')`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := listener.WaitForNotification(wctx)
	if err != nil {
		t.Fatalf("no cancel notification: %v", err)
	}
	var msg struct {
		Action string `json:"action"`
		Queue  string `json:"queue"`
	}
	if err := json.Unmarshal([]byte(n.Payload), &msg); err != nil || msg.Action != "cancel" || msg.Queue != jobs.UrgentQueue {
		t.Errorf("cancel notification %s (%v), want action cancel in queue %s", n.Payload, err, jobs.UrgentQueue)
	}

	// Retried, u1 waits behind u2; once u2 is cancelled it is admitted to cuzk_urgent.
	if _, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'cancelled', finalized_at = now()
	                                 WHERE id = (SELECT job_id FROM cuzk.proof_requests WHERE request_id = 'u1')`); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Exec(ctx, `SELECT cuzk.retry_proof('u1')`); err != nil {
		t.Fatal(err)
	}
	wantJob(t, db.Pool, "u1", "", 0)
	if _, err := op.Exec(ctx, `SELECT cuzk.cancel_proof('u2')`); err != nil {
		t.Fatal(err)
	}
	wantJob(t, db.Pool, "u1", jobs.UrgentQueue, 1)
}

// A change of a request's priority moves its waiting job to the queue and River
// priority of the new one and admits what the change made room for; a running job
// stays where its worker claimed it, and if River puts it back for a retry,
// cuzk.repair_jobs moves it.
func TestPriorityChangeMovesTheJob(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	_, op := login(t, db, "op", "cuzk_operator")
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '1' WHERE name = 'admitted_per_submitter'`); err != nil {
		t.Fatal(err)
	}
	for _, rid := range []string{"a", "b"} {
		if _, err := op.Exec(ctx, `SELECT cuzk.submit_proof($1, 'c', '{"X": "1"}'::jsonb, priority => 1)`, rid); err != nil {
			t.Fatal(err)
		}
	}
	wantJob(t, db.Pool, "a", jobs.UrgentQueue, 1)
	wantJob(t, db.Pool, "b", "", 0)

	setPriority := func(rid string, p int) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET priority = $2 WHERE request_id = $1`, rid, p); err != nil {
			t.Fatal(err)
		}
	}
	// a leaves the urgent group: its job moves, and b takes its place there.
	setPriority("a", 2)
	wantJob(t, db.Pool, "a", jobs.Queue, 2)
	wantJob(t, db.Pool, "b", jobs.UrgentQueue, 1)
	setPriority("a", 3)
	wantJob(t, db.Pool, "a", jobs.Queue, 3)

	// b is running: its job stays in cuzk_urgent while it runs.
	runJob(t, db.Pool, "b")
	setPriority("b", 2)
	wantJob(t, db.Pool, "b", jobs.UrgentQueue, 1)
	if got := scalarText(t, db.Pool, `SELECT count(*)::text FROM cuzk.repair_jobs()`); got != "0" {
		t.Errorf("repair_jobs changed %s requests while b runs, want 0", got)
	}
	// River puts it back for a retry, still in cuzk_urgent: the upkeep moves it.
	if _, err := db.Pool.Exec(ctx, `UPDATE river_job SET state = 'retryable', scheduled_at = now() + interval '1 minute'
	                                 WHERE id = (SELECT job_id FROM cuzk.proof_requests WHERE request_id = 'b')`); err != nil {
		t.Fatal(err)
	}
	if got := scalarText(t, db.Pool, `SELECT string_agg(request_id || ':' || action, ' ') FROM cuzk.repair_jobs()`); got != "b:moved" {
		t.Errorf("repair_jobs: %q, want b:moved", got)
	}
	wantJob(t, db.Pool, "b", jobs.Queue, 2)
	setPriority("b", 1)
	wantJob(t, db.Pool, "b", jobs.UrgentQueue, 1)
}

// Migration 019 moves the waiting jobs of urgent requests made before it to
// cuzk_urgent, and leaves running ones and the others where they are.
func TestUrgentJobsMovedByMigration(t *testing.T) {
	db := pgtest.Empty(t)
	ctx := context.Background()
	if err := migrateTo(ctx, db.Pool, 18); err != nil {
		t.Fatalf("migrate to 018: %v", err)
	}
	addCircuit(t, db, "c")
	for _, s := range []struct {
		rid string
		p   int
	}{{"u-wait", 1}, {"u-run", 1}, {"n", 2}} {
		if _, err := db.Pool.Exec(ctx, `SELECT cuzk.submit_proof($1, 'c', '{"X": "1"}'::jsonb, priority => $2)`, s.rid, s.p); err != nil {
			t.Fatal(err)
		}
	}
	runJob(t, db.Pool, "u-run")
	wantJob(t, db.Pool, "u-wait", jobs.Queue, 1)
	if _, err := migrations.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	wantJob(t, db.Pool, "u-wait", jobs.UrgentQueue, 1)
	wantJob(t, db.Pool, "u-run", jobs.Queue, 1)
	wantJob(t, db.Pool, "n", jobs.Queue, 2)
}
