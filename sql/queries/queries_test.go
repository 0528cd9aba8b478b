package queries

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestParse(t *testing.T) {
	fsys := fstest.MapFS{
		"a.sql": {Data: []byte("-- the file's comment\n\n-- name: One :one\n-- why\nSELECT 1;\n\n-- name: Two :exec\nDELETE FROM t\n WHERE x = $1;\n")},
		"b.sql": {Data: []byte("-- name: Three :many\nSELECT 3")},
	}
	all, err := parseAll(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{Name: "One", Kind: "one", File: "a.sql", SQL: "-- why\nSELECT 1"},
		{Name: "Two", Kind: "exec", File: "a.sql", SQL: "DELETE FROM t\n WHERE x = $1"},
		{Name: "Three", Kind: "many", File: "b.sql", SQL: "SELECT 3"},
	}
	if len(all) != len(want) {
		t.Fatalf("got %d queries %+v, want %d", len(all), all, len(want))
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("query %d: got %+v, want %+v", i, all[i], want[i])
		}
	}
}

func TestParseRejects(t *testing.T) {
	for name, text := range map[string]string{
		"SQL before the first":  "SELECT 1;\n-- name: A :one\nSELECT 2",
		"malformed name line":   "-- name: A\nSELECT 1",
		"has no statement":      "-- name: A :one\n-- only a comment\n",
		"is named in a.sql and": "-- name: A :one\nSELECT 1;\n-- name: A :one\nSELECT 2",
	} {
		_, err := parseAll(fstest.MapFS{"a.sql": {Data: []byte(text)}})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%q: got error %v, want one saying %q", text, err, name)
		}
	}
}

// The embedded files parse, and every query is reachable by name.
func TestEmbedded(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no queries embedded")
	}
	for _, q := range all {
		if SQL(q.Name) != q.SQL {
			t.Errorf("SQL(%q) is not the query's text", q.Name)
		}
	}
}
