package prover

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/synth"
)

// laneCircuit has len(X) independent lanes of Depth multiplications each, shaped like
// real circuits (many independent sub-computations; A and B both dense), with one
// public input that enters every lane:
//
//	v = (x + Seed)·x;  then Depth−1 times  v = v·(v + x)
type laneCircuit struct {
	Seed  frontend.Variable `gnark:",public"`
	X     []frontend.Variable
	Depth int `gnark:"-"`
}

func (c *laneCircuit) Define(api frontend.API) error {
	for _, x := range c.X {
		v := api.Mul(api.Add(x, c.Seed), x)
		for d := 1; d < c.Depth; d++ {
			v = api.Mul(v, api.Add(v, x))
		}
	}
	return nil
}

// testCircuit is a compiled circuit with a random full-size assignment.
type testCircuit struct {
	name   string
	ccs    *cs.R1CS
	full   witness.Witness
	public witness.Witness
}

func compileLanes(t testing.TB, lanes, depth int) *testCircuit {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &laneCircuit{X: make([]frontend.Variable, lanes), Depth: depth})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	tc := &testCircuit{name: fmt.Sprintf("lanes-%dx%d", lanes, depth), ccs: ccs.(*cs.R1CS)}
	tc.newWitness(t)
	return tc
}

// newWitness draws a fresh random assignment.
func (tc *testCircuit) newWitness(t testing.TB) {
	t.Helper()
	lanes := (tc.ccs.GetNbSecretVariables())
	a := &laneCircuit{X: make([]frontend.Variable, lanes), Seed: randBig(t)}
	for i := range a.X {
		a.X[i] = randBig(t)
	}
	var err error
	if tc.full, err = frontend.NewWitness(a, ecc.BLS12_381.ScalarField()); err != nil {
		t.Fatalf("witness: %v", err)
	}
	if tc.public, err = tc.full.Public(); err != nil {
		t.Fatalf("public witness: %v", err)
	}
}

func randBig(t testing.TB) *big.Int {
	var e fr.Element
	if _, err := e.SetRandom(); err != nil {
		t.Fatal(err)
	}
	return e.BigInt(new(big.Int))
}

// solve runs gnark's solver and packs the result the way synth does.
func (tc *testCircuit) solve(t testing.TB) *synth.Solution {
	t.Helper()
	sol, err := solveR1CS(tc.ccs, tc.full)
	if err != nil {
		t.Fatalf("solve: %v", err)
	}
	sol.Circuit = tc.name
	return sol
}

func solveR1CS(ccs *cs.R1CS, full witness.Witness) (*synth.Solution, error) {
	res, err := ccs.Solve(full)
	if err != nil {
		return nil, err
	}
	s := res.(*cs.R1CSSolution)
	pub, err := full.Public()
	if err != nil {
		return nil, err
	}
	pubBytes, err := pub.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return &synth.Solution{W: s.W, A: s.A, B: s.B, NbPublic: ccs.GetNbPublicVariables(), Public: pubBytes}, nil
}

// setup runs gnark's Setup and wraps the key.
func (tc *testCircuit) setup(t testing.TB) (*ProvingKey, *groth16bls.VerifyingKey) {
	t.Helper()
	var pk groth16bls.ProvingKey
	var vk groth16bls.VerifyingKey
	if err := groth16bls.Setup(tc.ccs, &pk, &vk); err != nil {
		t.Fatalf("setup: %v", err)
	}
	key, err := NewProvingKey(tc.name, &pk, tc.ccs.GetNbConstraints())
	if err != nil {
		t.Fatalf("NewProvingKey: %v", err)
	}
	return key, &vk
}

func verifyGnark(t testing.TB, vk *groth16bls.VerifyingKey, proof *groth16bls.Proof, public witness.Witness) error {
	t.Helper()
	return groth16.Verify(proof, vk, public)
}

// randomKey is a timing-only key shaped like the circuit (proofs do not verify).
func (tc *testCircuit) randomKey(t testing.TB) *ProvingKey {
	t.Helper()
	gpk, err := RandomKeyFor(tc.name, tc.ccs)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := NewProvingKey(tc.name, gpk, tc.ccs.GetNbConstraints())
	if err != nil {
		t.Fatal(err)
	}
	return pk
}
