package prover

import (
	"context"
	"fmt"
	"math/big"
	"runtime"
	"time"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/synth"
)

// Prove proves every solution against pk (made resident on b as k) and returns one
// gnark proof per solution, in order. The backend computes the MSM/NTT Parts; this
// function draws fresh r, s per proof from crypto/rand and adds the α/β/δ terms
// exactly as gnark v0.14.0's groth16 prover does, so gnark's groth16.Verify accepts
// the proofs with the circuit's gnark verifying key.
//
// The returned PhaseTimes are the backend's, with Total covering assembly too.
func Prove(ctx context.Context, b Backend, pk *ProvingKey, k Key, sols []*synth.Solution) ([]*groth16bls.Proof, PhaseTimes, error) {
	start := time.Now()
	sums, times, err := ProveSums(ctx, b, pk, k, sols)
	if err != nil {
		return nil, times, err
	}
	proofs := sums.Assemble()
	times.Total = time.Since(start)
	return proofs, times, nil
}

// Sums are a batch's backend Parts with the randomness of each proof, ready to be
// assembled into proofs (Assemble) without the backend.
type Sums struct {
	pk    *ProvingKey
	parts []Parts
	rs    [][2]fr.Element
}

// ProveSums is Prove's backend half: it draws r, s for every proof and runs the
// backend. A device's prover can assemble one batch's proofs while the device works on
// the next. The PhaseTimes are the backend's.
func ProveSums(ctx context.Context, b Backend, pk *ProvingKey, k Key, sols []*synth.Solution) (*Sums, PhaseTimes, error) {
	if len(sols) == 0 {
		return &Sums{pk: pk}, PhaseTimes{}, nil
	}
	// Draw randomness first: if the system's entropy source fails we learn it before
	// spending the proving time.
	rs := make([][2]fr.Element, len(sols))
	for i := range rs {
		if _, err := rs[i][0].SetRandom(); err != nil {
			return nil, PhaseTimes{}, fmt.Errorf("prove %s: draw r: %w", pk.Circuit, err)
		}
		if _, err := rs[i][1].SetRandom(); err != nil {
			return nil, PhaseTimes{}, fmt.Errorf("prove %s: draw s: %w", pk.Circuit, err)
		}
	}
	parts, times, err := b.Prove(ctx, k, sols)
	if err != nil {
		return nil, times, err
	}
	if len(parts) != len(sols) {
		return nil, times, fmt.Errorf("prove %s: backend %s returned %d parts for %d solutions", pk.Circuit, b.Name(), len(parts), len(sols))
	}
	return &Sums{pk: pk, parts: parts, rs: rs}, times, nil
}

// Assemble returns one proof per solution, in order. A few scalar multiplications per
// proof (~1.5 ms): a batch is spread over the cores.
func (p *Sums) Assemble() []*groth16bls.Proof {
	proofs := make([]*groth16bls.Proof, len(p.parts))
	parallelize(len(p.parts), runtime.NumCPU(), func(start, end int) {
		for i := start; i < end; i++ {
			proofs[i] = assemble(p.pk.PK, &p.parts[i], &p.rs[i][0], &p.rs[i][1])
		}
	})
	return proofs
}

// assemble adds the randomization to the backend's sums (gnark's prove.go, same names):
//
//	Ar  = A + α + r·δ
//	Bs1 = B1 + β + s·δ             (G1, only used inside Krs)
//	Krs = K + s·Ar + r·Bs1 − r·s·δ
//	Bs  = B2 + β + s·δ             (G2)
func assemble(pk *groth16bls.ProvingKey, p *Parts, r, s *fr.Element) *groth16bls.Proof {
	var rb, sb, krb big.Int
	r.BigInt(&rb)
	s.BigInt(&sb)
	var kr fr.Element
	kr.Mul(r, s).Neg(&kr)
	kr.BigInt(&krb)

	var delta, tmp bls12381.G1Jac
	delta.FromAffine(&pk.G1.Delta)

	var ar bls12381.G1Jac
	ar.Set(&p.A)
	ar.AddMixed(&pk.G1.Alpha)
	ar.AddAssign(tmp.ScalarMultiplication(&delta, &rb))

	var bs1 bls12381.G1Jac
	bs1.Set(&p.B1)
	bs1.AddMixed(&pk.G1.Beta)
	bs1.AddAssign(tmp.ScalarMultiplication(&delta, &sb))

	var krs bls12381.G1Jac
	krs.Set(&p.K)
	krs.AddAssign(tmp.ScalarMultiplication(&delta, &krb))
	krs.AddAssign(tmp.ScalarMultiplication(&ar, &sb))
	krs.AddAssign(tmp.ScalarMultiplication(&bs1, &rb))

	var bs, deltaS bls12381.G2Jac
	bs.Set(&p.B2)
	deltaS.FromAffine(&pk.G2.Delta)
	deltaS.ScalarMultiplication(&deltaS, &sb)
	bs.AddAssign(&deltaS)
	bs.AddMixed(&pk.G2.Beta)

	proof := &groth16bls.Proof{Commitments: []bls12381.G1Affine{}}
	proof.Ar.FromJacobian(&ar)
	proof.Krs.FromJacobian(&krs)
	proof.Bs.FromJacobian(&bs)
	return proof
}
