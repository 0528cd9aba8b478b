// Package store is cuzk's one seam to PostgreSQL: the queries the worker, the CLI, the
// dashboard and the metrics run against the schema that package migrations creates.
// Orchestrators never need it; they use the SQL functions and views directly.
package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what every query runs on. A pool, a connection and a transaction all satisfy
// it, so a function never cares which it got; one that needs a transaction of its own
// begins it on db (a savepoint, when db is a transaction already).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// interval is d as a PostgreSQL interval literal.
func interval(d time.Duration) string { return fmt.Sprintf("%d microseconds", d.Microseconds()) }
