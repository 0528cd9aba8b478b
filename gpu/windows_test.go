package gpu

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// TestSignedDigitWindows checks, without a device, the arithmetic that msm_windows
// (gpu/cuda/bls12_381.cuh) rests on, as k_digits computes digits: a scalar from 2^254
// up is replaced by r - k against the negated point, and then ceil(255/c) signed
// c-bit windows hold every scalar with no carry out of the top one. The digits must
// give back k (or -k, for the replaced ones) mod r.
func TestSignedDigitWindows(t *testing.T) {
	r := fr.Modulus()
	two254 := new(big.Int).Lsh(big.NewInt(1), 254)
	rng := rand.New(rand.NewPCG(9, 10))
	for c := 4; c <= 22; c++ {
		nwin := (255 + c - 1) / c
		for i, e := range windowEdgeScalars(rng, c, 300) {
			k := e.BigInt(new(big.Int))
			flip := k.Cmp(two254) >= 0
			if flip {
				k.Sub(r, k)
			}
			half := int64(1) << (c - 1)
			carry := int64(0)
			sum := new(big.Int)
			for w := 0; w < nwin; w++ {
				d := new(big.Int).Rsh(k, uint(w*c)).Int64()&(1<<c-1) + carry
				carry = 0
				if d > half {
					d -= 1 << c
					carry = 1
				}
				sum.Add(sum, new(big.Int).Lsh(big.NewInt(d), uint(w*c)))
			}
			if carry != 0 {
				t.Fatalf("c = %d, scalar %d (%s): carry out of window %d", c, i, e.String(), nwin-1)
			}
			if flip {
				sum.Neg(sum)
			}
			if got := sum.Mod(sum, r); got.Cmp(e.BigInt(new(big.Int))) != 0 {
				t.Fatalf("c = %d, scalar %d: digits give %s, want %s", c, i, got, e.String())
			}
		}
	}
}
