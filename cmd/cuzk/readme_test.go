package main

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

const (
	readmeFile       = "../../README.md"
	operatingDoc     = "../../docs/operating.md"
	workerFlagsBegin = "<!-- worker flags: generated from the kong model by TestReadmeWorkerFlags -->"
	workerFlagsEnd   = "<!-- end of worker flags -->"
)

// workerFlagsTable is docs/operating.md's configuration reference for `cuzk worker`: every
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

// TestReadmeWorkerFlags keeps docs/operating.md's configuration reference in step
// with the flags: on a mismatch it prints the section to paste.
func TestReadmeWorkerFlags(t *testing.T) {
	b, err := os.ReadFile(operatingDoc)
	if err != nil {
		t.Fatal(err)
	}
	want := workerFlagsTable(t)
	_, rest, ok1 := strings.Cut(string(b), workerFlagsBegin+"\n")
	got, _, ok2 := strings.Cut(rest, workerFlagsEnd)
	if !ok1 || !ok2 {
		t.Fatalf("docs/operating.md has no section between %q and %q; add it with:\n\n%s\n%s%s", workerFlagsBegin, workerFlagsEnd, workerFlagsBegin, want, workerFlagsEnd)
	}
	if got != want {
		t.Errorf("docs/operating.md's worker configuration reference is out of date; replace the lines between the markers with:\n\n%s", want)
	}
	for _, env := range sortedKeys(commandEnv(t, "worker")) {
		if !strings.Contains(want, "`"+env+"`") {
			t.Errorf("%s, read by cuzk worker, is missing from the generated table", env)
		}
	}
}
