package synth

import (
	"strings"
	"testing"
)

// gnark's debug information (an R1CS compiled with the debug tag) prints the
// assertion with values, then the call stack: only the assertion's name and the
// stack are kept, and anything that does not read plainly as one is dropped.
func TestDebugLocationKeepsNoValues(t *testing.T) {
	const v1, v2 = "11985312345678901234567890652", "35343912345678901234567890591"
	s := "[assertIsEqual] " + v1 + " == " + v2 + "\n" +
		"main.(*Circuit).Define\n\t/src/circuit/circuit.go:42\n" +
		"github.com/consensys/gnark/frontend.parseCircuit\n\t/go/pkg/mod/github.com/consensys/gnark@v0.14.0/frontend/compile.go:151\n" +
		v1 + "\n\t/x/" + v2 + ".go:7\n"
	assertion, loc := debugLocation(s)
	got := assertion + " " + strings.Join(loc, " | ")
	if assertion != "assertIsEqual" || len(loc) < 2 || loc[0] != "main.(*Circuit).Define /src/circuit/circuit.go:42" {
		t.Errorf("debugLocation = %q, %q", assertion, loc)
	}
	for _, v := range []string{v1, v2, "1198531234", "3534391234"} {
		if strings.Contains(got, v) {
			t.Errorf("debugLocation kept %s: %q", v, got)
		}
	}
	e := &UnsatisfiedError{Constraint: 1023, Assertion: assertion, Location: loc[:1], Public: []string{"Root"}}
	want := "constraint #1023 is not satisfied (assertIsEqual) at main.(*Circuit).Define /src/circuit/circuit.go:42; public inputs involved: Root"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if got := scrubValues("hint failed: 0xdeadbeef and 123456789 and 42"); got != "hint failed: … and … and 42" {
		t.Errorf("scrubValues = %q", got)
	}
}
