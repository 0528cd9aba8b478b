package synth

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// constraintDigest is a SHA-256 over a compiled system's variable counts and its
// constraints as gnark prints them: two systems with the same digest have the same
// wires and constraints, so the same keys, whatever hints compute their values.
func constraintDigest(c *Compiled) string {
	h := sha256.New()
	i, s, p := c.CS.GetNbVariables()
	fmt.Fprintf(h, "%d/%d/%d\n", i, s, p)
	for _, r := range c.CS.GetR1Cs() {
		fmt.Fprintln(h, r.String(c.CS))
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestPorepConstraintsUnchanged pins porep-k16's constraint system: a built-in's name
// identifies its constraints exactly, and keys made for it must keep proving. The
// digest is the one of the labelling as first built (a hint call per gate word); a
// round's gates now come from one hint call, whose outputs take the same wires.
func TestPorepConstraintsUnchanged(t *testing.T) {
	const want = "83f3d239b391f6dd90a6c5d4d0ef89b89a03569d6bc7155cabe394eb6955bcb9"
	if got := constraintDigest(mustCompile(t, "porep-k16")); got != want {
		t.Errorf("porep-k16's constraints have digest %s, want %s: its keys would no longer prove", got, want)
	}
}
