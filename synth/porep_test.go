package synth

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// porepSizes are the sizes compiled by the tests: 16 and 17 solve in seconds.
func porepSizes() []int {
	if testing.Short() {
		return []int{16}
	}
	return []int{16, 17}
}

// TestPorepShape checks the sizing (the constraint count the family computes is the
// compiled one, just under 2^K), the inputs (three public, one challenge per 2^16
// constraints) and the share of private variables.
func TestPorepShape(t *testing.T) {
	for _, k := range porepSizes() {
		name := "porep-k" + itoa(k)
		c := mustCompile(t, name)
		n := c.NbConstraints()
		if n != porepConstraints(k) {
			t.Errorf("%s: %d constraints, sizing counts %d", name, n, porepConstraints(k))
		}
		if n >= 1<<k || n < 1<<k-porepRoundConstraints {
			t.Errorf("%s: %d constraints, want in [2^%d − %d, 2^%d)", name, n, k, porepRoundConstraints, k)
		}
		challenges := 1 << (k - porepChallengeLog)
		if c.NbPublic() != 4 || c.NbSecret() != challenges*(porepParents+2+porepDepth) {
			t.Errorf("%s: %d public, %d secret inputs", name, c.NbPublic(), c.NbSecret())
		}
		internal, secret, _ := c.CS.GetNbVariables()
		ratio := float64(internal+secret) / float64(n)
		t.Logf("%s: %d constraints, %d private variables (%.3f per constraint), %d dependency levels", name, n, internal+secret, ratio, len(c.CS.Levels))
		if ratio < 0.2 || ratio > 0.3 {
			t.Errorf("%s: %.3f private variables per constraint, want 0.2-0.3", name, ratio)
		}
	}
	// The sizing's count for one Poseidon2 compression.
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &poseidonCircuit{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ccs.GetNbConstraints() - 1; got != poseidon2Constraints {
		t.Errorf("a Poseidon2 compression has %d constraints, sizing counts %d", got, poseidon2Constraints)
	}
}

// TestPorepSolve solves inputs from Inputs (computed natively: the labelling's
// native twin must agree with the gates bit for bit) and checks that the witness is
// mostly bits.
func TestPorepSolve(t *testing.T) {
	for _, k := range porepSizes() {
		name := "porep-k" + itoa(k)
		c := mustCompile(t, name)
		sol := mustSolve(t, c, mustInputs(t, name, 3))
		checkSolution(t, c, sol)
		v := CountValues(sol.W)
		bitShare := float64(v.Zero+v.One) / float64(len(sol.W))
		t.Logf("%s: %d wires: %d zero, %d one, %d small, %d full-size", name, len(sol.W), v.Zero, v.One, v.Small, v.Full)
		if bitShare < 0.8 {
			t.Errorf("%s: %.2f of the wires are 0 or 1, want at least 0.8", name, bitShare)
		}
	}
}

// TestPorepRefusesWrongInputs: a wrong public root, a changed parent label (its
// label no longer hashes to the committed leaf) and a seed of more than 254 bits are
// each an unsatisfied constraint, told as an InputError.
func TestPorepRefusesWrongInputs(t *testing.T) {
	const name = "porep-k16"
	c := mustCompile(t, name)
	var in map[string]string
	if err := json.Unmarshal(mustInputs(t, name, 4), &in); err != nil {
		t.Fatal(err)
	}
	bump := func(key string, by *big.Int) map[string]string {
		v, ok := new(big.Int).SetString(in[key], 0)
		if !ok {
			t.Fatalf("%s = %q", key, in[key])
		}
		out := map[string]string{}
		for k, x := range in {
			out[k] = x
		}
		out[key] = "0x" + v.Add(v, by).Text(16)
		return out
	}
	one := big.NewInt(1)
	parent0, _ := new(big.Int).SetString(in["Parents.0.0"], 0)
	for what, inputs := range map[string]map[string]string{
		"CommR + 1":           bump("CommR", one),
		"CommD + 1":           bump("CommD", one),
		"Parents.0.2 + 1":     bump("Parents.0.2", one),
		"Seed + 2^254":        bump("Seed", new(big.Int).Lsh(one, porepLabelBits)),
		"Index.0 + 2^16":      bump("Index.0", new(big.Int).Lsh(one, porepDepth)),
		"Path.0.5 + 1":        bump("Path.0.5", one),
		"Data.0 + 1":          bump("Data.0", one),
		"Parents.0.0 = 2^254": bump("Parents.0.0", new(big.Int).Sub(new(big.Int).Lsh(one, porepLabelBits), parent0)),
	} {
		data, err := json.Marshal(inputs)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Solve(context.Background(), c, data)
		var unsat *UnsatisfiedError
		if !IsBadInput(err) || !errors.As(err, &unsat) {
			t.Errorf("%s: got %v, want an unsatisfied constraint", what, err)
			continue
		}
		t.Logf("%s: %v", what, err)
	}
}
