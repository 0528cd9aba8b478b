// Package migrations brings a database to the schema this build of cuzk expects:
// River's tables first (through rivermigrate), then cuzk's own (schema cuzk, through
// tern), then the grant of River's tables to the cuzk_worker role (grant_river.sql),
// which a River upgrade may extend. The whole run holds one advisory lock, so any
// number of processes may run it at once: the first applies what is missing, the
// others wait and find nothing to do. A run waits until its context ends, then names
// the session holding the lock.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed cuzk/*.sql
var files embed.FS

//go:embed grant_river.sql
var grantRiver string

// lockKey is the advisory lock serializing migration runs ("cuzk-mig" in ASCII).
const lockKey int64 = 0x63757a6b2d6d6967

// versionTable records which cuzk migrations have been applied.
const versionTable = "cuzk.schema_version"

// Result says what a run applied.
type Result struct {
	RiverApplied []int // River migration versions applied by this run
	CuzkFrom     int32 // cuzk schema version before the run
	CuzkTo       int32 // and after it
}

// Migrate applies every missing migration and is a no-op on an up-to-date database. It
// waits for the migration lock as long as ctx allows.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (Result, error) {
	return MigrateWithin(ctx, pool, 0)
}

// MigrateWithin is Migrate waiting at most lockWait (0: no limit) for the migration
// lock before it fails naming the session that holds it.
func MigrateWithin(ctx context.Context, pool *pgxpool.Pool, lockWait time.Duration) (Result, error) {
	var res Result
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()

	lctx, cancel := ctx, context.CancelFunc(func() {})
	if lockWait > 0 {
		lctx, cancel = context.WithTimeoutCause(ctx, lockWait, fmt.Errorf("waited %s", lockWait))
	}
	err = takeLock(lctx, conn)
	cancel()
	if err != nil {
		return res, err
	}
	defer func() {
		// A fresh context: the lock must be released even when ctx is done.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockKey)
	}()

	// River's migrations run in a transaction on the locked connection: taking a second
	// pool connection while holding the lock could starve concurrent runs of the pool.
	rm, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return res, fmt.Errorf("migrate: river migrator: %w", err)
	}
	// One transaction per version: a River migration may add an enum value that the
	// next one uses, which PostgreSQL allows only after the adding transaction commits.
	for {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return res, fmt.Errorf("migrate: begin: %w", err)
		}
		//lint:ignore SA1019 MigrateTx is deprecated for batching versions in one transaction; MaxSteps: 1 runs one per transaction, and Migrate would take a second pool connection
		rr, err := rm.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{MaxSteps: 1})
		if err != nil {
			_ = tx.Rollback(ctx)
			return res, fmt.Errorf("migrate: river schema: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return res, fmt.Errorf("migrate: river schema: commit: %w", err)
		}
		if len(rr.Versions) == 0 {
			break
		}
		for _, v := range rr.Versions {
			res.RiverApplied = append(res.RiverApplied, v.Version)
		}
	}

	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS cuzk"); err != nil {
		return res, fmt.Errorf("migrate: create schema cuzk: %w", err)
	}
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return res, fmt.Errorf("migrate: cuzk migrator: %w", err)
	}
	sub, err := fs.Sub(files, "cuzk")
	if err != nil {
		return res, err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return res, fmt.Errorf("migrate: load cuzk migrations: %w", err)
	}
	if res.CuzkFrom, err = m.GetCurrentVersion(ctx); err != nil {
		return res, fmt.Errorf("migrate: read cuzk schema version: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return res, fmt.Errorf("migrate: cuzk schema: %w", err)
	}
	if res.CuzkTo, err = m.GetCurrentVersion(ctx); err != nil {
		return res, fmt.Errorf("migrate: read cuzk schema version: %w", err)
	}
	if _, err := conn.Exec(ctx, grantRiver); err != nil {
		return res, fmt.Errorf("migrate: grant River's tables to cuzk_worker: %w", err)
	}
	return res, nil
}

// lockPoll is how often a run waiting for the migration lock tries it again.
const lockPoll = 250 * time.Millisecond

// takeLock takes the migration lock, trying again until ctx ends. Any login can take an
// advisory lock, so a run that cannot get it says who holds it rather than waiting
// silently: another migration, or a session to end (pg_terminate_backend).
func takeLock(ctx context.Context, conn *pgxpool.Conn) error {
	for {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lockKey).Scan(&ok); err != nil {
			return fmt.Errorf("migrate: take advisory lock: %w", err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate: advisory lock %#x is held by %s: %w", lockKey,
				lockHolder(context.WithoutCancel(ctx), conn), context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}

// lockHolder describes the session holding the migration lock.
func lockHolder(ctx context.Context, conn *pgxpool.Conn) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var pid int32
	var user, app string
	var since *time.Time
	err := conn.QueryRow(ctx, `
SELECT l.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''), a.backend_start
  FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted
   AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid AND l.objsubid = 1
 LIMIT 1`, lockKey).Scan(&pid, &user, &app, &since)
	if err != nil {
		return "another session (not found: " + err.Error() + ")"
	}
	desc := fmt.Sprintf("pid %d (role %q, application %q", pid, user, app)
	if since != nil {
		desc += ", connected " + since.UTC().Format(time.RFC3339)
	}
	return desc + ")"
}

// Latest is the cuzk schema version this build applies.
func Latest() (int, error) {
	names, err := fs.Glob(files, "cuzk/*.sql")
	return len(names), err
}

// Files are the embedded cuzk migrations (for digests and inspection).
func Files() fs.FS { return files }
