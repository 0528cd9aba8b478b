package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/cuzk/cuzk/internal/pgtest"
)

const (
	readmeFile       = "../../README.md"
	workerFlagsBegin = "<!-- worker flags: generated from the kong model by TestReadmeWorkerFlags -->"
	workerFlagsEnd   = "<!-- end of worker flags -->"
)

// workerFlagsTable is the README's configuration reference for `cuzk worker`: every
// flag the command takes (the global ones first), its variable and its default.
func workerFlagsTable(t *testing.T) string {
	t.Helper()
	var c cli
	parser, err := kong.New(&c, kong.Name("cuzk"), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	var node *kong.Node
	for _, n := range parser.Model.Children {
		if n.Name == "worker" {
			node = n
		}
	}
	if node == nil {
		t.Fatal("no worker command in the kong model")
	}
	var b strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	for _, group := range node.AllFlags(true) { // the global flags first
		for _, f := range group {
			if f.Name == "help" {
				continue
			}
			flag := "--" + f.Name
			if !f.IsBool() {
				flag += " " + placeholder(f)
			}
			env := make([]string, len(f.Envs))
			for j, e := range f.Envs {
				env[j] = "`" + e + "`"
			}
			def := f.Default
			switch {
			case def == "" && f.IsBool():
				def = "false"
			case def == "":
				def = "–"
			default:
				def = "`" + def + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", flag, strings.Join(env, ", "), def, helpEscaper.Replace(f.Help))
		}
	}
	return b.String()
}

// helpEscaper keeps help text literal in a markdown table cell.
var helpEscaper = strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;")

// placeholder names a flag's value: its own placeholder, its choices, or its type.
func placeholder(f *kong.Flag) string {
	switch {
	case f.PlaceHolder != "":
		return f.PlaceHolder
	case f.Enum != "":
		return strings.ReplaceAll(f.Enum, ",", "\\|")
	case f.Target.Type() == reflect.TypeFor[time.Duration]():
		return "DURATION"
	case f.Target.Kind() == reflect.Int:
		return "N"
	}
	return "STRING"
}

// TestReadmeWorkerFlags keeps the README's configuration reference in step with the
// flags: on a mismatch it prints the section to paste.
func TestReadmeWorkerFlags(t *testing.T) {
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	want := workerFlagsTable(t)
	_, rest, ok1 := strings.Cut(readme, workerFlagsBegin+"\n")
	got, _, ok2 := strings.Cut(rest, workerFlagsEnd)
	if !ok1 || !ok2 {
		t.Fatalf("README.md has no section between %q and %q; add it with:\n\n%s\n%s%s", workerFlagsBegin, workerFlagsEnd, workerFlagsBegin, want, workerFlagsEnd)
	}
	if got != want {
		t.Errorf("README.md's worker configuration reference is out of date; replace the lines between the markers with:\n\n%s", want)
	}
	for _, env := range sortedKeys(commandEnv(t, "worker")) {
		if !strings.Contains(want, "`"+env+"`") {
			t.Errorf("%s, read by cuzk worker, is missing from the generated table", env)
		}
	}
}

// TestReadmeSQLCookbook runs every statement of the README's SQL cookbook against a
// migrated database, with the elided inputs ('{…}') filled in, so the recipes
// orchestrators copy keep working as the schema changes.
func TestReadmeSQLCookbook(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start, end := strings.Index(readme, "## SQL cookbook"), strings.Index(readme, "### Notes")
	if start < 0 || end < start {
		t.Fatal("README.md lacks the SQL cookbook section")
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(readme[start:end], -1)
	if len(blocks) < 4 {
		t.Fatalf("found %d sql blocks in the cookbook", len(blocks))
	}
	db := pgtest.New(t)
	ctx := context.Background()
	// What the recipes refer to: the circuit, a request, a staging table.
	setup := `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		     VALUES ('merkle-poseidon2-d8-c2', 1, 0, 1, '', 'x');
		CREATE TABLE my_staging (id text, inputs jsonb);
		INSERT INTO my_staging VALUES ('staged-1', '{}');`
	if _, err := db.Pool.Exec(ctx, setup); err != nil {
		t.Fatal(err)
	}
	elided := regexp.MustCompile(`'\{[^']*…[^']*\}'`)
	for i, m := range blocks {
		script := elided.ReplaceAllString(m[1], "'{}'")
		if strings.Contains(script, "…") {
			t.Errorf("block %d still has an elision after filling inputs:\n%s", i, script)
			continue
		}
		if strings.Contains(script, "cuzk.retry_proof('sector-1234')") {
			// Only a failed or cancelled request can be retried: fail it as a worker would.
			if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET state = 'failed', finished_at = now(),
			        last_error = 'bad input' WHERE request_id = 'sector-1234'`); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Pool.Exec(ctx, script); err != nil {
			t.Errorf("README SQL block %d fails: %v\n%s", i, err, script)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM cuzk.proof_requests").Scan(&n); err != nil || n != 3 {
		t.Errorf("the cookbook's submissions made %d requests (%v), want 3", n, err)
	}
}
