package migrations_test

import (
	"context"
	"sync"
	"testing"

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
