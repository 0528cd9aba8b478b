package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// A heartbeat under a name seen before updates that row (the conflict on worker) and
// returns the River client id it held; a NULL client id reads as "". Devices and
// config are required.
func TestHeartbeatConflictsAndNulls(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	b := &Beat{Worker: "w", Host: "h", PID: 1, Backend: "cpu"}
	_, err := Heartbeat(ctx, db.Pool, b)
	wantErr(t, err, `heartbeat of worker "w": `, "23502")
	b.Devices, b.Config = []byte(`[]`), []byte(`{}`) // no client id
	prev, err := Heartbeat(ctx, db.Pool, b)
	if err != nil || prev != nil {
		t.Fatalf("first heartbeat: previous client %v, %v; want nil", prev, err)
	}
	last, ok, err := LastHeartbeat(ctx, db.Pool, "w")
	if err != nil || !ok || last.RiverClientID != "" || last.Host != "h" || last.PID != 1 || last.Stopped {
		t.Fatalf("LastHeartbeat: %+v, %t, %v", last, ok, err)
	}
	b.RiverClientID, b.PID = "client-1", 2
	if prev, err := Heartbeat(ctx, db.Pool, b); err != nil || prev != nil {
		t.Fatalf("heartbeat over a row with no client id: %v, %v; want nil", prev, err)
	}
	b.RiverClientID = "client-2"
	if prev, err := Heartbeat(ctx, db.Pool, b); err != nil || prev == nil || *prev != "client-1" {
		t.Fatalf("heartbeat of a second client: %v, %v; want client-1", prev, err)
	}
	if n := count(t, db.Pool, "SELECT count(*) FROM cuzk.workers"); n != 1 {
		t.Fatalf("%d worker rows for one name", n)
	}

	// Stopping under another client's id leaves the live row alone.
	if err := MarkWorkerStopped(ctx, db.Pool, "w", "client-1"); err != nil {
		t.Fatal(err)
	}
	if last, _, _ := LastHeartbeat(ctx, db.Pool, "w"); last.Stopped {
		t.Fatal("a former client stopped the live worker's row")
	}
	if err := MarkWorkerStopped(ctx, db.Pool, "w", "client-2"); err != nil {
		t.Fatal(err)
	}
	if last, _, _ := LastHeartbeat(ctx, db.Pool, "w"); !last.Stopped || last.RiverClientID != "client-2" {
		t.Fatalf("after its own client stopped it: %+v", last)
	}
	if lw, err := LiveWorkers(ctx, db.Pool, time.Hour); err != nil || len(lw) != 0 {
		t.Fatalf("LiveWorkers lists a stopped worker: %+v, %v", lw, err)
	}
	// A heartbeat revives the row; pruning keeps rows stopped more recently than keep.
	if _, err := Heartbeat(ctx, db.Pool, b); err != nil {
		t.Fatal(err)
	}
	if lw, err := LiveWorkers(ctx, db.Pool, time.Hour); err != nil || len(lw) != 1 || string(lw[0].Devices) != "[]" || lw[0].Running != 0 {
		t.Fatalf("LiveWorkers: %+v, %v; want w with no device and no attempt running", lw, err)
	}
	if err := MarkWorkerStopped(ctx, db.Pool, "w", "client-2"); err != nil {
		t.Fatal(err)
	}
	if n, err := PruneWorkers(ctx, db.Pool, time.Hour); err != nil || n != 0 {
		t.Fatalf("PruneWorkers(1h) of a row stopped now: %d, %v", n, err)
	}
	if _, err := db.Pool.Exec(ctx, "UPDATE cuzk.workers SET stopped_at = now() - interval '2 hours'"); err != nil {
		t.Fatal(err)
	}
	if n, err := PruneWorkers(ctx, db.Pool, time.Hour); err != nil || n != 1 {
		t.Fatalf("PruneWorkers(1h) of a row stopped 2h ago: %d, %v", n, err)
	}
}

// The name lock is held by one connection at a time; names lock apart.
func TestTryNameLockConflicts(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, db.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		return c
	}
	a, b := connect(), connect()
	if held, err := TryNameLock(ctx, a, "w"); err != nil || !held {
		t.Fatalf("first lock: %t, %v", held, err)
	}
	if held, err := TryNameLock(ctx, b, "w"); err != nil || held {
		t.Fatalf("second connection took a held lock: %t, %v", held, err)
	}
	if held, err := TryNameLock(ctx, b, "other"); err != nil || !held {
		t.Fatalf("lock of another name: %t, %v", held, err)
	}
}

// BudgetFits looks only at other live workers whose config's mem_budget is a number
// at least the need: not itself, a stopped one, a silent one, or one with a budget
// given as text.
func TestBudgetFitsEdgeCases(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	fits := func(self string, need int64) bool {
		t.Helper()
		ok, err := BudgetFits(ctx, p, self, need, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if fits("me", 1) {
		t.Fatal("a budget fits with no workers")
	}
	for _, b := range []Beat{
		{Worker: "me", Host: "h", PID: 1, Backend: "cpu", Devices: []byte(`[]`), Config: []byte(`{"mem_budget": 1000}`)},
		{Worker: "other", Host: "h", PID: 2, Backend: "cpu", Devices: []byte(`[]`), Config: []byte(`{"mem_budget": 100}`)},
		{Worker: "stopped", Host: "h", PID: 3, Backend: "cpu", Devices: []byte(`[]`), Config: []byte(`{"mem_budget": 5000}`)},
		{Worker: "silent", Host: "h", PID: 4, Backend: "cpu", Devices: []byte(`[]`), Config: []byte(`{"mem_budget": 5000}`)},
		{Worker: "text", Host: "h", PID: 5, Backend: "cpu", Devices: []byte(`[]`), Config: []byte(`{"mem_budget": "9000"}`)},
	} {
		if _, err := Heartbeat(ctx, p, &b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Exec(ctx, `UPDATE cuzk.workers SET stopped_at = now() WHERE worker = 'stopped';
	                          UPDATE cuzk.workers SET last_seen_at = now() - interval '1 hour' WHERE worker = 'silent'`); err != nil {
		t.Fatal(err)
	}
	if !fits("me", 100) || fits("me", 101) {
		t.Errorf("need 100 and 101 beside another worker's 100: %t, %t; want true, false", fits("me", 100), fits("me", 101))
	}
	if fits("other", 1001) {
		t.Error("a need over every other live budget fits")
	}
}

// NameLockHolders lists nobody for a free name, and the session holding a taken one,
// as a login that may write cuzk.workers.
func TestNameLockHoldersEdgeCases(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if hs, err := NameLockHolders(ctx, db.Pool, "w"); err != nil || len(hs) != 0 {
		t.Fatalf("holders of a free name: %v, %v", hs, err)
	}
	c, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	if held, err := TryNameLock(ctx, c, "w"); err != nil || !held {
		t.Fatalf("lock: %t, %v", held, err)
	}
	hs, err := NameLockHolders(ctx, db.Pool, "w")
	if err != nil || len(hs) != 1 || hs[0].PID != int(c.PgConn().PID()) || !hs[0].Worker || hs[0].Login == "" {
		t.Fatalf("holders of a taken name: %+v, %v; want session %d, a login that may write workers", hs, err, c.PgConn().PID())
	}
	if hs, err := NameLockHolders(ctx, db.Pool, "other"); err != nil || len(hs) != 0 {
		t.Fatalf("holders of another name: %v, %v", hs, err)
	}
}
