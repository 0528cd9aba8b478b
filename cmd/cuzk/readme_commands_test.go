package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// quietCFlag keeps go-nvml's cgo code from printing a deprecation warning for every
// deprecated NVML function it wraps (about 145 lines on a first build).
const quietCFlag = "-Wno-deprecated-declarations"

// readmeShellCommands are the command lines of the sh blocks of the README and of the
// pages that took over its text (operating, SQL, GPU hosts), comments cut.
func readmeShellCommands(t *testing.T) []string {
	t.Helper()
	var text strings.Builder
	for _, f := range []string{readmeFile, operatingDoc, sqlDoc, gpuDoc} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text.Write(b)
	}
	var cmds []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text.String(), -1) {
		for _, l := range strings.Split(m[1], "\n") {
			l, _, _ = strings.Cut(l, "#")
			if l = strings.TrimSpace(l); l != "" {
				cmds = append(cmds, l)
			}
		}
	}
	return cmds
}

// TestReadmeBuildCommandsAreQuiet: every command of those pages that compiles cuzk
// either is a Makefile target or carries the C flag itself, the Makefile's targets pass
// the flag to go, and with it go-nvml compiles without a warning from an empty cache.
func TestReadmeBuildCommandsAreQuiet(t *testing.T) {
	t.Parallel()
	goCmd := regexp.MustCompile(`(^|\s)go (run|build|install|test)\b`)
	makeCmd := regexp.MustCompile(`^make ([a-z-]+)$`)
	var targets []string
	for _, c := range readmeShellCommands(t) {
		if goCmd.MatchString(c) && !strings.Contains(c, "CGO_CFLAGS=") {
			t.Errorf("documented command %q compiles cuzk without CGO_CFLAGS=...%s: go-nvml prints ~145 warning lines", c, quietCFlag)
		}
		if m := makeCmd.FindStringSubmatch(c); m != nil {
			targets = append(targets, m[1])
		}
	}
	for _, want := range []string{"demo", "install", "build", "test"} {
		if !strings.Contains(" "+strings.Join(targets, " ")+" ", " "+want+" ") {
			t.Errorf("the README and docs do not show `make %s` (found %q)", want, targets)
		}
	}
	// Each target they show, run with a stand-in for go that records the C flags.
	dir := t.TempDir()
	fakeGo, record := filepath.Join(dir, "go"), filepath.Join(dir, "cflags")
	if err := os.WriteFile(fakeGo, []byte("#!/bin/sh\nprintf '%s\\n' \"$CGO_CFLAGS\" >> "+record+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var cflags string
	for _, target := range targets {
		if target == "test" || strings.HasPrefix(target, "gpu-") {
			continue // the whole suite, and the GPU bundle's own script (checked below)
		}
		os.Remove(record)
		cmd := exec.Command("make", "-s", "GO="+fakeGo, target)
		cmd.Dir = "../.."
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "CGO_CFLAGS=") { // as on a fresh machine: unset
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
		got, err := os.ReadFile(record)
		if err != nil || !strings.Contains(string(got), quietCFlag) {
			t.Errorf("make %s ran go with CGO_CFLAGS %q (%v), want %s in it", target, got, err, quietCFlag)
		}
		cflags = strings.TrimSpace(strings.Split(string(got), "\n")[0])
	}
	if b, err := os.ReadFile("../../scripts/gpu-bundle.sh"); err != nil || !strings.Contains(string(b), quietCFlag) {
		t.Errorf("scripts/gpu-bundle.sh builds cuzk without %s (%v)", quietCFlag, err)
	}
	if b, err := os.ReadFile("../../Dockerfile"); err != nil || !strings.Contains(string(b), `CGO_CFLAGS="-O2 -g `+quietCFlag+`" go build`) {
		t.Errorf("the Dockerfile builds cuzk without %s (%v)", quietCFlag, err)
	}
	if testing.Short() || cflags == "" {
		return
	}
	// What the user sees: go-nvml compiled from an empty build cache with those flags.
	cmd := exec.Command("go", "build", "github.com/NVIDIA/go-nvml/pkg/nvml")
	cmd.Env = append(os.Environ(), "GOCACHE="+t.TempDir(), "CGO_CFLAGS="+cflags)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("go build go-nvml with CGO_CFLAGS=%q from an empty cache: %v, %d lines:\n%s", cflags, err, strings.Count(string(out), "\n"), out)
	}
}

// TestReadmeMonthQueryIsCurrent: docs/sql.md's month query counts attempts of the
// hour that is still open, whether or not a worker keeps the hourly rollup filled,
// and counts a rolled-up hour once.
func TestReadmeMonthQueryIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(sqlDoc)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)-- a month, per day[^\n]*\n(.*?);`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("docs/sql.md lacks the cookbook's month query (-- a month, per day …;)")
	}
	query := m[1]
	db := pgtest.New(t)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	exec(`INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ('c', 1, 0, 1, '', 'x');
	      INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) SELECT 'r' || i, 'c', '{}' FROM generate_series(1, 3) i;`)
	counts := func(when string) (succeeded, failed int64) {
		t.Helper()
		rows, err := db.Pool.Query(ctx, query)
		if err != nil {
			t.Fatalf("%s: %v\n%s", when, err, query)
		}
		defer rows.Close()
		for rows.Next() {
			var circuit string
			var day any
			var s, f int64
			if err := rows.Scan(&circuit, &day, &s, &f); err != nil {
				t.Fatal(err)
			}
			succeeded, failed = succeeded+s, failed+f
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return succeeded, failed
	}
	// Just now: the open hour, before any rollup exists.
	exec(`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, outcome, finished_at, total_ms)
	      VALUES ('r1', 1, 'c', 'w', 'succeeded', now(), 5)`)
	if s, f := counts("no rollup"); s != 1 || f != 0 {
		t.Errorf("no rollup yet: the month query counts %d succeeded, %d failed; want the attempt of a moment ago", s, f)
	}
	// Three hours ago, rolled up as a worker serving --http does; then one more now.
	exec(`INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, outcome, finished_at, total_ms)
	      VALUES ('r2', 1, 'c', 'w', 'succeeded', now() - interval '3 hours', 5),
	             ('r3', 1, 'c', 'w', 'failed', now() - interval '3 hours', NULL)`)
	exec(`SELECT cuzk.fill_attempt_hours(now() - interval '31 days')`)
	exec(`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('r4', 'c', '{}');
	      INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, worker, outcome, finished_at, total_ms)
	      VALUES ('r4', 1, 'c', 'w', 'succeeded', now(), 5)`)
	if s, f := counts("rolled up"); s != 3 || f != 1 {
		t.Errorf("with the rollup filled: the month query counts %d succeeded, %d failed; want 3 and 1", s, f)
	}
}
