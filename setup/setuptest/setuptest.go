// Package setuptest checks fixed-base multipliers (package setup's FixedBase) against
// gnark-crypto, for the tests of each implementation.
package setuptest

import (
	"context"
	"math/big"
	"math/rand/v2"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// FixedBase is package setup's FixedBase (the same method set; this package does not
// import setup, so that setup's own tests can use it).
type FixedBase interface {
	Name() string
	G1(ctx context.Context, scalars []fr.Element, out []curve.G1Affine) error
	G2(ctx context.Context, scalars []fr.Element, out []curve.G2Affine) error
}

// CheckFixedBase compares mul's points with gnark-crypto's ScalarMultiplication, one
// by one, on n ≥ 50 scalars: 0, 1, r-1, small values, r-2 and below, and random ones
// of every width.
func CheckFixedBase(t *testing.T, mul FixedBase, n int) {
	t.Helper()
	s := EdgeScalars(n, 9)
	_, _, g1, g2 := curve.Generators()
	o1 := make([]curve.G1Affine, n)
	o2 := make([]curve.G2Affine, n)
	if err := mul.G1(context.Background(), s, o1); err != nil {
		t.Fatal(err)
	}
	if err := mul.G2(context.Background(), s, o2); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range s {
		var w1 curve.G1Affine
		var w2 curve.G2Affine
		w1.ScalarMultiplication(&g1, s[i].BigInt(new(big.Int)))
		w2.ScalarMultiplication(&g2, s[i].BigInt(new(big.Int)))
		if !o1[i].Equal(&w1) || !o2[i].Equal(&w2) || (s[i].IsZero() && (!o1[i].IsInfinity() || !o2[i].IsInfinity())) {
			if bad++; bad <= 5 {
				t.Errorf("%s: scalar %d (%s): G1 right %v, G2 right %v", mul.Name(), i, s[i].String(), o1[i].Equal(&w1), o2[i].Equal(&w2))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d points wrong", mul.Name(), bad, n)
	}
}

// EdgeScalars are n scalars: 0, 1, r-1, then 2..38, r-2..r-11, then random ones (every
// 97th of a random width, every 89th zero), from seed.
func EdgeScalars(n int, seed uint64) []fr.Element {
	s := make([]fr.Element, n)
	var rm1 fr.Element
	rm1.SetOne()
	rm1.Neg(&rm1)
	fixed := []fr.Element{{}, fr.One(), rm1}
	copy(s, fixed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := len(fixed); i < n; i++ {
		switch {
		case i < 40:
			s[i].SetUint64(uint64(i - 1))
		case i < 50:
			s[i].SetUint64(uint64(i - 38))
			s[i].Neg(&s[i])
		case i%89 == 0:
			s[i].SetZero()
		case i%97 == 0:
			s[i].SetUint64(rng.Uint64() >> rng.IntN(64))
		default:
			var b [32]byte
			for k := range b {
				b[k] = byte(rng.Uint32())
			}
			s[i].SetBytes(b[:])
		}
	}
	return s
}
