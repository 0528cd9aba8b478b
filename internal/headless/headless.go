// Package headless runs Debian's chromium without a display for tests that check what
// a browser renders of cuzk's pages.
package headless

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Chromium finds the browser. Outside CI a missing browser skips the test with a
// message; in CI (CI set, as .ci/run has it) it fails, since .ci/run installs chromium
// and a skip there would hide a broken install.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found in PATH; .ci/run installs it (apt-get install -y chromium)")
	}
	t.Skip("chromium not installed (apt-get install -y chromium); with CI=1 this is a failure")
	return ""
}

// ArtifactDir is $CUZK_TEST_ARTIFACTS/<test> when set, else the test's artifact
// directory (kept with go test -artifacts).
func ArtifactDir(t testing.TB) string {
	t.Helper()
	if base := os.Getenv("CUZK_TEST_ARTIFACTS"); base != "" {
		dir := filepath.Join(base, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

// Run runs chromium (bin) on url with args and returns its stdout.
func Run(t testing.TB, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(append(flags, args...), url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// DOM is the page at url as the browser has built it once its scripts ran: a
// virtual-time budget lets a script-built page (River UI) fetch and render its data
// without the test waiting on the wall clock.
func DOM(t testing.TB, bin, url string) string {
	t.Helper()
	return string(Run(t, bin, url, "--virtual-time-budget=10000", "--dump-dom"))
}
