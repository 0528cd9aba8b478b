// Package setup makes development Groth16 keys (BLS12-381) for a constraint system:
// the same keys gnark's groth16.Setup makes from the same toxic waste, field by field,
// computed where it is fast and written straight to a writer in the proving key's
// dump format (gnark's ProvingKey.WriteDump), one vector at a time, so that the key is
// never held in memory whole.
//
// It is NOT a production ceremony: the toxic waste exists in this process's memory,
// so whoever runs it could forge proofs. The waste is drawn from crypto/rand, is never
// logged or written, and is zeroed when the keys are done.
package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// FixedBase multiplies the group's standard generator (gnark-crypto's
// curve.Generators) by many scalars: out[i] = scalars[i]·G in affine coordinates,
// (0, 0) for a zero scalar. Scalars are gnark's fr.Element (Montgomery form).
type FixedBase interface {
	Name() string
	G1(ctx context.Context, scalars []fr.Element, out []curve.G1Affine) error
	G2(ctx context.Context, scalars []fr.Element, out []curve.G2Affine) error
}

// Options tune a Write. The zero value runs on the CPU with default chunks.
type Options struct {
	// Mul computes the key's points; nil: CPU (gnark-crypto).
	Mul FixedBase
	// Chunk is how many points are computed and written at a time (two chunks of G2
	// points are in memory at once); 0: DefaultChunk.
	Chunk int
	// Phase, when set, is told each phase's name and duration as it ends: "qap",
	// "g1.A", "g1.B", "g1.Z", "g1.K", "g2.B" (points computed and handed to the
	// writer) and "write" (time the writer spent writing, overlapped with the rest).
	Phase func(name string, d time.Duration)
}

// DefaultChunk points per batch: large enough to keep a GPU busy, small enough that
// two G2 chunks (2 x 800 MB) stay a small part of the host's memory.
const DefaultChunk = 1 << 22

// Write makes the keys of r1cs, writes the proving key to w in gnark's WriteDump
// format and returns the verifying key. r1cs must have no commitments.
func Write(ctx context.Context, r1cs *cs.R1CS, w io.Writer, o Options) (*groth16bls.VerifyingKey, error) {
	if r1cs.CommitmentInfo != nil && len(r1cs.CommitmentInfo.(constraint.Groth16Commitments)) > 0 {
		return nil, errors.New("setup: the circuit uses gnark commitments, which this setup does not support")
	}
	if r1cs.GetNbConstraints() == 0 {
		return nil, errors.New("setup: the circuit has no constraints")
	}
	if o.Mul == nil {
		o.Mul = CPU{}
	}
	if o.Chunk <= 0 {
		o.Chunk = DefaultChunk
	}
	phase := o.Phase
	if phase == nil {
		phase = func(string, time.Duration) {}
	}
	domain := fft.NewDomain(uint64(r1cs.GetNbConstraints()))
	tw, err := sampleToxicWaste(domain.Cardinality)
	if err != nil {
		return nil, fmt.Errorf("setup: toxic waste: %w", err)
	}
	defer tw.zero()

	start := time.Now()
	q, err := evalQAP(ctx, r1cs, domain, &tw)
	if err != nil {
		return nil, err
	}
	defer q.zero()
	phase("qap", time.Since(start))

	vk, head, err := smallPoints(ctx, o.Mul, r1cs, q, &tw)
	if err != nil {
		return nil, err
	}
	head.domain = domain
	kw := &keyWriter{w: w, mul: o.Mul, chunk: o.Chunk, phase: phase}
	if err := kw.write(ctx, head, q, domain, &tw); err != nil {
		return nil, err
	}
	return vk, nil
}

// toxicWaste is the ceremony's secret: τ (t), α, β, γ, δ and the inverses of γ, δ.
type toxicWaste struct {
	t, alpha, beta, gamma, delta fr.Element
	gammaInv, deltaInv           fr.Element
}

// sampleToxicWaste draws the waste as gnark's Setup does (fr.Element.SetRandom from
// crypto/rand, in the same order), so that a test seeding crypto/rand gets gnark's
// keys exactly. A τ that is an n-th root of unity (a zero vanishing polynomial, every
// Z point at infinity) is drawn again.
func sampleToxicWaste(n uint64) (toxicWaste, error) {
	var tw toxicWaste
	for _, e := range []*fr.Element{&tw.t, &tw.alpha, &tw.beta, &tw.gamma, &tw.delta} {
		for e.IsZero() {
			if _, err := e.SetRandom(); err != nil {
				return tw, err
			}
		}
	}
	for z := vanishing(&tw.t, n); z.IsZero(); z = vanishing(&tw.t, n) {
		if _, err := tw.t.SetRandom(); err != nil {
			return tw, err
		}
	}
	tw.gammaInv.Inverse(&tw.gamma)
	tw.deltaInv.Inverse(&tw.delta)
	return tw, nil
}

// vanishing is t^n - 1.
func vanishing(t *fr.Element, n uint64) fr.Element {
	var z fr.Element
	one := fr.One()
	z.Exp(*t, new(big.Int).SetUint64(n)).Sub(&z, &one)
	return z
}

func (tw *toxicWaste) zero() { *tw = toxicWaste{} }

// CPU is FixedBase on gnark-crypto (every core).
type CPU struct{}

// Name is "cpu".
func (CPU) Name() string { return "cpu" }

// G1 computes out[i] = scalars[i]·G1.
func (CPU) G1(ctx context.Context, scalars []fr.Element, out []curve.G1Affine) error {
	if len(out) != len(scalars) {
		return fmt.Errorf("fixed-base G1: %d scalars, %d outputs", len(scalars), len(out))
	}
	if len(scalars) == 0 {
		return ctx.Err()
	}
	_, _, g1, _ := curve.Generators()
	copy(out, curve.BatchScalarMultiplicationG1(&g1, scalars))
	return ctx.Err()
}

// G2 computes out[i] = scalars[i]·G2.
func (CPU) G2(ctx context.Context, scalars []fr.Element, out []curve.G2Affine) error {
	if len(out) != len(scalars) {
		return fmt.Errorf("fixed-base G2: %d scalars, %d outputs", len(scalars), len(out))
	}
	if len(scalars) == 0 {
		return ctx.Err()
	}
	_, _, _, g2 := curve.Generators()
	copy(out, curve.BatchScalarMultiplicationG2(&g2, scalars))
	return ctx.Err()
}
