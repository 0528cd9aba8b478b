package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "proving", 3)
	p.Set(1)
	p.Set(1) // no change, no line
	p.Set(3)
	p.Done(nil)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{"proving: 0/3", "proving: 1/3", "proving: 3/3", "proving: done in"}
	if len(lines) != len(want) {
		t.Fatalf("got %q, want lines starting %q", lines, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want %q...", i, lines[i], w)
		}
	}
	if strings.ContainsAny(b.String(), "\r\x1b") {
		t.Errorf("terminal control characters in plain output: %q", b.String())
	}

	b.Reset()
	err := step(&b, "key setup", func() error { return errors.New("boom") })
	if err == nil || !strings.HasPrefix(b.String(), "key setup...\nkey setup: failed after ") {
		t.Errorf("failed step: %v, %q", err, b.String())
	}
}

// readAll collects what the terminal got until nothing more arrives.
func readTerminal(t *testing.T, r interface{ Read([]byte) (int, error) }) string {
	t.Helper()
	got := make(chan []byte)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				got <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	var all []byte
	for {
		select {
		case b, ok := <-got:
			if !ok {
				return string(all)
			}
			all = append(all, b...)
		case <-time.After(500 * time.Millisecond):
			return string(all)
		}
	}
}

func TestProgressBarOnTerminal(t *testing.T) {
	ptm, tty := openPTY(t)
	p := newProgress(tty, "proving", 4)
	p.Set(2)
	p.Set(4)
	p.Done(nil)
	s := readTerminal(t, ptm)
	// A bar redraws its line in place and ends at 100% with the count.
	if !strings.Contains(s, "\r") || !strings.Contains(s, "proving") || !strings.Contains(s, "100%") || !strings.Contains(s, "(4/4") {
		t.Errorf("terminal got no progress bar: %q", s)
	}
	if strings.Contains(s, "proving: 2/4") {
		t.Errorf("plain lines on a terminal: %q", s)
	}

	if err := step(tty, "key setup", func() error { time.Sleep(300 * time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	if s := readTerminal(t, ptm); !strings.Contains(s, "key setup") || strings.Contains(s, "key setup...\n") {
		t.Errorf("terminal got no spinner: %q", s)
	}
}

// TestDemoProgress runs the demo end to end with stderr to a pipe: it reports its
// long steps as plain progress lines, and the proving as a count of finished requests.
func TestDemoProgress(t *testing.T) {
	t.Parallel()
	r := cuzkEnv(t, nil, "", 5*time.Minute, "demo", "--circuit", "synthetic-k6", "--requests", "2")
	mustOK(t, r)
	for _, want := range []string{"compiling synthetic-k6...\n", "compiling synthetic-k6: done in ",
		"key setup for synthetic-k6: done in ", "proving: 0/2\n", "proving: 2/2\n", "proving: done in "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("demo stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "==> done") {
		t.Errorf("demo did not finish:\n%s", r.stdout)
	}
	if strings.ContainsAny(r.stderr, "\r\x1b") {
		t.Errorf("terminal control characters on a pipe:\n%q", r.stderr)
	}
}
