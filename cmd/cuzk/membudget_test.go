package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// hostMemory reads what the default budget is derived from, independently of
// availableMemory: the cgroup v2 limit when one is set, else MemAvailable.
func hostMemory(t *testing.T) (avail int64, source string) {
	t.Helper()
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if s := strings.TrimSpace(string(b)); s != "max" {
			if _, err := fmt.Sscan(s, &avail); err != nil {
				t.Fatalf("cgroup memory.max %q: %v", s, err)
			}
			return avail, "cgroup memory.max"
		}
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skipf("no /proc/meminfo on this system: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "MemAvailable: %d kB", &kb); err == nil {
			return kb << 10, "MemAvailable"
		}
	}
	t.Fatal("no MemAvailable line in /proc/meminfo")
	return 0, ""
}

// TestMemBudgetDefaultIsAvailableMinusMargin checks the default --mem-budget: the
// cgroup limit (or MemAvailable) minus 10% and at least 1 GiB, at least 256 MiB, and
// logged with where it came from.
func TestMemBudgetDefaultIsAvailableMinusMargin(t *testing.T) {
	expect := func(avail int64) int64 { return max(avail-max(avail/10, 1<<30), 256<<20) }

	before, source := hostMemory(t)
	var logBuf bytes.Buffer
	got, err := memBudget("", slog.New(slog.NewTextHandler(&logBuf, nil)))
	if err != nil {
		t.Fatalf("default budget: %v", err)
	}
	after, _ := hostMemory(t)

	// MemAvailable moves while other processes run: the budget must lie between what
	// the readings around the call give (a cgroup limit gives one exact value).
	lo, hi := expect(min(before, after)), expect(max(before, after))
	if got < lo || got > hi {
		t.Errorf("default budget %d, want %d..%d (%s %d..%d minus a margin of 10%%, at least 1 GiB)",
			got, lo, hi, source, min(before, after), max(before, after))
	}
	if got >= min(before, after) && got > 256<<20 {
		t.Errorf("default budget %d leaves no margin below %s %d", got, source, min(before, after))
	}
	line := logBuf.String()
	for _, want := range []string{"memory budget", "budget=", "available=", source} {
		if !strings.Contains(line, want) {
			t.Errorf("start-up log %q does not say %q", line, want)
		}
	}
}

func TestMemBudgetExplicit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	for spec, want := range map[string]int64{"20GiB": 20 << 30, "1000": 1000, "512 MiB": 512 << 20, "2GB": 2e9} {
		got, err := memBudget(spec, log)
		if err != nil || got != want {
			t.Errorf("--mem-budget %q = %d, %v; want %d", spec, got, err, want)
		}
	}
	for _, spec := range []string{"0", "lots", "-5GiB"} {
		_, err := memBudget(spec, log)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("--mem-budget %q: %v, want a usage error", spec, err)
		}
	}
}
