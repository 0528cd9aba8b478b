package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// loginURL creates a login in group and returns db's URL as that login.
func loginURL(t *testing.T, db *pgtest.DB, name, group string) string {
	t.Helper()
	name = db.Name + "_" + name // database names are unique, so are these
	pgtest.Login(t, db.Pool, db.URL, name, group).Close()
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(name)
	return u.String()
}

// Two submitters' requests proved by one worker: each submitter's cuzk status, verify
// and timings work on its own requests, know nothing of the other's, and count the
// fleet's timings.
func TestSubmittersCLIReadsOwnRequests(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keysDir, cacheDir := t.TempDir(), t.TempDir()
	_, files := compileAndSetup(t, &cubeCircuit{})
	mustOK(t, cuzkDB(t, db.URL, importArgs("cube", files, keysDir, cacheDir)...))
	submitters := map[string]string{
		"a-1": loginURL(t, db, "alice", "cuzk_submitter"),
		"b-1": loginURL(t, db, "bob", "cuzk_submitter"),
	}
	for id, u := range submitters {
		mustOK(t, cuzkEnv(t, []string{"DATABASE_URL=" + u}, `{"X": "3", "Y": "35"}`, time.Minute,
			"submit", "--request-id", id, "--circuit", "cube", "--inputs", "-"))
	}
	w := startWorker(t, loginURL(t, db, "prover", "cuzk_worker"), workerArgs(keysDir, cacheDir)...)
	for id, u := range submitters {
		if st := waitDone(t, u, w, id, 2*time.Minute); st.State != "succeeded" {
			t.Fatalf("%s ended %s: %s", id, st.State, st.LastError)
		}
	}
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("cuzk worker exited %d after SIGTERM", code)
	}

	for id, u := range submitters {
		other := map[string]string{"a-1": "b-1", "b-1": "a-1"}[id]
		r := mustOK(t, cuzkDB(t, u, "status"))
		if !strings.Contains(r.stdout, "\n"+id+" ") || strings.Contains(r.stdout, other) {
			t.Errorf("status as the submitter of %s: want %s and not %s, got %s", id, id, other, r)
		}
		wantExit(t, cuzkDB(t, u, "status", other), exitRuntime, `unknown request "`+other+`"`)
		if r := mustOK(t, cuzkDB(t, u, "verify", "--all")); r.stdout != id+": ok\n" {
			t.Errorf("verify --all as the submitter of %s: want only %s, got %s", id, id, r)
		}
		wantExit(t, cuzkDB(t, u, "verify", other), exitRuntime, "1 of 1 proofs did not verify")
		r = mustOK(t, cuzkDB(t, u, "timings", "--json", "--circuit", "cube"))
		if !strings.Contains(r.stdout, `"phase":"total","n":2,`) {
			t.Errorf("timings as the submitter of %s: want both proofs' totals, got %s", id, r)
		}
	}
}
