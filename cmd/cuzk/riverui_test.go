package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/headless"
	"github.com/cuzk/cuzk/internal/pgtest"
)

const riverStatesBegin = "<!-- River job states: checked by TestRiverUIShowsRequests -->"

// readmeRiverStates is docs/operating.md's table of which River job state each finished cuzk
// state shows as: cuzk state -> River state.
func readmeRiverStates(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(operatingDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), riverStatesBegin)
	if !ok {
		t.Fatalf("docs/operating.md lacks %q", riverStatesBegin)
	}
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| `(\\w+)`")
	out := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(strings.SplitN(table, "\n\n", 2)[0], -1) {
		out[m[1]] = m[2]
	}
	return out
}

// riverJob is a job as River UI's API serves it (the fields the test reads).
type riverJob struct {
	ID    int64  `json:"id"`
	State string `json:"state"`
	Kind  string `json:"kind"`
	Args  string `json:"args"` // the args' JSON text
}

// TestRiverUIShowsRequests runs requests inserted through SQL to succeeded, failed and
// cancelled with a real worker: each River job names its request and circuit in its
// args, River UI serves them in its job list and job page, and the River state of each
// is the one docs/operating.md's table gives.
func TestRiverUIShowsRequests(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	dir := t.TempDir()
	dirs := []string{"--keys-dir", filepath.Join(dir, "keys"), "--cache-dir", filepath.Join(dir, "r1cs")}
	const circuit = "synthetic-k6"
	mustOK(t, cuzkDB(t, db.URL, append([]string{"setup", "--circuit", circuit}, dirs...)...))
	in := strings.TrimSpace(mustOK(t, cuzkDB(t, "", "inputs", "--circuit", circuit)).stdout)
	want := readmeRiverStates(t)
	requests := map[string]string{"ui-ok": "succeeded", "ui-bad": "failed", "ui-cancel": "cancelled"}
	for st := range requests {
		if want[requests[st]] == "" {
			t.Fatalf("docs/operating.md's River state table has no row for %s (rows: %v)", requests[st], want)
		}
	}
	psql(t, db.URL, fmt.Sprintf(`
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('ui-ok', '%[1]s', $j$%[2]s$j$);
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('ui-bad', '%[1]s', '{}');
		SELECT cuzk.submit_proof(request_id => 'ui-cancel', circuit => '%[1]s', inputs => $j$%[2]s$j$::jsonb);
		SELECT cuzk.cancel_proof('ui-cancel');`, circuit, in))

	addr := freeAddr(t)
	base := "http://" + addr
	w := startWorker(t, db.URL, append([]string{"--backend", "cpu", "--mem-budget", "1GiB", "--http", addr}, dirs...)...)
	waitHTTP(t, w, base+"/healthz")
	for rid, st := range requests {
		if got := waitDone(t, db.URL, w, rid, 2*time.Minute); got.State != st {
			t.Fatalf("%s ended %s (%s), want %s", rid, got.State, got.LastError, st)
		}
	}

	// In the database: every job names its request and circuit; River's state is final
	// once the request is (the worker ends the job in the request's transaction).
	jobOf := map[string]int64{}
	for rid, st := range requests {
		var id int64
		var argsRID, argsCircuit, state string
		if err := db.Pool.QueryRow(context.Background(), `
			SELECT j.id, j.args->>'request_id', j.args->>'circuit', j.state
			  FROM cuzk.proof_requests r JOIN river_job j ON j.id = r.job_id WHERE r.request_id = $1`, rid).
			Scan(&id, &argsRID, &argsCircuit, &state); err != nil {
			t.Fatalf("%s: river job: %v", rid, err)
		}
		if argsRID != rid || argsCircuit != circuit {
			t.Errorf("%s: job args name request %q circuit %q", rid, argsRID, argsCircuit)
		}
		if state != want[st] {
			t.Errorf("%s is %s and its River job %s; docs/operating.md says %s", rid, st, state, want[st])
		}
		jobOf[rid] = id
	}
	var jobErrors, attemptError string
	if err := db.Pool.QueryRow(context.Background(), `
		SELECT (SELECT coalesce(string_agg(e->>'error', ' | '), '') FROM river_job j, unnest(j.errors) e WHERE j.id = $1),
		       (SELECT error FROM cuzk.proof_attempts WHERE request_id = 'ui-bad')`,
		jobOf["ui-bad"]).Scan(&jobErrors, &attemptError); err != nil {
		t.Fatal(err)
	}
	if jobErrors != attemptError {
		t.Errorf("the failed request's River job errors %q, want its attempt's error %q", jobErrors, attemptError)
	}

	// River UI: the list shows the args (so the request id) by default, each state's
	// list holds its request's job, and the job page carries the args too.
	code, body := httpDo(t, "GET", base+"/riverui/api/features")
	if code != 200 || !regexp.MustCompile(`"job_list_hide_args_by_default":\s*false`).MatchString(body) {
		t.Errorf("River UI features: %d %s, want args shown in the job list", code, body)
	}
	for rid, st := range requests {
		code, body := httpDo(t, "GET", base+"/riverui/api/jobs?state="+want[st]+"&kinds=cuzk_prove")
		var list struct{ Data []riverJob }
		if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
			t.Fatalf("River UI jobs in %s: %d %v %.300s", want[st], code, err, body)
		}
		found := false
		for _, j := range list.Data {
			if j.ID == jobOf[rid] {
				found = true
				checkArgs(t, "job list "+want[st], j, rid, circuit)
			}
		}
		if !found {
			t.Errorf("River UI's %s list lacks %s's job %d: %.500s", want[st], rid, jobOf[rid], body)
		}
		code, body = httpDo(t, "GET", fmt.Sprintf("%s/riverui/api/jobs/%d", base, jobOf[rid]))
		var j riverJob
		if err := json.Unmarshal([]byte(body), &j); code != 200 || err != nil {
			t.Fatalf("River UI job %d: %d %v %.300s", jobOf[rid], code, err, body)
		}
		if j.State != want[st] {
			t.Errorf("River UI shows %s's job as %s, want %s", rid, j.State, want[st])
		}
		checkArgs(t, "job page", j, rid, circuit)
	}
	riverUIInBrowser(t, base, jobOf["ui-bad"], "ui-bad", want["failed"])
	if c := w.stop(t, 30*time.Second); c != 0 {
		t.Errorf("worker exit %d", c)
	}
}

