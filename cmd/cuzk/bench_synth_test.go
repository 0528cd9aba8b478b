package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// cuzk bench --synth-only needs no database or keys: it prints the circuit's shape,
// one constraints/s line per concurrency (per way of sharing the cores with
// --synth-split all, and per solver with --synth-solver both), then the peak RSS.
func TestBenchSynthOnly(t *testing.T) {
	t.Parallel()
	r := mustOK(t, cuzkDB(t, "", "bench", "--circuit", "porep-k16", "--synth-only", "--runs", "1", "--concurrency", "1,2", "--synth-split", "all",
		"--synth-solver", "both", "--keys-dir", t.TempDir(), "--cache-dir", t.TempDir()))
	for _, want := range []string{
		`circuit porep-k16: 64766 constraints, domain 2\^16 \(98\.83% used\)`,
		`variables: 4 public \(with the constant 1\), 22 secret, 18102 internal; private per constraint 0\.280`,
		`compiled in [0-9.]+s; heap after it [0-9.]+ GiB, peak RSS so far [0-9.]+ GiB`,
		`witness: 18128 values: [0-9.]+% zero, [0-9.]+% one, 0\.0% other below 2\^64, 16\.6% full-size; solve estimate [0-9.]+ GiB`,
		`solver: (blocks: prefix \d+, \d+ blocks in \d+ tasks \(largest \d+\), suffix from \d+|gnark's solver \(no useful split into blocks\))`,
		`solve x1 \(levels\), \d+ tasks each: median [0-9.]+s of 1 rounds, first done [0-9.]+s, [0-9.]+M constraints/s \(GOMAXPROCS \d+\)`,
		`solve x2 \(blocks\), \d+ tasks each: median [0-9.]+s of 1 rounds, first done [0-9.]+s, [0-9.]+M constraints/s \(GOMAXPROCS \d+\)`,
		`solve x2 \(blocks\), in line for \d+ cores: median [0-9.]+s of 1 rounds, first done [0-9.]+s, [0-9.]+M constraints/s \(GOMAXPROCS \d+\)`,
		`peak RSS: [0-9.]+ GiB`,
	} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(r.stdout) {
			t.Errorf("no line %s in:\n%s", want, r.stdout)
		}
	}

	// Each way once per solver: x2 with every core a solve, and with half of them (at least one).
	procs := regexp.MustCompile(`(?m)^solve x2 \((levels|blocks)\), (\d+) tasks each: .*\(GOMAXPROCS (\d+)\)$`).FindAllStringSubmatch(r.stdout, -1)
	if len(procs) != 4 {
		t.Fatalf("solve x2 lines %q, want four", procs)
	}
	for i, p := range procs {
		solver, tasks := []string{"levels", "blocks"}[i/2], p[3]
		if i%2 == 1 {
			tasks = strconv.Itoa(max(1, mustAtoi(t, p[3])/2))
		}
		if p[1] != solver || p[2] != tasks {
			t.Errorf("solve x2 line %d is %q, want %s with %s tasks", i, p[0], solver, tasks)
		}
	}

	// --synth-profile writes gzipped pprof protobufs.
	prof := t.TempDir()
	mustOK(t, cuzkDB(t, "", "bench", "--circuit", "porep-k16", "--synth-only", "--runs", "1", "--concurrency", "1",
		"--synth-profile", prof, "--keys-dir", t.TempDir(), "--cache-dir", t.TempDir()))
	for _, name := range []string{"cpu.pprof", "allocs-before.pprof", "allocs.pprof"} {
		b, err := os.ReadFile(filepath.Join(prof, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %d bytes, not gzip (a pprof profile)", name, len(b))
		}
	}

	wantExit(t, cuzkDB(t, "", "bench", "--circuit", "porep-k16", "--synth-only", "--concurrency", "0"), exitUsage, "--concurrency 0")
	wantExit(t, cuzkDB(t, "", "bench", "--circuit", "porep-k15", "--synth-only"), exitUsage, "K=15 out of range [16, 27]")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
