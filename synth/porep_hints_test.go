package synth

import (
	"bytes"
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

// TestPorepEncodingUnchanged pins porep-k16's and porep-k18's whole gnark encoding,
// coefficient IDs and instruction order included, as built when every bit check asked
// gnark for its 1 − x: assertBit now builds 1 − x from the coefficient IDs gnark gave
// it before, and must give the same bytes. (A gnark version that encodes differently
// changes these digests too; the cache file's name carries gnark's version.)
func TestPorepEncodingUnchanged(t *testing.T) {
	for name, want := range map[string]string{
		"porep-k16": "88f82c89dee7319f2bf0ac16c1c9c80a94b5da3256bfc4e36c68170525239a2b",
		"porep-k18": "3cdd995746cc671348ffcf71202df1d1997de0645d2c1fdb61528ec4f3744c22",
	} {
		var b bytes.Buffer
		if _, err := mustCompile(t, name).CS.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b.Bytes())); got != want {
			t.Errorf("%s's encoding has digest %s, want %s", name, got, want)
		}
	}
}
