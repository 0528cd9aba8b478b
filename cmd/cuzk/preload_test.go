package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// logLines are a JSON-format worker's log records with the given msg.
func logLines(out, msg string) []map[string]any {
	var recs []map[string]any
	for _, l := range strings.Split(out, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			recs = append(recs, m)
		}
	}
	return recs
}

// With --preload-keys all, a worker loads every registered circuit's key that it has
// files for, and then its compiled circuit, before any request arrives (the key from
// the dump setup wrote, saying so in its logs), and the first request finds the key
// resident: its srs_ms is 0.
func TestWorkerPreloadKeys(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keysDir, cacheDir := t.TempDir(), t.TempDir()
	mustOK(t, cuzkDB(t, db.URL, "setup", "--circuit", "synthetic-k6", "--keys-dir", keysDir, "--cache-dir", cacheDir))
	if _, err := os.Stat(filepath.Join(keysDir, "synthetic-k6", "pk.dump")); err != nil {
		t.Fatalf("setup wrote no dump: %v", err)
	}
	// Registered, but its keys are elsewhere: "all" leaves it out rather than failing.
	psql(t, db.URL, `INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
	                 VALUES ('synthetic-k7', 1, 0, 1, '', 'x');`)

	w := startWorker(t, db.URL, "--backend", "cpu", "--keys-dir", keysDir, "--cache-dir", cacheDir,
		"--mem-budget", "1GiB", "--poll-interval", "100ms", "--shutdown-grace", "10s", "--log-format", "json",
		"--preload-keys", "all")
	deadline := time.Now().Add(90 * time.Second)
	for len(logLines(w.out.String(), "preload done")) == 0 {
		select {
		case <-w.done:
			t.Fatalf("worker exited (%v) before preloading; output:\n%s", w.err, w.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no key preloaded within 90s; output:\n%s", w.out.String())
		}
	}
	out := w.out.String()
	if recs := logLines(out, "proving key preloaded"); len(recs) != 1 || recs[0]["circuit"] != "synthetic-k6" {
		t.Errorf("want one \"proving key preloaded\" line for synthetic-k6, got %v", recs)
	}
	if recs := logLines(out, "compiled circuit preloaded"); len(recs) != 1 || recs[0]["circuit"] != "synthetic-k6" {
		t.Errorf("want one \"compiled circuit preloaded\" line for synthetic-k6, got %v", recs)
	}
	if recs := logLines(out, "preloading proving keys"); len(recs) != 1 || recs[0]["circuits"] != "synthetic-k6" {
		t.Errorf("want one line naming the circuits to preload (synthetic-k6 only), got %v", recs)
	}
	start, done := logLines(out, "loading proving key"), logLines(out, "proving key loaded")
	if len(start) != 1 || start[0]["circuit"] != "synthetic-k6" || start[0]["from"] != "pk.dump" {
		t.Errorf("want one \"loading proving key\" line for synthetic-k6 from pk.dump, got %v", start)
	}
	if len(done) != 1 || done[0]["from"] != "pk.dump" || done[0]["ms"] == nil {
		t.Errorf("want one \"proving key loaded\" line from pk.dump with its duration, got %v", done)
	}

	inputs := mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", "1"))
	mustOK(t, cuzkEnv(t, []string{"DATABASE_URL=" + db.URL}, inputs.stdout, time.Minute,
		"submit", "--request-id", "after-preload", "--circuit", "synthetic-k6", "--inputs", "-"))
	if st := waitDone(t, db.URL, w, "after-preload", 90*time.Second); st.State != "succeeded" {
		t.Fatalf("after-preload ended %s: %s", st.State, st.LastError)
	}
	if got := psql(t, db.URL, "SELECT srs_ms FROM cuzk.proof_attempts WHERE request_id = 'after-preload';"); got != "0" {
		t.Errorf("srs_ms of the first request after the preload: %q, want 0 (key resident)", got)
	}
	if n := len(logLines(w.out.String(), "loading proving key")); n != 1 {
		t.Errorf("the key was loaded %d times, want once", n)
	}
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("cuzk worker exited %d after SIGTERM, want 0", code)
	}
}
