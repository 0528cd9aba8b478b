package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgcluster"
)

// composeLogins is who each cuzk service of docker-compose.yml connects as.
var composeLogins = map[string]string{
	"migrate":      "cuzk_owner",
	"worker":       "prover",
	"worker-cpu":   "prover",
	"orchestrator": "orchestrator",
}

// composeLogin is the login and passfile secret of a service's DATABASE_URL.
func composeLogin(t *testing.T, svc composeService) (user, secret string) {
	t.Helper()
	u, err := url.Parse(svc.Environment["DATABASE_URL"])
	if err != nil {
		t.Fatalf("DATABASE_URL %q: %v", svc.Environment["DATABASE_URL"], err)
	}
	if _, has := u.User.Password(); has {
		t.Errorf("DATABASE_URL %q carries a password; it must come from the passfile secret", u.Redacted())
	}
	pf := u.Query().Get("passfile")
	if dir, name := filepath.Split(pf); dir != "/run/secrets/" || name == "" {
		t.Errorf("DATABASE_URL %q: passfile %q, want /run/secrets/<secret>", u.Redacted(), pf)
	}
	return u.User.Username(), filepath.Base(pf)
}

// No service connects as the superuser, none has a password in the file or a fallback
// one, and each is given only its own login's secret.
func TestComposeLeastPrivilege(t *testing.T) {
	doc, _ := loadCompose(t)
	b, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "PASSWORD:-") || strings.Contains(string(b), "POSTGRES_PASSWORD:") {
		t.Errorf("%s sets a password or a fallback for one; passwords come from secrets", composeFile)
	}
	for svc, want := range composeLogins {
		s, ok := doc.Services[svc]
		if !ok {
			t.Errorf("service %s missing", svc)
			continue
		}
		user, secret := composeLogin(t, s)
		if user != want {
			t.Errorf("%s connects as %q, want %q", svc, user, want)
		}
		if !slices.Equal(s.Secrets, []string{secret}) {
			t.Errorf("%s is given secrets %q, want only its passfile's %q", svc, s.Secrets, secret)
		}
	}
	pg := doc.Services["postgres"]
	if pg.Environment["POSTGRES_PASSWORD_FILE"] != "/run/secrets/postgres_password" || pg.Environment["POSTGRES_USER"] != "" {
		t.Errorf("postgres environment %v: want the default superuser with POSTGRES_PASSWORD_FILE=/run/secrets/postgres_password", pg.Environment)
	}
	wantSecrets := []string{"cuzk_owner", "orchestrator", "postgres_password", "prover"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range doc.Secrets {
			if !yield(k) {
				return
			}
		}
	}); !reflect.DeepEqual(got, wantSecrets) {
		t.Errorf("top-level secrets %q, want %q", got, wantSecrets)
	}
	for name, sec := range doc.Secrets {
		if sec.File != "./secrets/"+name {
			t.Errorf("secret %s from %q, want ./secrets/%s (compose/secrets.sh writes it)", name, sec.File, name)
		}
		if !slices.Contains(pg.Secrets, name) {
			t.Errorf("postgres is not given secret %s, which compose/init-roles.sh reads", name)
		}
	}
	if !slices.Contains(pg.Volumes, "./compose/init-roles.sh:/docker-entrypoint-initdb.d/10-cuzk-roles.sh:ro") {
		t.Errorf("postgres volumes %q lack compose/init-roles.sh in /docker-entrypoint-initdb.d", pg.Volumes)
	}
	// Only the final server listens on TCP: the first start's initialisation, which
	// creates the logins, is over once this answers.
	if hc := strings.Join(pg.Healthcheck.Test, " "); !strings.Contains(hc, "pg_isready -h 127.0.0.1") {
		t.Errorf("postgres healthcheck %q must ask over TCP (-h 127.0.0.1)", hc)
	}
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(ignore), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if !slices.Contains(lines, "secrets") || slices.Contains(lines, ".git") {
		t.Errorf(".dockerignore must keep secrets out of the image and .git in (go build records the revision from it): %q", lines)
	}
}

// The worker settings compose sets by default are the binary's defaults, except those
// it sets on purpose, so an operator meets one default for each.
func TestComposeDefaultsAreTheBinarys(t *testing.T) {
	doc, _ := loadCompose(t)
	onPurpose := map[string]bool{
		"DATABASE_URL": true, "CUZK_KEYS_DIR": true, "CUZK_CACHE_DIR": true, "CUZK_HTTP": true,
		"CUZK_BACKEND": true, "CUZK_NAME": true, "CUZK_LOG_FORMAT": true, // json for log collectors
	}
	defaults := map[string]string{}
	wt := reflect.TypeFor[workerCmd]()
	for i := range wt.NumField() {
		f := wt.Field(i)
		if env := f.Tag.Get("env"); env != "" {
			defaults[env] = f.Tag.Get("default")
			if f.Type.Kind() == reflect.Bool && defaults[env] == "" {
				defaults[env] = "false"
			}
		}
	}
	for _, svc := range []string{"worker", "worker-cpu"} {
		for k, v := range doc.Services[svc].Environment {
			want, isFlag := defaults[k]
			if onPurpose[k] || !isFlag {
				continue
			}
			if got := defaultOf(v); got != want {
				t.Errorf("%s: %s defaults to %q in %s and to %q in the binary", svc, k, got, composeFile, want)
			}
		}
	}
}

