package prover

import (
	"fmt"
	"math/big"
	"runtime"
	"sync"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// RandomKey returns a proving key of the given shape whose bases are random distinct
// points. It is for timing only: proofs made with it do NOT verify (there is no
// verifying key and no trapdoor relation between the bases). It takes about a second
// per million points, where gnark's Setup takes minutes at 2^22. Every wire has A and
// B bases (no infinity); use RandomKeyFor to mirror a circuit's sparsity.
func RandomKey(nbConstraints, nbWires, nbPublic int) (*groth16bls.ProvingKey, error) {
	if nbConstraints < 1 || nbPublic < 1 || nbWires <= nbPublic {
		return nil, fmt.Errorf("random key: invalid shape: %d constraints, %d wires, %d public", nbConstraints, nbWires, nbPublic)
	}
	return randomKey(nbConstraints, nbPublic, make([]bool, nbWires), make([]bool, nbWires))
}

// RandomKeyFor is RandomKey shaped exactly like ccs, including which wires have no A
// or B base, so MSM sizes match what gnark's Setup would produce. Timing only: proofs
// made with it do NOT verify.
func RandomKeyFor(name string, ccs constraint.ConstraintSystem) (*groth16bls.ProvingKey, error) {
	r1, ok := ccs.(*cs.R1CS)
	if !ok {
		return nil, fmt.Errorf("random key for %s: need a BLS12-381 R1CS, got %T", name, ccs)
	}
	if err := CheckNoCommitments(name, ccs); err != nil {
		return nil, err
	}
	infA, infB := infinityOf(r1)
	return randomKey(ccs.GetNbConstraints(), ccs.GetNbPublicVariables(), infA, infB)
}

func randomKey(nbConstraints, nbPublic int, infA, infB []bool) (*groth16bls.ProvingKey, error) {
	nbWires := len(infA)
	domain := fft.NewDomain(uint64(nbConstraints))
	pk := &groth16bls.ProvingKey{Domain: *domain, InfinityA: infA, InfinityB: infB}
	pk.NbInfinityA = uint64(countTrue(infA))
	pk.NbInfinityB = uint64(countTrue(infB))
	nA, nB := nbWires-int(pk.NbInfinityA), nbWires-int(pk.NbInfinityB)
	nK, nZ := nbWires-nbPublic, int(domain.Cardinality)-1

	// One run of distinct points, cut into the key's slices (K and Z adjacent, as
	// NewProvingKey lays them out).
	g1, err := randomG1(3 + nA + nB + nK + nZ)
	if err != nil {
		return nil, fmt.Errorf("random key: %w", err)
	}
	pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta = g1[0], g1[1], g1[2]
	g1 = g1[3:]
	pk.G1.A, g1 = g1[:nA:nA], g1[nA:]
	pk.G1.B, g1 = g1[:nB:nB], g1[nB:]
	pk.G1.K, pk.G1.Z = g1[:nK], g1[nK:]
	g2, err := randomG2(2 + nB)
	if err != nil {
		return nil, fmt.Errorf("random key: %w", err)
	}
	pk.G2.Beta, pk.G2.Delta, pk.G2.B = g2[0], g2[1], g2[2:]
	return pk, nil
}

// randomG1 returns n distinct points P + i·Q for random P, Q: one mixed addition per
// point instead of a scalar multiplication, computed in parallel chunks.
func randomG1(n int) ([]bls12381.G1Affine, error) {
	var p, q bls12381.G1Affine
	for _, pt := range []*bls12381.G1Affine{&p, &q} {
		k, err := randomScalar()
		if err != nil {
			return nil, err
		}
		pt.ScalarMultiplicationBase(k)
	}
	out := make([]bls12381.G1Affine, n)
	inChunks(n, func(start, end int) {
		var cur bls12381.G1Jac
		cur.FromAffine(&q)
		cur.ScalarMultiplication(&cur, big.NewInt(int64(start)))
		cur.AddMixed(&p)
		jac := make([]bls12381.G1Jac, end-start)
		for i := range jac {
			jac[i] = cur
			cur.AddMixed(&q)
		}
		copy(out[start:end], bls12381.BatchJacobianToAffineG1(jac))
	})
	return out, nil
}

// randomG2 is randomG1 on G2, with its own batch inversion (gnark-crypto has none
// exported for G2).
func randomG2(n int) ([]bls12381.G2Affine, error) {
	var p, q bls12381.G2Affine
	for _, pt := range []*bls12381.G2Affine{&p, &q} {
		k, err := randomScalar()
		if err != nil {
			return nil, err
		}
		pt.ScalarMultiplicationBase(k)
	}
	out := make([]bls12381.G2Affine, n)
	inChunks(n, func(start, end int) {
		var cur bls12381.G2Jac
		cur.FromAffine(&q)
		cur.ScalarMultiplication(&cur, big.NewInt(int64(start)))
		cur.AddMixed(&p)
		jac := make([]bls12381.G2Jac, end-start)
		for i := range jac {
			jac[i] = cur
			cur.AddMixed(&q)
		}
		// Montgomery batch inversion of the Z coordinates (none is zero: P + i·Q for
		// random P, Q is never infinity in practice; such a point would stay infinity).
		acc := make([]bls12381.G2Jac, len(jac)) // acc[i].Z = Π_{j<i} Z_j
		var prod, inv, zinv, zinv2 bls12381.G2Jac
		prod.Z.SetOne()
		for i := range jac {
			acc[i].Z = prod.Z
			if !jac[i].Z.IsZero() {
				prod.Z.Mul(&prod.Z, &jac[i].Z)
			}
		}
		inv.Z.Inverse(&prod.Z)
		for i := len(jac) - 1; i >= 0; i-- {
			if jac[i].Z.IsZero() {
				continue
			}
			zinv.Z.Mul(&inv.Z, &acc[i].Z)
			inv.Z.Mul(&inv.Z, &jac[i].Z)
			zinv2.Z.Square(&zinv.Z)
			o := &out[start+i]
			o.X.Mul(&jac[i].X, &zinv2.Z)
			o.Y.Mul(&jac[i].Y, &zinv2.Z).Mul(&o.Y, &zinv.Z)
		}
	})
	return out, nil
}

func randomScalar() (*big.Int, error) {
	var k fr.Element
	if _, err := k.SetRandom(); err != nil {
		return nil, fmt.Errorf("draw random scalar: %w", err)
	}
	return k.BigInt(new(big.Int)), nil
}

// inChunks runs f over [0, n) in chunks on all cores.
func inChunks(n int, f func(start, end int)) {
	const chunk = 1 << 12
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for start := 0; start < n; start += chunk {
		wg.Add(1)
		sem <- struct{}{}
		go func(start, end int) {
			defer func() { <-sem; wg.Done() }()
			f(start, end)
		}(start, min(start+chunk, n))
	}
	wg.Wait()
}

// infinityOf returns, per wire, whether it appears in no A (L) or no B (R) term of
// any constraint: exactly the wires whose Setup bases are the point at infinity.
func infinityOf(r1 *cs.R1CS) (infA, infB []bool) {
	n := nbWiresOf(r1)
	infA, infB = make([]bool, n), make([]bool, n)
	for i := range infA {
		infA[i], infB[i] = true, true
	}
	it := r1.GetR1CIterator()
	for c := it.Next(); c != nil; c = it.Next() {
		for _, t := range c.L {
			infA[t.WireID()] = false
		}
		for _, t := range c.R {
			infB[t.WireID()] = false
		}
	}
	return infA, infB
}

func nbWiresOf(ccs constraint.ConstraintSystem) int {
	return ccs.GetNbInternalVariables() + ccs.GetNbPublicVariables() + ccs.GetNbSecretVariables()
}
