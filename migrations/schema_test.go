package migrations_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/migrations"
)

var update = flag.Bool("update", false, "rewrite sql/schema.sql from a freshly migrated database")

// snapshotPath is sql/schema.sql, relative to this package's directory (go test's
// working directory).
const snapshotPath = "../sql/schema.sql"

const regenerate = "go test ./migrations/ -run TestSchemaSnapshot -update"

// River's tables are left out: rivermigrate owns them and they change with River's
// version, not with cuzk's migrations.
var pgDumpArgs = []string{"--schema-only", "--schema=cuzk", "--no-owner", "--no-tablespaces"}

// sql/schema.sql is what PostgreSQL reports of schema cuzk after every migration, so
// that the current schema can be read without replaying migrations/cuzk.
func TestSchemaSnapshot(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Empty(t)
	if _, err := migrations.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	major := serverMajor(ctx, t, db.Pool)
	pgDump, err := findPgDump(ctx, major)
	if err != nil {
		t.Skip(err)
	}
	out, err := exec.CommandContext(ctx, pgDump, append(pgDumpArgs, "--dbname="+db.URL)...).Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", pgDump, err, stderrOf(err))
	}
	got := normalizeDump(out, major)

	if *update {
		if err := os.WriteFile(snapshotPath, got, 0o644); err != nil {
			t.Fatalf("write snapshot: %v", err)
		}
		t.Logf("wrote %s", filepath.Clean(snapshotPath))
		return
	}
	want, err := os.ReadFile(snapshotPath)
	if err != nil {
		t.Fatalf("read snapshot (create it: %s): %v", regenerate, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("sql/schema.sql is out of date with the migrations; regenerate it: %s\n%s",
			regenerate, firstDifference(string(want), string(got)))
	}
}

func serverMajor(ctx context.Context, t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var num int
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatalf("read server version: %v", err)
	}
	return num / 10000
}

var pgDumpVersion = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// findPgDump returns a pg_dump of the server's major version, looking where the
// process tests look for PostgreSQL's binaries: $CUZK_PG_BINDIR, Debian's
// /usr/lib/postgresql/MAJOR/bin, then $PATH. Another major version dumps the same
// schema in a different text, so it is never used.
func findPgDump(ctx context.Context, major int) (string, error) {
	var candidates []string
	if d := os.Getenv("CUZK_PG_BINDIR"); d != "" {
		candidates = append(candidates, filepath.Join(d, "pg_dump"))
	}
	candidates = append(candidates, fmt.Sprintf("/usr/lib/postgresql/%d/bin/pg_dump", major))
	if p, err := exec.LookPath("pg_dump"); err == nil {
		candidates = append(candidates, p)
	}
	var seen []string
	for _, c := range candidates {
		out, err := exec.CommandContext(ctx, c, "--version").Output()
		if err != nil {
			continue
		}
		m := pgDumpVersion.FindSubmatch(out)
		if m == nil {
			continue
		}
		if v, _ := strconv.Atoi(string(m[1])); v == major {
			return c, nil
		}
		seen = append(seen, fmt.Sprintf("%s is %s", c, m[1]))
	}
	found := "none found"
	if len(seen) > 0 {
		found = strings.Join(seen, ", ")
	}
	return "", fmt.Errorf("no pg_dump of PostgreSQL %d, the server's major version, to snapshot the schema with (%s): install its client or set CUZK_PG_BINDIR",
		major, found)
}

// normalizeDump removes from pg_dump's output what varies between runs and machines
// (version comments, session SET lines, the per-run \restrict key) and puts a header
// naming the major version the text belongs to.
func normalizeDump(dump []byte, major int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "-- Schema cuzk as PostgreSQL %d reports it after every migration in migrations/cuzk.\n", major)
	fmt.Fprintf(&b, "-- Generated: do not edit. Regenerate with: %s\n\n", regenerate)
	blank := true
	for line := range strings.Lines(string(dump)) {
		line = strings.TrimRight(line, " \n")
		switch {
		case strings.HasPrefix(line, "-- Dumped "),
			strings.HasPrefix(line, "-- PostgreSQL database dump"),
			strings.HasPrefix(line, "SET "),
			strings.HasPrefix(line, "SELECT pg_catalog.set_config('search_path'"),
			strings.HasPrefix(line, `\restrict `),
			strings.HasPrefix(line, `\unrestrict `):
			continue
		case line == "" || line == "--":
			// Runs of blank lines and lone "--" separators collapse into one blank line.
			if !blank {
				b.WriteString("\n")
			}
			blank = true
			continue
		}
		b.WriteString(line)
		b.WriteString("\n")
		blank = false
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
}

// firstDifference shows the lines between the longest common prefix and suffix of
// want and got, in unified-diff style with a little context, at most 60 lines.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	pre := 0
	for pre < len(w) && pre < len(g) && w[pre] == g[pre] {
		pre++
	}
	suf := 0
	for suf < len(w)-pre && suf < len(g)-pre && w[len(w)-1-suf] == g[len(g)-1-suf] {
		suf++
	}
	const context = 3
	from := max(pre-context, 0)
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s (checked in)\n+++ migrated database\n@@ line %d @@\n", filepath.Clean(snapshotPath), from+1)
	var lines []string
	for _, l := range w[from:pre] {
		lines = append(lines, " "+l)
	}
	for _, l := range w[pre : len(w)-suf] {
		lines = append(lines, "-"+l)
	}
	for _, l := range g[pre : len(g)-suf] {
		lines = append(lines, "+"+l)
	}
	for _, l := range w[len(w)-suf : min(len(w)-suf+context, len(w))] {
		lines = append(lines, " "+l)
	}
	const limit = 60
	if len(lines) > limit {
		lines = append(lines[:limit], fmt.Sprintf("... %d more lines", len(lines)-limit))
	}
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// A pg_dump of another major version prints the same schema differently, so the
// snapshot test must skip rather than use it, and say what it found.
func TestFindPgDumpRefusesOtherMajorVersions(t *testing.T) {
	_, err := findPgDump(context.Background(), 1)
	if err == nil {
		t.Fatal("found a pg_dump of PostgreSQL 1")
	}
	if !strings.Contains(err.Error(), "no pg_dump of PostgreSQL 1,") {
		t.Fatalf("error does not name the version it looked for: %v", err)
	}
}
