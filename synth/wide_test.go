package synth

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// TestWideConstants: wide's modulus and quotient factor are fr's q and ⌊2^318/q⌋.
func TestWideConstants(t *testing.T) {
	q := fr.Modulus()
	limbs := new(big.Int)
	for _, w := range []uint64{wq3, wq2, wq1, wq0} {
		limbs.Lsh(limbs, 64).Or(limbs, new(big.Int).SetUint64(w))
	}
	if limbs.Cmp(q) != 0 {
		t.Fatalf("limbs give %s, fr's modulus is %s", limbs, q)
	}
	mu := new(big.Int).Lsh(big.NewInt(1), 318)
	mu.Div(mu, q)
	if !mu.IsUint64() || mu.Uint64() != wmu {
		t.Fatalf("⌊2^318/q⌋ = %s, wmu = %d", mu, uint64(wmu))
	}
}

// TestMulWord: mulWord equals fr's Montgomery product by the coefficient's element
// on random elements and coefficients, and at the edges: 0, 1, q − 1 and the
// elements whose Montgomery forms are the largest and smallest words, coefficients
// 0, 1, small, powers of 3 and maxWordCoeff.
func TestMulWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []fr.Element
	var one, qm1 fr.Element
	one.SetOne()
	qm1.Neg(&one)
	xs = append(xs, fr.Element{}, one, qm1, fr.Element{wq0 - 1, wq1, wq2, wq3}, fr.Element{1, 0, 0, 0},
		fr.Element{^uint64(0), ^uint64(0), ^uint64(0), wq3 - 1})
	for range 20000 {
		var x fr.Element
		x.SetRandom()
		xs = append(xs, x)
	}
	cs := []uint64{0, 1, 2, 3, 7, 1 << 31, 1<<62 - 2, maxWordCoeff}
	for p := uint64(1); p <= maxWordCoeff/3; p *= 3 {
		cs = append(cs, p*3)
	}
	for range 64 {
		cs = append(cs, rng.Uint64()&maxWordCoeff)
	}
	for _, c := range cs {
		var ce fr.Element
		ce.SetUint64(c)
		for i := range xs {
			var got, want fr.Element
			want.Mul(&xs[i], &ce)
			mulWord(&got, &xs[i], c)
			if got != want {
				t.Fatalf("%s · %d: mulWord %s, fr.Mul %s", xs[i].String(), c, got.String(), want.String())
			}
		}
	}
}

// TestWide: sums of random terms (elements added and subtracted, multiplied by
// integers up to maxWordCoeff, enough of those to fold the sum many times), reduced,
// equal fr's sums of the same terms, with 0, 1 and q − 1 among the elements.
func TestWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var one, qm1 fr.Element
	one.SetOne()
	qm1.Neg(&one)
	elem := func() fr.Element {
		var x fr.Element
		switch rng.IntN(8) {
		case 0:
		case 1:
			x = one
		case 2:
			x = qm1
		default:
			x.SetRandom()
		}
		return x
	}
	var folds int
	for range 3000 {
		start := elem()
		var acc wide
		acc.set(&start)
		want := start
		for range rng.IntN(80) {
			x := elem()
			switch rng.IntN(3) {
			case 0:
				acc.add(&x)
				want.Add(&want, &x)
			case 1:
				acc.sub(&x)
				want.Sub(&want, &x)
			default:
				c := rng.Uint64() & maxWordCoeff
				if rng.IntN(2) == 0 {
					c = maxWordCoeff
				}
				before := acc[4]
				acc.addWord(&x, c)
				if acc[4] < before {
					folds++
				}
				var ce, m fr.Element
				ce.SetUint64(c)
				m.Mul(&x, &ce)
				want.Add(&want, &m)
			}
		}
		var got fr.Element
		acc.reduce(&got)
		if got != want {
			t.Fatalf("wide sum %s, fr's %s", got.String(), want.String())
		}
	}
	if folds < 1000 {
		t.Errorf("%d folds: the terms should pass 2^317 often", folds)
	}
}

// BenchmarkMulWord: a chain of products by a coefficient, mulWord against fr.Mul.
//
//	go test ./synth/ -run '^$' -bench MulWord
func BenchmarkMulWord(b *testing.B) {
	var x0 fr.Element
	x0.SetRandom()
	const c = 1162261467 // 3^19
	b.Run("fr.Mul", func(b *testing.B) {
		var ce fr.Element
		ce.SetUint64(c)
		x := x0
		for b.Loop() {
			x.Mul(&x, &ce)
		}
		mulWordSink = x
	})
	b.Run("mulWord", func(b *testing.B) {
		x := x0
		for b.Loop() {
			mulWord(&x, &x, c)
		}
		mulWordSink = x
	})
}

var mulWordSink fr.Element
