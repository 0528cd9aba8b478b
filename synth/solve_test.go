package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"slices"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// compiledCache shares compiled circuits between tests of this package: compiling
// SHA-256 circuits costs about a second each.
var compiledCache = NewRegistry("")

func mustCompile(t testing.TB, name string) *Compiled {
	t.Helper()
	c, err := compiledCache.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return c
}

func mustInputs(t testing.TB, name string, seed uint64) []byte {
	t.Helper()
	in, err := Inputs(name, seed)
	if err != nil {
		t.Fatalf("inputs %s: %v", name, err)
	}
	return in
}

func mustSolve(t testing.TB, c *Compiled, inputs []byte) *Solution {
	t.Helper()
	sol, err := Solve(context.Background(), c, inputs)
	if err != nil {
		t.Fatalf("solve %s: %v", c.Name, err)
	}
	return sol
}

// smallBuiltins covers every family at a size gnark's reference prover handles in
// about a second, except SHA-256: its smallest circuit has 2^15 constraints, and
// gnark's Setup takes tens of seconds for it on two cores.
var smallBuiltins = []string{
	"synthetic-k1",
	"synthetic-k5",
	"synthetic-k10",
	"merkle-poseidon2-d1-c1",
	"merkle-poseidon2-d3-c2",
}

func TestBuiltinsSolveAndGnarkProves(t *testing.T) {
	for _, name := range append(slices.Clone(smallBuiltins), "sha256-preimage-b3") {
		t.Run(name, func(t *testing.T) {
			c := mustCompile(t, name)
			if n := len(c.CS.CommitmentInfo.CommitmentIndexes()); n != 0 {
				t.Fatalf("%d commitments", n)
			}
			sol := mustSolve(t, c, mustInputs(t, name, 7))
			checkSolution(t, c, sol)
			if testing.Short() && !slices.Contains(smallBuiltins, name) {
				return
			}

			pk, vk, err := groth16.Setup(c.CS)
			if err != nil {
				t.Fatal(err)
			}
			proof, err := groth16.Prove(c.CS, pk, sol.Witness)
			if err != nil {
				t.Fatalf("gnark prove: %v", err)
			}
			pub, err := witness.New(ecc.BLS12_381.ScalarField())
			if err != nil {
				t.Fatal(err)
			}
			if err := pub.UnmarshalBinary(sol.Public); err != nil {
				t.Fatalf("Solution.Public: %v", err)
			}
			if err := groth16.Verify(proof, vk, pub); err != nil {
				t.Fatalf("gnark verify with Solution.Public: %v", err)
			}
		})
	}
}

// checkSolution checks the shape of a solution and that A·B = C holds row by row, C
// evaluated from the circuit's own output side on the solution's wires (the solution
// keeps no C: the provers make it as A∘B).
// evalLE is the linear expression's value on the wires w.
func evalLE(c *Compiled, le constraint.LinearExpression, w []fr.Element) fr.Element {
	var sum, t fr.Element
	for _, term := range le {
		t.Mul(&c.CS.Coefficients[term.CID], &w[term.VID])
		sum.Add(&sum, &t)
	}
	return sum
}

func checkSolution(t *testing.T, c *Compiled, sol *Solution) {
	t.Helper()
	if len(sol.W) != c.NbWires() || len(sol.A) != c.NbConstraints() || len(sol.B) != c.NbConstraints() {
		t.Fatalf("lengths W=%d A=%d B=%d, want %d wires and %d constraints", len(sol.W), len(sol.A), len(sol.B), c.NbWires(), c.NbConstraints())
	}
	if !sol.W[0].IsOne() {
		t.Fatalf("W[0] = %s, want the constant one", sol.W[0].String())
	}
	var ab fr.Element
	for i, r := range c.CS.GetR1Cs() {
		o := evalLE(c, r.O, sol.W)
		if !ab.Mul(&sol.A[i], &sol.B[i]).Equal(&o) {
			t.Fatalf("constraint %d: A·B != C", i)
		}
		if i < 64 { // A and B are the circuit's sides too
			if a, b := evalLE(c, r.L, sol.W), evalLE(c, r.R, sol.W); !a.Equal(&sol.A[i]) || !b.Equal(&sol.B[i]) {
				t.Fatalf("constraint %d: A or B is not the circuit's side on W", i)
			}
		}
	}
	if sol.NbPublic != c.NbPublic() || sol.Circuit != c.Name {
		t.Fatalf("NbPublic %d Circuit %q", sol.NbPublic, sol.Circuit)
	}
	pubW, err := sol.Witness.Public()
	if err != nil {
		t.Fatal(err)
	}
	want, err := pubW.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sol.Public, want) {
		t.Fatalf("Solution.Public differs from gnark's public witness encoding")
	}
	vec := sol.Witness.Vector().(fr.Vector)
	for i := range vec { // the witness is W without the constant wire
		if !vec[i].Equal(&sol.W[i+1]) {
			t.Fatalf("W[%d] is not input %d", i+1, i)
		}
	}
}

