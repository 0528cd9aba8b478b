package pgtest

import (
	"os/exec"
	"strings"
)

// Psql runs script through the psql client, as an orchestrator without Go would, and
// returns its output (unaligned, tuples only); a failing statement fails t.
func Psql(t TB, url, script string) string {
	t.Helper()
	out, err := PsqlErr(url, script)
	if err != nil {
		t.Fatalf("psql: %v: %s", err, out)
	}
	return out
}

// PsqlErr is Psql for scripts that are meant to fail: it returns psql's output and
// error.
func PsqlErr(url, script string) (string, error) {
	cmd := exec.Command("psql", url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
