package synth

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
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

// porepRoundFieldHint, which the block solver calls, gives porepRoundHint's outputs
// (which gnark's solver calls) and refuses what it refuses: bits of 0 and 1, nonzero
// values that are not bits (read as 1 by both), round constants up to 2^32 − 1 and past
// it, and wrong lengths.
func TestPorepRoundFieldHint(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	q := fr.Modulus()
	run := func(in []fr.Element, nOut int) ([]fr.Element, error, []*big.Int, error) {
		bin := make([]*big.Int, len(in))
		for i := range in {
			bin[i] = in[i].BigInt(new(big.Int))
		}
		bout := make([]*big.Int, nOut)
		for i := range bout {
			bout[i] = new(big.Int)
		}
		fout := make([]fr.Element, nOut)
		return fout, porepRoundFieldHint(in, fout), bout, porepRoundHint(q, bin, bout)
	}
	input := func(k uint64, junk bool) []fr.Element {
		in := make([]fr.Element, 1+9*32)
		in[0].SetUint64(k)
		for i := 1; i < len(in); i++ {
			in[i].SetUint64(rng.Uint64() & 1)
			if junk && rng.IntN(8) == 0 {
				in[i].MustSetRandom()
			}
		}
		return in
	}
	for n, c := range []struct {
		in    []fr.Element
		nOut  int
		fails bool
	}{
		{input(0, false), roundWords * 32, false},
		{input(1<<32-1, false), roundWords * 32, false},
		{input(uint64(rng.Uint32()), true), roundWords * 32, false},
		{input(uint64(rng.Uint32()), true), roundWords * 32, false},
		{input(1<<32, false), roundWords * 32, true},
		{input(0, false)[:9*32], roundWords * 32, true},
		{input(0, false), roundWords*32 - 1, true},
	} {
		if n == 3 {
			c.in[0].SetInt64(-1) // p − 1: no round constant
			c.fails = true
		}
		fout, ferr, bout, berr := run(c.in, c.nOut)
		if (ferr != nil) != c.fails || (berr != nil) != c.fails {
			t.Fatalf("case %d: field form error %v, big.Int form %v; want failure %v", n, ferr, berr, c.fails)
		}
		if c.fails {
			continue
		}
		for i := range fout {
			var want fr.Element
			want.SetBigInt(bout[i])
			if !fout[i].Equal(&want) {
				t.Fatalf("case %d: output %d is %s, the big.Int form's %s", n, i, fout[i].String(), want.String())
			}
		}
	}
}
