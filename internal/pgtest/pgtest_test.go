package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A template is dropped only once no test is between finding it and cloning it: the
// drop waits for the clone's shared lock, then leaves nothing behind.
func TestDropTemplateWaitsForClones(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(ctx context.Context) *pgx.Conn {
		c, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	cloner, dropper := connect(ctx), connect(ctx)
	name := "cuzk_tmpl_droptest_" + randHex(6)
	t.Cleanup(func() {
		_, _ = connect(context.Background()).Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	if err := ensureTemplate(ctx, cloner, name); err != nil {
		t.Fatal(err)
	}
	exists := func() bool {
		var ok bool
		if err := cloner.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists() {
		t.Fatalf("ensureTemplate did not create %s", name)
	}
	dropperPID := dropper.PgConn().PID()
	done := make(chan error, 1)
	go func() { done <- dropTemplate(ctx, dropper, name) }()

	// The drop waits on the clone lock while the cloner holds it.
	for {
		var waiting bool
		if err := cloner.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
			AND objid = $1 AND NOT granted AND pid = $2)`, cloneLock, dropperPID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("dropTemplate finished (%v) while a clone held the template", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !exists() {
		t.Fatal("the template was dropped while a clone held it")
	}
	if _, err := cloner.Exec(ctx, "SELECT pg_advisory_unlock_shared($1)", cloneLock); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatalf("%s still exists after dropTemplate", name)
	}
}
