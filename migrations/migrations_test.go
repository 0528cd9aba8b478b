package migrations_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/migrations"
)

// Two processes' worth of concurrent runs on an empty database: both succeed, the
// schema is applied once, and a third run applies nothing.
func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	db := pgtest.Empty(t)
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = migrations.Migrate(ctx, db.Pool)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	res, err := migrations.Migrate(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := migrations.Latest()
	if len(res.RiverApplied) != 0 || res.CuzkFrom != res.CuzkTo || int(res.CuzkTo) != latest {
		t.Fatalf("third run should be a no-op at version %d, got %+v", latest, res)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'cuzk'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("expected the cuzk tables, found %d", n)
	}
}

// Tables a River upgrade adds must reach cuzk_worker too: every run grants River's
// tables again. A revoked grant stands in for a table added after migration 003.
func TestMigrateGrantsRiverTablesToWorkerEveryRun(t *testing.T) {
	db := pgtest.Empty(t)
	ctx := context.Background()
	if _, err := migrations.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	canUpdate := func() bool {
		var ok bool
		if err := db.Pool.QueryRow(ctx, `SELECT has_table_privilege('cuzk_worker', 'river_job', 'UPDATE')`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !canUpdate() {
		t.Fatal("cuzk_worker cannot update river_job after migrating")
	}
	if _, err := db.Pool.Exec(ctx, `REVOKE ALL ON river_job FROM cuzk_worker`); err != nil {
		t.Fatal(err)
	}
	if canUpdate() {
		t.Fatal("the revoke did not take")
	}
	if _, err := migrations.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	if !canUpdate() {
		t.Error("a migrate run did not grant river_job to cuzk_worker again")
	}
}

// Any login can take the migration's advisory lock. A run waits at most its lock wait,
// then fails naming the session that holds it; once that session lets go, a run
// proceeds.
func TestMigrateNamesTheLockHolder(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	name := db.Name + "_squatter"
	squatter := pgtest.Login(t, db.Pool, db.URL, name, "")
	conn, err := squatter.Acquire(ctx) // an advisory lock is its session's
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(x'63757a6b2d6d6967'::bigint)`); err != nil {
		t.Fatal(err)
	}
	_, err = migrations.MigrateWithin(ctx, db.Pool, time.Second)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("role %q", name)) || !strings.Contains(err.Error(), "waited 1s") {
		t.Fatalf("a run while %s holds the lock: %v; want an error naming the role and the wait", name, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(x'63757a6b2d6d6967'::bigint)`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.MigrateWithin(ctx, db.Pool, time.Minute); err != nil {
		t.Fatalf("a run after the lock was let go: %v", err)
	}
}
