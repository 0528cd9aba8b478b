package prover

import (
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// ProvingKey is gnark's BLS12-381 proving key plus the shape facts every backend needs.
// Circuits with gnark commitments are rejected before a ProvingKey is built, so the
// G1.K bases pair exactly with the wires W[NbPublic:].
type ProvingKey struct {
	Circuit string
	PK      *groth16bls.ProvingKey

	NbWires       int // len(W)
	NbPublic      int // public wires including the constant one wire
	NbConstraints int // len(A) == len(B) == len(C) of a Solution
}

// DomainSize is the NTT size used for H (a power of two ≥ NbConstraints).
func (k *ProvingKey) DomainSize() int { return int(k.PK.Domain.Cardinality) }
