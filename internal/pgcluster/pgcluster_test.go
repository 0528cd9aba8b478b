package pgcluster

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartQueryRestartStop(t *testing.T) {
	if _, err := FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, FreePort())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	query := func() int {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if query() != 42 {
		t.Fatal("wrong answer")
	}
	if err := c.Restart(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if query() != 42 {
		t.Fatal("wrong answer after restart")
	}
}
