// Package queries holds the SQL text that package store runs, as named queries in the
// .sql files beside it, so that the statements can be read, reviewed and run (psql's
// PREPARE) without Go. Each query starts at a line
//
//	-- name: Name :kind
//
// (kind: one, many or exec, for readers) and runs to the next such line; comments
// under the name line stay part of the text. Each is one statement. A test in package
// store prepares every query against a migrated database and holds the set to the
// names store uses.
package queries

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Query is one named statement.
type Query struct {
	Name string
	Kind string // one | many | exec
	File string // the .sql file it is in
	SQL  string // its text, without the name line or a trailing semicolon
}

// byName is every query, parsed once from the embedded files and never changed; a file
// that does not parse panics at start, so that every test of this package and of
// store fails.
var byName = mustIndex()

// SQL is the text of the query called name. An unknown name panics: the names store
// uses are fixed in its source, and a test checks each of them exists.
func SQL(name string) string {
	q, ok := byName[name]
	if !ok {
		panic(fmt.Sprintf("queries: no query named %q in sql/queries", name))
	}
	return q.SQL
}

// All returns every query, by file and then in the order of its file.
func All() ([]Query, error) {
	return parseAll(files)
}

var nameLine = regexp.MustCompile(`^-- name: ([A-Za-z][A-Za-z0-9]*) :(one|many|exec)\s*$`)

// parseAll reads the queries of every .sql file of fsys.
func parseAll(fsys fs.FS) ([]Query, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list query files: %w", err)
	}
	sort.Strings(names)
	var all []Query
	seen := map[string]string{}
	for _, file := range names {
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("read query file: %w", err)
		}
		qs, err := parse(file, string(b))
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			if f, dup := seen[q.Name]; dup {
				return nil, fmt.Errorf("query %s is named in %s and in %s", q.Name, f, file)
			}
			seen[q.Name] = file
		}
		all = append(all, qs...)
	}
	return all, nil
}

// parse splits one file into its queries. Lines before the first name line are the
// file's own comments; anything else there is an error.
func parse(file, text string) ([]Query, error) {
	var out []Query
	var cur *Query
	var body []string
	flush := func() error {
		if cur == nil {
			return nil
		}
		sql := strings.TrimSpace(strings.Join(body, "\n"))
		sql = strings.TrimSpace(strings.TrimSuffix(sql, ";"))
		if !hasStatement(sql) {
			return fmt.Errorf("%s: query %s has no statement", file, cur.Name)
		}
		cur.SQL = sql
		out = append(out, *cur)
		return nil
	}
	for i, line := range strings.Split(text, "\n") {
		if m := nameLine.FindStringSubmatch(line); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			cur, body = &Query{Name: m[1], Kind: m[2], File: file}, nil
			continue
		}
		if strings.HasPrefix(line, "-- name:") {
			return nil, fmt.Errorf("%s:%d: malformed name line %q (want `-- name: Name :one|many|exec`)", file, i+1, line)
		}
		if cur == nil {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
				return nil, fmt.Errorf("%s:%d: SQL before the first `-- name:` line", file, i+1)
			}
			continue
		}
		body = append(body, line)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// hasStatement says whether sql has a line that is not a comment.
func hasStatement(sql string) bool {
	for _, l := range strings.Split(sql, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
			return true
		}
	}
	return false
}

func mustIndex() map[string]Query {
	all, err := All()
	if err != nil {
		panic(err)
	}
	m := make(map[string]Query, len(all))
	for _, q := range all {
		m[q.Name] = q
	}
	return m
}
