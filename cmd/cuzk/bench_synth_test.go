package main

import (
	"regexp"
	"testing"
)

// cuzk bench --synth-only needs no database or keys: it prints the circuit's shape,
// one constraints/s line per concurrency, then the peak RSS.
func TestBenchSynthOnly(t *testing.T) {
	t.Parallel()
	r := mustOK(t, cuzkDB(t, "", "bench", "--circuit", "porep-k16", "--synth-only", "--runs", "1", "--concurrency", "1,2",
		"--keys-dir", t.TempDir(), "--cache-dir", t.TempDir()))
	for _, want := range []string{
		`circuit porep-k16: 64766 constraints, domain 2\^16 \(98\.83% used\)`,
		`variables: 4 public \(with the constant 1\), 22 secret, 18102 internal; private per constraint 0\.280`,
		`compiled in [0-9.]+s; heap after it [0-9.]+ GiB, peak RSS so far [0-9.]+ GiB`,
		`witness: 18128 values: [0-9.]+% zero, [0-9.]+% one, 0\.0% other below 2\^64, 16\.6% full-size; solve estimate [0-9.]+ GiB`,
		`solve x1: median [0-9.]+s of 1 rounds, [0-9.]+M constraints/s \(GOMAXPROCS \d+\)`,
		`solve x2: median [0-9.]+s of 1 rounds, [0-9.]+M constraints/s \(GOMAXPROCS \d+\)`,
		`peak RSS: [0-9.]+ GiB`,
	} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(r.stdout) {
			t.Errorf("no line %s in:\n%s", want, r.stdout)
		}
	}

	wantExit(t, cuzkDB(t, "", "bench", "--circuit", "porep-k16", "--synth-only", "--concurrency", "0"), exitUsage, "--concurrency 0")
	wantExit(t, cuzkDB(t, "", "bench", "--circuit", "porep-k15", "--synth-only"), exitUsage, "K=15 out of range [16, 27]")
}
