package dashboard_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/internal/pgtest"
)

// chromium finds Debian's headless browser. Outside CI a missing browser skips the
// test with a message; in CI (CI set, as .ci/run has it) it fails, since .ci/run
// installs chromium and a skip there would hide a broken install.
func chromium(t *testing.T) string {
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

// artifactDir is $CUZK_TEST_ARTIFACTS/<test> when set, else the test's artifact
// directory (kept with go test -artifacts).
func artifactDir(t *testing.T) string {
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

// headless runs chromium on url with args and returns its stdout.
func headless(t *testing.T, bin, url string, args ...string) []byte {
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

// TestDashboardInChromium loads the dashboard of a database with history in a real
// browser: the rendered DOM must show the circuit and its charts, and a screenshot
// is kept for people to look at.
func TestDashboardInChromium(t *testing.T) {
	bin := chromium(t)
	db := pgtest.New(t)
	seed(t, db)
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{}))
	defer srv.Close()

	dom := string(headless(t, bin, srv.URL+"/", "--dump-dom"))
	for _, want := range []string{circuit, "<svg", `class="phase-prove"`, "not below the modulus", "gpu-host/7"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}

	shot := filepath.Join(artifactDir(t), "dashboard.png")
	headless(t, bin, srv.URL+"/", "--screenshot="+shot, "--window-size=1400,2200")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 2200 {
		t.Errorf("screenshot is %v, want 1400x2200", b)
	}
	t.Logf("screenshot: %s", shot)
}
