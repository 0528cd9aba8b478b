// Package pgtest gives each test its own PostgreSQL database, cloned from a migrated
// template, against the real server named by CUZK_TEST_DATABASE_URL (default: the
// local server, user postgres). A test that cannot reach the server fails: the tests
// that need the database are the point of the suite, so they never skip silently.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/migrations"
)

// DefaultAdminURL is used when CUZK_TEST_DATABASE_URL is unset.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL is the server the tests create their databases on.
func AdminURL() string {
	if u := os.Getenv("CUZK_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultAdminURL
}

// TB is the part of testing.TB the helpers use, so that Example functions, which get
// no *testing.T, can pass an ExampleTB.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// DB is one test's private database.
type DB struct {
	Name string
	URL  string
	Pool *pgxpool.Pool
}

// New creates a fresh, migrated database for t and drops it when t ends.
func New(t TB) *DB {
	t.Helper()
	return create(t, true)
}

// Empty creates a fresh database with no schema at all (for migration tests).
func Empty(t TB) *DB {
	t.Helper()
	return create(t, false)
}

// create makes a database, cloned from the migrated template when migrated, and drops
// it when t ends.
func create(t TB, migrated bool) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("pgtest: connect to %s (start PostgreSQL or set CUZK_TEST_DATABASE_URL): %v", AdminURL(), err)
	}
	defer admin.Close(ctx)

	name := "cuzk_t_" + randHex(6)
	stmt := "CREATE DATABASE " + name
	if migrated {
		tmpl := templateName()
		if err := ensureTemplate(ctx, admin, tmpl); err != nil {
			t.Fatalf("pgtest: template database: %v", err)
		}
		stmt += " TEMPLATE " + tmpl
	}
	_, err = admin.Exec(ctx, stmt)
	if migrated {
		_, _ = admin.Exec(ctx, "SELECT pg_advisory_unlock_shared($1)", cloneLock)
	}
	if err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	dbURL, err := withDatabase(AdminURL(), name)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", name, err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return &DB{Name: name, URL: dbURL, Pool: pool}
}

// Advisory locks on the admin server, shared by every test process (go test runs
// packages in parallel): buildLock is held to look for the template and build it,
// cloneLock in shared mode while a database is cloned from it, and exclusively to
// drop it, so that a template is never dropped between being found and cloned.
const (
	buildLock = 7303240
	cloneLock = 7303241
)

// templateName names the migrated template of this schema revision: a digest of the
// migrations and dependency versions, so a changed schema never reuses a stale one.
func templateName() string { return "cuzk_tmpl_" + schemaDigest() }

// ensureTemplate creates the migrated database name to clone unless it exists, and
// returns holding cloneLock in shared mode: the caller releases it after cloning.
func ensureTemplate(ctx context.Context, admin *pgx.Conn, name string) error {
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", buildLock); err != nil {
		return err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", buildLock) //nolint:errcheck
	if err := buildTemplate(ctx, admin, name); err != nil {
		return err
	}
	_, err := admin.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", cloneLock)
	return err
}

func buildTemplate(ctx context.Context, admin *pgx.Conn, name string) error {
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := name + "_build"
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", building)); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return err
	}
	dbURL, err := withDatabase(AdminURL(), building)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	_, err = migrations.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	// Rename only once complete, so a crash never leaves a half-built template behind.
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, name)); err != nil {
		return err
	}
	return nil
}

// DropTemplate drops this schema revision's template once no test is cloning it (the
// next test builds it again), so that a test run leaves no database behind. A
// template someone is connected to is left alone. It returns the template's name.
func DropTemplate(ctx context.Context) (string, error) {
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", AdminURL(), err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	name := templateName()
	return name, dropTemplate(ctx, admin, name)
}

func dropTemplate(ctx context.Context, admin *pgx.Conn, name string) error {
	for _, lock := range []int64{buildLock, cloneLock} {
		if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", lock); err != nil {
			return err
		}
		defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lock) //nolint:errcheck
	}
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("drop template %s: %w", name, err)
	}
	return nil
}

func schemaDigest() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations.Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.Files(), path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/riverqueue/river" || dep.Path == "github.com/riverqueue/river/riverdriver/riverpgxv5" {
				h.Write([]byte(dep.Path + dep.Version))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// URL is the connection string of database name on the test server, which need
// not exist.
func URL(t TB, name string) string {
	t.Helper()
	u, err := withDatabase(AdminURL(), name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func withDatabase(dsn, db string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("pgtest: parse %q: %w", dsn, err)
		}
		u.Path = "/" + db
		return u.String(), nil
	}
	return dsn + " dbname=" + db, nil // keyword/value form: the last dbname wins
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Login creates the login role name on the server of admin (in group, unless group is
// empty) and returns a pool connected to dbURL as that role. The role, and whatever it
// came to own in that database, is dropped when t ends. Roles are cluster-wide: derive
// name from the test's database name to keep it unique.
func Login(t TB, admin *pgxpool.Pool, dbURL, name, group string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	stmt := "CREATE ROLE " + pgx.Identifier{name}.Sanitize() + " LOGIN"
	if group != "" {
		stmt += " IN ROLE " + pgx.Identifier{group}.Sanitize()
	}
	if _, err := admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("pgtest: create role %s: %v", name, err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: parse %q: %v", dbURL, err)
	}
	u.User = url.User(name)
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatalf("pgtest: connect as %s: %v", name, err)
	}
	t.Cleanup(func() {
		pool.Close()
		ident := pgx.Identifier{name}.Sanitize()
		for _, q := range []string{"DROP OWNED BY " + ident, "DROP ROLE IF EXISTS " + ident} {
			if _, err := admin.Exec(context.Background(), q); err != nil {
				t.Logf("pgtest: %s: %v", q, err)
			}
		}
	})
	return pool
}
