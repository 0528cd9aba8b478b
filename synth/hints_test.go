package synth

import (
	"strings"
	"testing"

	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/std"
)

// TestStandardHintsCoverGnarkStd: every hint gnark's std.RegisterHints registers is
// registered in a binary that links only this package, through standardHints or the
// init of a package standardHints imports.
func TestStandardHintsCoverGnarkStd(t *testing.T) {
	ours := map[solver.HintID]bool{}
	for _, h := range standardHints() {
		ours[solver.GetHintID(h)] = true
	}
	std.RegisterHints() // in this test binary, on top of what synth registered
	n := 0
	for _, h := range solver.GetRegisteredHints() {
		name := solver.GetHintName(h)
		if !strings.HasPrefix(name, "github.com/consensys/gnark/std/") {
			continue
		}
		n++
		if !ours[solver.GetHintID(h)] && !strings.Contains(name, "/std/internal/") {
			t.Errorf("gnark's std registers hint %s, synth's standardHints does not", name)
		}
	}
	if n < 50 {
		t.Errorf("only %d std hints registered; expected gnark's whole list", n)
	}
}
