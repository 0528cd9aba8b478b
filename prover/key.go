package prover

import (
	"fmt"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"

	"github.com/cuzk/cuzk/synth"
)

// ProvingKey is gnark's BLS12-381 proving key plus the shape facts every backend needs.
// Circuits with gnark commitments are rejected before a ProvingKey is built, so the
// G1.K bases pair exactly with the wires W[NbPublic:].
//
// Build it with NewProvingKey: it validates the key and lays the K and Z bases out in
// one slice (KZ), so that backends compute Σ K·w_priv + Σ Z·h as a single MSM.
type ProvingKey struct {
	Circuit string
	PK      *groth16bls.ProvingKey

	NbWires       int // len(W)
	NbPublic      int // public wires including the constant one wire
	NbConstraints int // len(A) == len(B) == len(C) of a Solution

	// KZ is PK.G1.K followed by PK.G1.Z in one allocation; PK.G1.K and PK.G1.Z are
	// re-sliced to alias it, so the key is not held twice and gnark's own prover still
	// works on PK unchanged.
	KZ []bls12381.G1Affine
}

// DomainSize is the NTT size used for H (a power of two ≥ NbConstraints).
func (k *ProvingKey) DomainSize() int { return int(k.PK.Domain.Cardinality) }

// NbPrivate is the number of wires paired with the G1.K bases.
func (k *ProvingKey) NbPrivate() int { return k.NbWires - k.NbPublic }

// CommitmentError reports a circuit that uses gnark's BSB22 commitments
// (api.Commit): its proofs need commitment terms that cuzk's prover does not compute.
type CommitmentError struct{ Circuit string }

func (e *CommitmentError) Error() string {
	return fmt.Sprintf("circuit %s uses gnark commitments, which cuzk does not support", e.Circuit)
}

// NewProvingKey validates pk (no commitments, consistent sizes) and returns it with
// its shape. nbConstraints is the R1CS's constraint count (the key does not record it).
// The first call on a gnark key moves its K and Z bases into one allocation (same
// values; pk.G1.K and pk.G1.Z then alias KZ), so it must not run while another
// goroutine uses pk; later calls on the same pk only read it.
func NewProvingKey(circuit string, pk *groth16bls.ProvingKey, nbConstraints int) (*ProvingKey, error) {
	if len(pk.CommitmentKeys) != 0 {
		return nil, &CommitmentError{Circuit: circuit}
	}
	nbWires := len(pk.InfinityA)
	n := int(pk.Domain.Cardinality)
	switch {
	case nbWires == 0 || len(pk.InfinityB) != nbWires:
		return nil, fmt.Errorf("proving key for %s: infinity markers: %d A, %d B", circuit, nbWires, len(pk.InfinityB))
	case len(pk.G1.A) != nbWires-int(pk.NbInfinityA):
		return nil, fmt.Errorf("proving key for %s: %d G1.A bases, want %d", circuit, len(pk.G1.A), nbWires-int(pk.NbInfinityA))
	case len(pk.G1.B) != nbWires-int(pk.NbInfinityB) || len(pk.G2.B) != len(pk.G1.B):
		return nil, fmt.Errorf("proving key for %s: %d G1.B and %d G2.B bases, want %d", circuit, len(pk.G1.B), len(pk.G2.B), nbWires-int(pk.NbInfinityB))
	case len(pk.G1.K) >= nbWires:
		return nil, fmt.Errorf("proving key for %s: %d G1.K bases for %d wires", circuit, len(pk.G1.K), nbWires)
	case n == 0 || n&(n-1) != 0 || len(pk.G1.Z) != n-1:
		return nil, fmt.Errorf("proving key for %s: domain %d with %d G1.Z bases", circuit, n, len(pk.G1.Z))
	case nbConstraints < 1 || nbConstraints > n:
		return nil, fmt.Errorf("proving key for %s: %d constraints do not fit domain %d", circuit, nbConstraints, n)
	}
	if cnt := countTrue(pk.InfinityA); cnt != int(pk.NbInfinityA) {
		return nil, fmt.Errorf("proving key for %s: %d A infinity markers set, header says %d", circuit, cnt, pk.NbInfinityA)
	}
	if cnt := countTrue(pk.InfinityB); cnt != int(pk.NbInfinityB) {
		return nil, fmt.Errorf("proving key for %s: %d B infinity markers set, header says %d", circuit, cnt, pk.NbInfinityB)
	}

	nk, nz := len(pk.G1.K), len(pk.G1.Z)
	var kz []bls12381.G1Affine
	switch {
	case nz == 0:
		kz = pk.G1.K
	case cap(pk.G1.K) >= nk+nz && &pk.G1.K[:nk+1][nk] == &pk.G1.Z[0]:
		kz = pk.G1.K[:nk+nz] // already adjacent (a key seen before, RandomKey): no write
	default:
		kz = make([]bls12381.G1Affine, nk+nz)
		copy(kz, pk.G1.K)
		copy(kz[nk:], pk.G1.Z)
		pk.G1.K = kz[:nk] // capacity kept: it is how a later call sees the adjacency
		pk.G1.Z = kz[nk:]
	}

	return &ProvingKey{
		Circuit:       circuit,
		PK:            pk,
		NbWires:       nbWires,
		NbPublic:      nbWires - nk,
		NbConstraints: nbConstraints,
		KZ:            kz,
	}, nil
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

// CheckNoCommitments rejects constraint systems that use gnark's BSB22 commitments.
func CheckNoCommitments(circuit string, ccs constraint.ConstraintSystem) error {
	if c := ccs.GetCommitments(); c != nil && len(c.CommitmentIndexes()) > 0 {
		return &CommitmentError{Circuit: circuit}
	}
	return nil
}

// CheckSolution reports whether sol fits the key: wire, public-wire and constraint
// counts, with A and B still present.
func (k *ProvingKey) CheckSolution(sol *synth.Solution) error {
	switch {
	case sol == nil:
		return fmt.Errorf("nil solution")
	case len(sol.W) != k.NbWires:
		return fmt.Errorf("%d wires, key has %d", len(sol.W), k.NbWires)
	case sol.NbPublic != k.NbPublic:
		return fmt.Errorf("%d public wires, key has %d", sol.NbPublic, k.NbPublic)
	case len(sol.A) != k.NbConstraints || len(sol.B) != k.NbConstraints:
		return fmt.Errorf("constraint evaluations of length %d/%d, key has %d constraints (released already?)",
			len(sol.A), len(sol.B), k.NbConstraints)
	}
	return nil
}

// HostBytes is the host memory the key's bases and infinity markers hold: what a
// host copy of the key costs, for budgeting.
func (k *ProvingKey) HostBytes() int64 {
	const g1, g2 = 96, 192
	pk := k.PK
	return int64(len(pk.G1.A)+len(pk.G1.B)+len(k.KZ))*g1 + int64(len(pk.G2.B))*g2 +
		int64(len(pk.InfinityA)+len(pk.InfinityB))
}

// Shell is the key without its bases and infinity markers: what proving needs once a
// backend holds the bases itself (shape, domain, α/β/δ), so that the host copy of the
// bases can be freed while the key stays resident.
func (k *ProvingKey) Shell() *ProvingKey {
	pk := *k.PK
	pk.G1.A, pk.G1.B, pk.G1.K, pk.G1.Z, pk.G2.B = nil, nil, nil, nil, nil
	pk.InfinityA, pk.InfinityB = nil, nil
	s := *k
	s.PK, s.KZ = &pk, nil
	return &s
}
