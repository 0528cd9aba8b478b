package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgtest"
)

const (
	sqlDoc      = "../../docs/sql.md"
	gpuDoc      = "../../docs/gpu.md"
	cookbookDir = "../../sql/cookbook"
)

// docBlock is one fenced code block of a page: its language, its text, the section
// (## heading) it is in, and the file it is a copy of, where a comment
// <!-- sql/cookbook/NAME.sql --> right above it names one.
type docBlock struct {
	lang, text, section, file string
}

// docBlocks returns the sh and sql blocks of the markdown file, in order.
func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	section := ""
	re := regexp.MustCompile("(?ms)^## ([^\n]*)$|^(?:<!-- sql/cookbook/([^ ]+) -->\n)?```(sh|sql)\n(.*?)^```")
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if m[1] != "" {
			section = m[1]
			continue
		}
		out = append(out, docBlock{lang: m[3], text: m[4], section: section, file: m[2]})
	}
	return out
}

// cookbook returns the sql blocks of docs/sql.md with the text of their files in
// sql/cookbook, failing t unless each block names a file whose text it is, and each
// file there is named by one block.
func cookbook(t *testing.T) []docBlock {
	t.Helper()
	var out []docBlock
	named := map[string]bool{}
	for _, b := range docBlocks(t, sqlDoc) {
		if b.lang != "sql" {
			out = append(out, b)
			continue
		}
		if b.file == "" {
			t.Fatalf("docs/sql.md: a sql block in %q has no <!-- sql/cookbook/NAME.sql --> line right above it:\n%s", b.section, b.text)
		}
		if named[b.file] {
			t.Fatalf("docs/sql.md names sql/cookbook/%s twice", b.file)
		}
		named[b.file] = true
		text, err := os.ReadFile(filepath.Join(cookbookDir, b.file))
		if err != nil {
			t.Fatalf("docs/sql.md, %s: %v", b.section, err)
		}
		if string(text) != b.text {
			t.Fatalf("docs/sql.md, %s: the block differs from sql/cookbook/%s (copy the one into the other):\n%s",
				b.section, b.file, firstDiff(b.text, string(text)))
		}
		out = append(out, b)
	}
	files, err := filepath.Glob(filepath.Join(cookbookDir, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !named[filepath.Base(f)] {
			t.Errorf("sql/cookbook/%s is shown nowhere in docs/sql.md", filepath.Base(f))
		}
	}
	return out
}

// firstDiff is the first line where the doc's block and the file differ.
func firstDiff(doc, file string) string {
	d, f := strings.Split(doc, "\n"), strings.Split(file, "\n")
	for i := 0; i < len(d) || i < len(f); i++ {
		var dl, fl string
		if i < len(d) {
			dl = d[i]
		}
		if i < len(f) {
			fl = f[i]
		}
		if dl != fl {
			return fmt.Sprintf("line %d\n doc:  %q\n file: %q", i+1, dl, fl)
		}
	}
	return ""
}

// The sql blocks of docs/sql.md are the files of sql/cookbook, one for one: without a
// database, so that a change to either alone fails at once.
func TestSQLCookbookFilesAreTheDocsBlocks(t *testing.T) {
	if n := len(cookbook(t)); n == 0 {
		t.Fatal("docs/sql.md has no blocks")
	}
}

// asRole is the role a cookbook block names on its first line.
func asRole(t *testing.T, b docBlock) string {
	t.Helper()
	first, _, _ := strings.Cut(b.text, "\n")
	switch first {
	case "-- as the operator":
		return "operator"
	case "-- as a submitter":
		return "submitter"
	}
	t.Fatalf("docs/sql.md: a sql block in %q does not start with `-- as the operator` or `-- as a submitter`:\n%s", b.section, b.text)
	return ""
}

// TestSQLCookbookRunsAsWritten follows docs/sql.md from top to bottom: its shell
// commands with the real binary, every sql block (the text of its sql/cookbook file)
// through psql as the role the block names (a login in cuzk_submitter, or the owner), a worker where the page starts one,
// and checks what the page's comments say the key statements return.
func TestSQLCookbookRunsAsWritten(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	work := t.TempDir()                 // the directory the page's files are written to and psql runs in
	home := filepath.Join(work, "home") // the default key and cache directories are under it
	env := []string{"DATABASE_URL=" + db.URL, "HOME=" + home}

	// The page's logins, made unique on this shared server and dropped at the end.
	roles := map[string]string{"curio": "curio_" + db.Name, "prover": "prover_" + db.Name}
	ident := regexp.MustCompile(`\b(curio|prover)\b`)
	rename := func(s string) string { return ident.ReplaceAllStringFunc(s, func(r string) string { return roles[r] }) }
	t.Cleanup(func() {
		for _, r := range roles {
			id := pgx.Identifier{r}.Sanitize()
			for _, q := range []string{"DROP OWNED BY " + id, "DROP ROLE IF EXISTS " + id} {
				if _, err := db.Pool.Exec(context.Background(), q); err != nil && !strings.Contains(err.Error(), "does not exist") {
					t.Logf("%s: %v", q, err)
				}
			}
		}
	})
	roleURL := map[string]string{"operator": db.URL}
	for _, r := range []string{"submitter", "worker"} {
		u, err := url.Parse(db.URL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(map[string]string{"submitter": roles["curio"], "worker": roles["prover"]}[r], "change-me")
		roleURL[r] = u.String()
	}

	var worker *workerProc
	outputs := map[string]string{} // a distinctive line of each sql block -> its output
	redirect := regexp.MustCompile(`^(.*?)\s*>\s*(\S+)$`)
	for _, b := range cookbook(t) {
		switch b.section {
		case "Status and results", "Partitioned requests":
			if worker == nil {
				t.Fatal("docs/sql.md reads results before it starts a worker")
			}
			waitQueueEmpty(t, db, worker)
		case "Retry and cancel":
			if worker != nil {
				if code := worker.stop(t, time.Minute); code != 0 {
					t.Fatalf("cuzk worker exited %d after SIGTERM", code)
				}
				worker = nil
			}
		}
		if b.lang == "sh" {
			for _, line := range strings.Split(b.text, "\n") {
				line, _, _ = strings.Cut(line, "#")
				line = strings.TrimSpace(line)
				switch {
				case line == "", strings.HasPrefix(line, "export "), strings.HasPrefix(line, "psql "):
					continue // the test's own database and psql connections stand in for these
				case strings.Contains(line, "cuzk worker "):
					_, args, _ := strings.Cut(line, "cuzk worker ")
					worker = startWorker(t, roleURL["worker"], append(strings.Fields(args), "--mem-budget", "1GiB",
						"--keys-dir", filepath.Join(home, ".cache", "cuzk", "keys"), "--cache-dir", filepath.Join(home, ".cache", "cuzk", "r1cs"))...)
				case strings.HasPrefix(line, "cuzk "):
					args, file := line, ""
					if m := redirect.FindStringSubmatch(line); m != nil {
						args, file = m[1], m[2]
					}
					r := mustOK(t, cuzkEnv(t, env, "", 2*time.Minute, strings.Fields(args)[1:]...))
					if file != "" {
						if err := os.WriteFile(filepath.Join(work, file), []byte(r.stdout), 0o600); err != nil {
							t.Fatal(err)
						}
					}
				default:
					t.Fatalf("docs/sql.md: the test does not know how to run %q", line)
				}
			}
			continue
		}
		role := asRole(t, b)
		out, err := psqlIn(work, roleURL[role], rename(b.text))
		if err != nil {
			t.Fatalf("docs/sql.md, %s, as %s: %v\n%s\nthe block:\n%s", b.section, role, err, out, b.text)
		}
		outputs[b.text] = out
	}
	if worker != nil {
		t.Fatal("docs/sql.md ends with its worker still running: Retry and cancel expects none")
	}

	// What the comments say the key statements return.
	block := func(has string) []string {
		t.Helper()
		for text, out := range outputs {
			if strings.Contains(text, has) {
				return strings.Split(out, "\n")
			}
		}
		t.Fatalf("docs/sql.md has no sql block with %q", has)
		return nil
	}
	want := func(what string, ok bool, got []string) {
		t.Helper()
		if !ok {
			t.Errorf("docs/sql.md: %s; got:\n%s", what, strings.Join(got, "\n"))
		}
	}
	id := regexp.MustCompile(`^\d+$`)
	sub := block("request_id => 'sector-1238'")
	want("Submit: the second submit_proof of sector-1234 returns the first's id, then sector-1238's",
		len(sub) == 3 && id.MatchString(sub[0]) && sub[1] == sub[0] && id.MatchString(sub[2]) && sub[2] != sub[0], sub)
	staged := block("FROM my_staging s")
	want("the staging table submits two requests", len(staged) == 2 && id.MatchString(staged[0]) && id.MatchString(staged[1]), staged)
	st := block("WHERE request_id = 'sector-1238';  -- failed")
	want("sector-1234 succeeded in one attempt and sector-1238 failed on its constraint",
		len(st) > 2 && st[0] == "succeeded|1|" && strings.HasPrefix(st[1], "failed|") && strings.Contains(st[1], "is not satisfied") &&
			strings.HasPrefix(st[2], `\x`), st)
	ops := block("the queue at a glance")
	want("the queue shows 1 failed and 4 succeeded, the failure is sector-1238, one live worker",
		len(ops) == 4 && ops[0] == "merkle-poseidon2-d8-c2|failed|1" && ops[1] == "merkle-poseidon2-d8-c2|succeeded|4" &&
			strings.HasPrefix(ops[2], "sector-1238|merkle-poseidon2-d8-c2|1|") && strings.Contains(ops[3], "|cpu|"), ops)
	tim := block("where the time of one request went")
	want("the timing history has rows and sector-1234's total phase", strings.Contains(strings.Join(tim, "\n"), "\ntotal|"), tim)
	bulk := block("cancel whatever of a circuit")
	want("the bulk retry retries sector-1238, the bulk cancel cancels it",
		len(bulk) == 2 && regexp.MustCompile(`^sector-1238\|\d+$`).MatchString(bulk[0]) && bulk[1] == "sector-1238|t", bulk)
	rc := block("SELECT cuzk.retry_proof('sector-1238')")
	want("retry returns a job id, cancel of the queued request true, of the succeeded one false",
		len(rc) == 3 && id.MatchString(rc[0]) && rc[1] == "t" && rc[2] == "f", rc)

	parts := block("partitions FROM cuzk.proof_requests")
	want("the partitioned request has 3 partitions", len(parts) == 2 && id.MatchString(parts[0]) && parts[1] == "3", parts)
	pst := block("AS proven")
	want("the partitioned request succeeded with 3 partitions, its proofs in order, 3 partition rows and the device's idle seconds",
		len(pst) == 8 && pst[0] == "succeeded|3|3" && strings.HasPrefix(pst[1], `0|\x`) && strings.HasPrefix(pst[3], `2|\x`) &&
			regexp.MustCompile(`^1\|2\|succeeded\|`).MatchString(pst[6]) && regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`).MatchString(pst[7]), pst)

	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM cuzk.proof_requests WHERE submitted_by = $1", roles["curio"]).Scan(&n); err != nil || n != 6 {
		t.Errorf("the page's submitter submitted %d requests (%v), want 6", n, err)
	}
}

// psqlIn runs script through psql in dir (where `cat FILE` finds the page's files),
// stopping at the first error; the output is unaligned, tuples only.
func psqlIn(dir, dbURL, script string) (string, error) {
	cmd := exec.Command("psql", dbURL, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// waitQueueEmpty waits until the worker has finished every request of db.
func waitQueueEmpty(t *testing.T, db *pgtest.DB, w *workerProc) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var open int
		if err := db.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM cuzk.proof_status WHERE state IN ('queued', 'running')").Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still open after 3 minutes; worker output:\n%s", open, w.out.String())
		}
		select {
		case <-w.done:
			t.Fatalf("cuzk worker exited (%v) with %d requests open; output:\n%s", w.err, open, w.out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