// The compose file's roles against a real server: compose/secrets.sh writes the
// secrets, compose/init-roles.sh (as the postgres image runs it) creates the logins,
// password authentication is on, and each service's login, with its password from its
// passfile, does its job: the owner migrates and sets up a circuit, the example
// submitter submits, the worker proves it. The worker's login cannot submit, the
// submitter cannot read inputs, and a wrong password is refused.
func TestComposeRolesOnPostgres(t *testing.T) {
	t.Parallel()
	if _, err := pgcluster.FindBinDir(); err != nil {
		t.Skipf("needs PostgreSQL's server binaries for a private cluster: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.FreePort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	doc, _ := loadCompose(t)

	secrets := filepath.Join(t.TempDir(), "secrets")
	run := func(env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run(nil, "../../compose/secrets.sh", secrets)
	if st, err := os.Stat(secrets); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("secrets directory: %v %v, want mode 0700", st, err)
	}
	first, err := os.ReadFile(filepath.Join(secrets, "prover"))
	if err != nil || !strings.HasPrefix(string(first), "*:*:*:prover:") {
		t.Fatalf("prover secret %q (%v), want a pgpass line for prover", first, err)
	}
	run(nil, "../../compose/secrets.sh", secrets) // a second run keeps what is there
	if again, _ := os.ReadFile(filepath.Join(secrets, "prover")); string(again) != string(first) {
		t.Fatal("a second compose/secrets.sh changed an existing secret")
	}

	socket := []string{"PGHOST=" + c.Dir, "PGPORT=" + strconv.Itoa(c.Port)}
	run(append(socket, "CUZK_SECRETS_DIR="+secrets, "POSTGRES_USER=postgres"), "../../compose/init-roles.sh")
	// The image's default: the superuser on the socket, passwords for everyone else.
	hba := "local all postgres trust\nlocal all all scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(c.Dir, "data", "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		t.Fatal(err)
	}
	psql(t, c.URL("postgres"), "SELECT pg_reload_conf()")

	urlOf := func(svc string) string {
		user, secret := composeLogin(t, doc.Services[svc])
		return "host=" + c.Dir + " port=" + strconv.Itoa(c.Port) + " dbname=cuzk sslmode=disable user=" + user +
			" passfile=" + filepath.Join(secrets, secret)
	}
	owner, worker, submitter := urlOf("migrate"), urlOf("worker-cpu"), urlOf("orchestrator")
	dir := t.TempDir()
	dirs := []string{"--keys-dir", filepath.Join(dir, "keys"), "--cache-dir", filepath.Join(dir, "r1cs")}
	const circuit = "synthetic-k6"
	mustOK(t, cuzkDB(t, owner, "migrate"))
	mustOK(t, cuzkDB(t, owner, append([]string{"setup", "--circuit", circuit}, dirs...)...))
	in := mustOK(t, cuzkDB(t, "", "inputs", "--circuit", circuit)).stdout
	submit := func(url, id string) result {
		return cuzkEnv(t, []string{"DATABASE_URL=" + url}, in, time.Minute, "submit", "--request-id", id, "--circuit", circuit, "--inputs", "-")
	}
	mustOK(t, submit(submitter, "compose-1"))
	wantExit(t, submit(worker, "compose-2"), exitRuntime, "permission denied")

	w := startWorker(t, worker, append([]string{"--backend", "cpu", "--mem-budget", "1GiB"}, dirs...)...)
	if got := waitDone(t, submitter, w, "compose-1", 2*time.Minute); got.State != "succeeded" {
		t.Fatalf("compose-1 ended %s (%s), want succeeded", got.State, got.LastError)
	}
	if code := w.stop(t, time.Minute); code != 0 {
		t.Errorf("worker exit %d", code)
	}

	conn, err := pgx.Connect(ctx, submitter)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT inputs FROM cuzk.proof_requests"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("the submitter reads inputs: %v, want permission denied", err)
	}

	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("*:*:*:orchestrator:not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cuzkDB(t, strings.Replace(submitter, filepath.Join(secrets, "orchestrator"), wrong, 1), "status")
	wantExit(t, r, exitRuntime, "password authentication failed", "check the password")
}
