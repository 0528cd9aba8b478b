package pgtest

import (
	"fmt"
	"os"
)

// ExampleTB stands in for a test in Example functions: a failure panics, which fails
// the example, and Close runs the cleanups (dropping databases and roles) that the end
// of a test would. Logs go to stderr, so they never mix with an example's output.
//
//	tb := pgtest.NewExampleTB()
//	defer tb.Close()
//	db := pgtest.New(tb)
type ExampleTB struct {
	cleanups []func()
}

// NewExampleTB returns an ExampleTB with nothing to clean up yet.
func NewExampleTB() *ExampleTB { return &ExampleTB{} }

func (e *ExampleTB) Helper()                           {}
func (e *ExampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (e *ExampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (e *ExampleTB) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (e *ExampleTB) Cleanup(f func())                  { e.cleanups = append(e.cleanups, f) }

// Close runs the cleanups, the latest first, as testing does. Deferred, it also runs
// when the example panics, so a failed example leaves no database behind.
func (e *ExampleTB) Close() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.cleanups = nil
}