func TestInputsDeterministic(t *testing.T) {
	for _, name := range []string{"synthetic-k8", "merkle-poseidon2-d6-c2", "sha256-preimage-b10", "porep-k16"} {
		a, b, other := mustInputs(t, name, 1), mustInputs(t, name, 1), mustInputs(t, name, 2)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: seed 1 gave two different inputs", name)
		}
		if bytes.Equal(a, other) {
			t.Errorf("%s: seeds 1 and 2 gave the same inputs", name)
		}
		if !json.Valid(a) {
			t.Errorf("%s: invalid JSON:\n%s", name, a)
		}
	}
}

func TestSyntheticShape(t *testing.T) {
	for _, k := range []int{1, 2, 6, 7, 12, 13, 16} {
		name := "synthetic-k" + itoa(k)
		c := mustCompile(t, name)
		if c.NbConstraints() != 1<<k {
			t.Errorf("%s: %d constraints, want exactly %d", name, c.NbConstraints(), 1<<k)
		}
		// Independent lanes: the solver sees few, wide dependency levels.
		if k >= 7 {
			levels := c.CS.Levels
			if len(levels) > syntheticSteps+4 {
				t.Errorf("%s: %d dependency levels, want at most %d", name, len(levels), syntheticSteps+4)
			}
			if w := len(levels[1]); w != 1<<(k-6) {
				t.Errorf("%s: level width %d, want %d", name, w, 1<<(k-6))
			}
		}
	}
	// Witness values are full-size field elements, not small integers.
	sol := mustSolve(t, mustCompile(t, "synthetic-k10"), mustInputs(t, "synthetic-k10", 3))
	small := 0
	for i := range sol.W {
		if sol.W[i].BitLen() < 200 {
			small++
		}
	}
	if small > 2 {
		t.Errorf("%d of %d wires have fewer than 200 bits", small, len(sol.W))
	}
}

// TestSHA256MatchesNative solves the circuit on digests from crypto/sha256 across
// the padding boundaries (55/56 bytes: length field fits or spills; 64: exact block).
func TestSHA256MatchesNative(t *testing.T) {
	lengths := []int{1, 55, 56, 64}
	if !testing.Short() {
		lengths = append(lengths, 119, 128)
	}
	for _, n := range lengths {
		name := "sha256-preimage-b" + itoa(n)
		c := mustCompile(t, name)
		pre := make([]byte, n)
		for i := range pre {
			pre[i] = byte(251*i + 17)
		}
		sum := sha256.Sum256(pre)
		in := map[string]any{
			"Digest.0": "0x" + new(big.Int).SetBytes(sum[:16]).Text(16),
			"Digest.1": new(big.Int).SetBytes(sum[16:]).String(),
		}
		ints := make([]int, n)
		for i, b := range pre {
			ints[i] = int(b)
		}
		in["Preimage"] = ints // nested array of JSON numbers
		data, _ := json.Marshal(in)
		mustSolve(t, c, data)

		// One flipped digest bit must be an unsatisfied constraint.
		sum[31] ^= 1
		in["Digest.1"] = new(big.Int).SetBytes(sum[16:]).String()
		data, _ = json.Marshal(in)
		_, err := Solve(context.Background(), c, data)
		if !IsBadInput(err) {
			t.Fatalf("%s: wrong digest: got %v, want an InputError", name, err)
		}
	}
}

// poseidonCircuit exposes the gadget's Compress for comparison with the native one.
type poseidonCircuit struct {
	L, R, Out frontend.Variable
}

func (c *poseidonCircuit) Define(api frontend.API) error {
	h, err := newGadgetCompressor(api)
	if err != nil {
		return err
	}
	api.AssertIsEqual(h.Compress(c.L, c.R), c.Out)
	return nil
}

func TestPoseidon2GadgetMatchesNative(t *testing.T) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &poseidonCircuit{})
	if err != nil {
		t.Fatal(err)
	}
	native := newNativeCompressor()
	var l, r fr.Element
	for i := range 4 {
		l.SetUint64(uint64(i))
		if i > 1 {
			l.SetRandom()
			r.SetRandom()
		}
		out := native.compress(l, r)
		for _, wrong := range []bool{false, true} {
			o := out
			if wrong {
				o.Add(&o, &l).Add(&o, new(fr.Element).SetOne())
			}
			w, err := frontend.NewWitness(&poseidonCircuit{L: l.BigInt(new(big.Int)), R: r.BigInt(new(big.Int)), Out: o.BigInt(new(big.Int))}, ecc.BLS12_381.ScalarField())
			if err != nil {
				t.Fatal(err)
			}
			_, err = ccs.Solve(w)
			if (err == nil) == wrong {
				t.Fatalf("compress(%s, %s): wrong=%v, solver error %v", l.String(), r.String(), wrong, err)
			}
		}
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }
