package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// What an operator meets submitting, looking up and cancelling requests by hand: bad
// values are usage errors (exit 2) saying the rule, status prints what exists and
// reports the rest, and a second cancel says the request was already cancelled.
func TestSubmitStatusCancelMessages(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
	                                 VALUES ('c', 1, 0, 1, '', 'x')`); err != nil {
		t.Fatal(err)
	}
	submit := func(id, inputs string, flags ...string) result {
		return cuzkEnv(t, []string{"DATABASE_URL=" + db.URL}, inputs, time.Minute,
			append([]string{"submit", "--request-id", id, "--circuit", "c", "--inputs", "-"}, flags...)...)
	}
	oneError := func(r result, want string) {
		t.Helper()
		wantExit(t, r, exitUsage, want)
		if strings.Contains(r.stderr, "violates check constraint") || len(strings.Split(strings.TrimSpace(r.stderr), "\n")) != 1 {
			t.Errorf("want one readable line on stderr, got %s", r)
		}
	}
	oneError(submit("p7", "{}", "--priority", "7"), "priority must be 1 (most urgent) to 4")
	oneError(submit("p0", "{}", "--priority", "0"), "priority must be 1 (most urgent) to 4")
	oneError(submit("m0", "{}", "--max-attempts", "0"), "max attempts must be 1 to 100")
	// Caught by the database: the message comes from its check, still a usage error.
	oneError(submit("arr", "[1]"), `submit: request "arr": partition 0 of the inputs array is a JSON number, not an object`)
	oneError(submit("str", `"x"`), `submit: request "str": inputs must be a JSON object (or an array of them, one per partition), not a JSON string`)
	r := cuzkEnv(t, []string{"DATABASE_URL=" + db.URL}, "{}", time.Minute, "submit", "--request-id", "u", "--circuit", "nope", "--inputs", "-")
	oneError(r, `submit: unknown circuit "nope" (known circuits: c)`)

	mustOK(t, submit("a", "{}"))
	mustOK(t, submit("b", "{}", "--priority", "4"))

	r = cuzkDB(t, db.URL, "status", "a", "b", "unknown", "b", "gone")
	wantExit(t, r, exitRuntime, `cuzk: unknown requests "unknown", "gone"`)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 3 ||
		!strings.Contains(r.stdout, "\na ") || !strings.Contains(r.stdout, "\nb ") {
		t.Errorf("status a b unknown: want the header and the rows of a and b on stdout, got %s", r)
	}
	r = cuzkDB(t, db.URL, "status", "--json", "a", "unknown")
	wantExit(t, r, exitRuntime, `cuzk: unknown request "unknown"`)
	if !strings.Contains(r.stdout, `"request_id":"a"`) {
		t.Errorf("status --json a unknown: want a's row, got %s", r)
	}
	r = cuzkDB(t, db.URL, "status", "--state", "failed", "a")
	wantExit(t, r, exitRuntime, `cuzk: no failed request "a"`)
	mustOK(t, cuzkDB(t, db.URL, "status", "a", "b"))

	r = mustOK(t, cuzkDB(t, db.URL, "cancel", "a"))
	if r.stdout != "cancelled a\n" {
		t.Errorf("first cancel: got %s", r)
	}
	r = mustOK(t, cuzkDB(t, db.URL, "cancel", "a"))
	if r.stdout != "a already cancelled\n" {
		t.Errorf("second cancel: want %q, got %s", "a already cancelled\n", r)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET state = 'succeeded', finished_at = now() WHERE request_id = 'b'`); err != nil {
		t.Fatal(err)
	}
	r = mustOK(t, cuzkDB(t, db.URL, "cancel", "b"))
	if r.stdout != "b already finished (succeeded)\n" {
		t.Errorf("cancel of a proven request: got %s", r)
	}
	r = mustOK(t, cuzkDB(t, db.URL, "status", "a"))
	if !strings.Contains(r.stdout, "cancelled by role ") {
		t.Errorf("status of a cancelled request: want last error \"cancelled by role …\", got %s", r)
	}
}

// `cuzk inputs --count N --out-dir DIR` writes, in one process, exactly the files that
// N runs of `cuzk inputs --seed S > DIR/S.json` would, and refuses a count it cannot
// honour.
func TestInputsOutDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", "3", "--count", "3", "--out-dir", dir))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d files written, want 3", len(entries))
	}
	for _, seed := range []string{"3", "4", "5"} {
		got, err := os.ReadFile(filepath.Join(dir, seed+".json"))
		if err != nil {
			t.Fatal(err)
		}
		want := mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", seed)).stdout
		if string(got) != want {
			t.Errorf("seed %s: file differs from the printed inputs:\n%s\nwant\n%s", seed, got, want)
		}
	}
	wantExit(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--count", "2"), exitUsage, "--count 2")
	wantExit(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--count", "0", "--out-dir", dir), exitUsage, "--count 0")
	missing := filepath.Join(t.TempDir(), "new", "dir")
	wantExit(t, cuzkDB(t, "", "inputs", "--circuit", "nope", "--count", "2", "--out-dir", missing), exitUsage, `unknown circuit "nope"`)
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("inputs --circuit nope --out-dir %s: the directory was created (stat: %v)", missing, err)
	}
	// A directory that does not exist yet is created.
	mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", "3", "--out-dir", missing))
	if got, err := os.ReadFile(filepath.Join(missing, "3.json")); err != nil || string(got) != mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", "3")).stdout {
		t.Errorf("inputs --out-dir %s (new): 3.json %q, %v", missing, got, err)
	}
}