// riverUIInBrowser loads River UI's job list of state and the page of job jobID in a
// real browser: the rendered pages must name the request, as an operator sees them.
func riverUIInBrowser(t *testing.T, base string, jobID int64, rid, state string) {
	bin := headless.Chromium(t)
	list := base + "/riverui/jobs?state=" + state
	if dom := headless.DOM(t, bin, list); !strings.Contains(dom, `"request_id":"`+rid+`"`) {
		t.Errorf("River UI's %s job list, as rendered, does not show request_id %s:\n%.3000s", state, rid, dom)
	}
	dom := headless.DOM(t, bin, fmt.Sprintf("%s/riverui/jobs/%d", base, jobID))
	for _, want := range []string{rid, ">" + strings.ToUpper(state[:1]) + state[1:] + "<"} {
		if !strings.Contains(dom, want) {
			t.Errorf("River UI's page of job %d, as rendered, lacks %q:\n%.3000s", jobID, want, dom)
		}
	}
	shot := filepath.Join(headless.ArtifactDir(t), "riverui-jobs.png")
	headless.Run(t, bin, list, "--virtual-time-budget=10000", "--screenshot="+shot, "--window-size=1400,900")
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		t.Errorf("no screenshot of River UI: %v", err)
	}
	t.Logf("screenshot: %s", shot)
}

func checkArgs(t *testing.T, where string, j riverJob, rid, circuit string) {
	t.Helper()
	var args struct {
		RequestID string `json:"request_id"`
		Circuit   string `json:"circuit"`
	}
	if err := json.Unmarshal([]byte(j.Args), &args); err != nil || args.RequestID != rid || args.Circuit != circuit {
		t.Errorf("%s: job %d args %s (%v), want request_id %q circuit %q", where, j.ID, j.Args, err, rid, circuit)
	}
}
