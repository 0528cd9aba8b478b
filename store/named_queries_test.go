package store

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/sql/queries"
)

// usedQueries are the names this package passes to queries.SQL, by file; a call with
// anything but a string literal is reported, since its name cannot be checked.
func usedQueries(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "SQL" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "queries" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: queries.SQL with a name that is not a string literal", fset.Position(call.Pos()))
				return true
			}
			name, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			used[name] = fset.Position(call.Pos()).String()
			return true
		})
	}
	return used
}

// Every named query in sql/queries is used here, every one used here exists, and
// each prepares on a migrated database: its syntax, tables, columns, functions and
// the types of its parameters are what the schema has.
func TestNamedQueries(t *testing.T) {
	all, err := queries.All()
	if err != nil {
		t.Fatal(err)
	}
	used := usedQueries(t)
	defined := map[string]bool{}
	for _, q := range all {
		defined[q.Name] = true
		if _, ok := used[q.Name]; !ok {
			t.Errorf("sql/queries/%s: query %s is not used by package store", q.File, q.Name)
		}
	}
	for name, at := range used {
		if !defined[name] {
			t.Errorf("%s: query %s is in no file of sql/queries", at, name)
		}
	}

	db := pgtest.New(t)
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range all {
		if _, err := conn.Conn().Prepare(ctx, "", q.SQL); err != nil {
			t.Errorf("sql/queries/%s: query %s does not prepare: %v", q.File, q.Name, err)
		}
	}
}

// The queries that spell out the phase columns list them as package phase does.
func TestQueriesListPhasesInOrder(t *testing.T) {
	var all, afterQueue []string
	var values []string
	for _, p := range phase.All() {
		all = append(all, p.Column)
		if p.Name != phase.Queue {
			afterQueue = append(afterQueue, p.Column)
		}
		values = append(values, "'"+p.Name+"' "+strconv.Itoa(p.Ord)+" "+p.Column)
	}
	col := `([a-z0-9_]+_ms)`
	checks := []struct {
		query string
		re    *regexp.Regexp // each match's groups, joined by spaces, is one item
		want  []string
	}{
		{"FinishAttempt", regexp.MustCompile(col + ` = \$\d+`), afterQueue},
		{"PeriodTimings", regexp.MustCompile(`avg\(` + col + `\)`), all},
		{"BuildSamples", regexp.MustCompile(`\b` + col + `\b`), all},
		{"PhaseStats", regexp.MustCompile(`\(('[a-z0-9_]+'), (\d+), r\.` + col + `\)`), values},
	}
	for _, c := range checks {
		var got []string
		for _, m := range c.re.FindAllStringSubmatch(stripComments(queries.SQL(c.query)), -1) {
			got = append(got, strings.Join(m[1:], " "))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("query %s lists the phases\n %v\nwant\n %v", c.query, got, c.want)
		}
	}
	// RecordPartition's columns are in its column list, their values numbered in order.
	cols := regexp.MustCompile(`(?s)INSERT INTO cuzk.partition_attempts \((.*?)\)`).FindStringSubmatch(queries.SQL("RecordPartition"))
	var got []string
	for _, c := range strings.Split(cols[1], ",") {
		if c = strings.TrimSpace(c); strings.HasSuffix(c, "_ms") {
			got = append(got, c)
		}
	}
	if !slices.Equal(got, afterQueue) {
		t.Errorf("query RecordPartition lists the phases\n %v\nwant\n %v", got, afterQueue)
	}
}

// stripComments drops the -- comment lines of a query.
func stripComments(sql string) string {
	var keep []string
	for _, l := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
