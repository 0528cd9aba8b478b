package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const ansiEscape = "\x1b["

func TestLogJSON(t *testing.T) {
	var b bytes.Buffer
	log := newLogger(&b, "json", "debug")
	log.Info("proof stored", "request_id", "r-1", "attempt", 2)
	log.Debug("detail")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", b.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if rec["msg"] != "proof stored" || rec["request_id"] != "r-1" || rec["attempt"] != 2.0 || rec["level"] != "INFO" {
		t.Errorf("record %v", rec)
	}
}

func TestLogLevel(t *testing.T) {
	var b bytes.Buffer
	log := newLogger(&b, "text", "warn")
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(b.String(), "hidden") || !strings.Contains(b.String(), "shown") {
		t.Errorf("--log-level warn wrote %q", b.String())
	}
}

// A pipe or file gets plain text whatever the format says.
func TestLogNoColourWhenNotTerminal(t *testing.T) {
	for _, format := range []string{"auto", "text"} {
		var b bytes.Buffer
		newLogger(&b, format, "info").Warn("plain", "k", "v")
		if strings.Contains(b.String(), ansiEscape) || !strings.Contains(b.String(), "WRN plain k=v") {
			t.Errorf("%s to a buffer: %q", format, b.String())
		}
	}
}

// openPTY returns a pseudo-terminal's two ends: what is written to tty is read from ptm.
func openPTY(t *testing.T) (ptm, tty *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptm, tty
}

// logOnTerminal logs one line to a terminal and returns what the terminal got.
func logOnTerminal(t *testing.T) string {
	t.Helper()
	ptm, tty := openPTY(t)
	newLogger(tty, "auto", "info").Warn("on a terminal", "k", "v")
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := ptm.Read(buf)
		got <- string(buf[:n])
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("nothing read from the terminal")
		return ""
	}
}

func TestLogColourOnTerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	if s := logOnTerminal(t); !strings.Contains(s, ansiEscape) || !strings.Contains(s, "on a terminal") {
		t.Errorf("a terminal got no colour: %q", s)
	}
	t.Setenv("NO_COLOR", "1")
	if s := logOnTerminal(t); strings.Contains(s, ansiEscape) || !strings.Contains(s, "on a terminal") {
		t.Errorf("NO_COLOR=1 on a terminal: %q", s)
	}
}

// The binary's own log lines follow --log-format json (the worker logs its memory
// budget before it connects, then each failed attempt to reach a database that is
// not there, until SIGTERM).
func TestLogFormatFlag(t *testing.T) {
	t.Parallel()
	r := cuzkUntilLog(t, []string{"DATABASE_URL=postgres://cuzk@127.0.0.1:1/cuzk?connect_timeout=1"}, "database unavailable, waiting", time.Minute,
		"--log-format", "json", "worker", "--backend", "cpu", "--keys-dir", t.TempDir(), "--cache-dir", t.TempDir())
	wantExit(t, r, exitOK, "database at 127.0.0.1:1")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	logs := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "cuzk: ") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("stderr line is neither JSON nor the error: %q", l)
			continue
		}
		logs++
	}
	if logs == 0 {
		t.Errorf("no JSON log lines in %q", r.stderr)
	}
}
