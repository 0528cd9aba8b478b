package synth

import (
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
)

// Solution is a solved witness ready for proving: the full wire assignment W and the
// evaluations of the R1CS matrices A and B on it (A·W, B·W, one entry per constraint).
// C·W is not kept: in a satisfied system it is A·W ∘ B·W entry by entry, so the
// provers make it where they compute H (at 2^27 constraints it would be 4 GiB per
// partition held from synthesis to the prover). A and B are consumed by the H
// computation; once it has run they may be released (nil) while W is still needed for
// the MSMs.
type Solution struct {
	Circuit string

	W    []fr.Element // all wires: [1, public..., secret/internal...]
	A, B []fr.Element // len == number of constraints

	NbPublic int    // public wires including the constant one wire
	Public   []byte // gnark witness.MarshalBinary of the public part (no constant wire)

	// Witness is gnark's full witness the solution was solved from: what gnark's own
	// groth16.Prove takes, for reference runs on the same input.
	Witness witness.Witness
}

// ReleaseAB drops the constraint evaluations once the prover has consumed them.
func (s *Solution) ReleaseAB() { s.A, s.B = nil, nil }
