package prover

import (
	"math/big"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
)

// hDenominator is 1/(g^n − 1) where g is the coset shift: the vanishing polynomial
// x^n − 1 is this constant on the whole coset, so dividing by it is one multiplication.
func hDenominator(d *fft.Domain) fr.Element {
	var den, one fr.Element
	one.SetOne()
	den.Exp(d.FrMultiplicativeGen, new(big.Int).SetUint64(d.Cardinality))
	den.Sub(&den, &one).Inverse(&den)
	return den
}

// computeH writes h = (a·b − c)/(x^n − 1) into ha (len n, the domain size), using hb
// and hc (len n) as scratch, where c = a∘b entry by entry, as a satisfied system has
// it. a and b (len ≤ n) are read, not modified. It is the
// same computation as gnark v0.14.0's computeH, so h comes out in bit-reversed order,
// matching pk.G1.Z which Setup stores bit-reversed:
//
//	ifft (DIF: natural in, bit-reversed out) → coset fft (DIT: bit-reversed in,
//	natural out) → pointwise → coset ifft (DIF: bit-reversed out)
//
// Unlike gnark it pads into caller-owned buffers instead of appending to the solution's
// vectors, so a resident key proves without per-proof allocations.
func computeH(d *fft.Domain, den *fr.Element, a, b, ha, hb, hc []fr.Element, nbTasks int) {
	n := len(ha)
	load := func(dst, src []fr.Element) {
		copy(dst, src)
		clear(dst[len(src):n])
	}
	load(ha, a)
	load(hb, b)
	parallelize(n, nbTasks, func(start, end int) {
		for i := start; i < end; i++ {
			hc[i].Mul(&ha[i], &hb[i])
		}
	})
	for _, v := range [][]fr.Element{ha, hb, hc} {
		d.FFTInverse(v, fft.DIF, fft.WithNbTasks(nbTasks))
		d.FFT(v, fft.DIT, fft.OnCoset(), fft.WithNbTasks(nbTasks))
	}

	parallelize(n, nbTasks, func(start, end int) {
		for i := start; i < end; i++ {
			ha[i].Mul(&ha[i], &hb[i]).
				Sub(&ha[i], &hc[i]).
				Mul(&ha[i], den)
		}
	})

	d.FFTInverse(ha, fft.DIF, fft.OnCoset(), fft.WithNbTasks(nbTasks))
}

// parallelize runs f over [0, n) split into at most nbTasks contiguous ranges.
func parallelize(n, nbTasks int, f func(start, end int)) {
	if nbTasks < 1 {
		nbTasks = 1
	}
	if nbTasks > n {
		nbTasks = n
	}
	if nbTasks <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + nbTasks - 1) / nbTasks
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(start, end)
		}()
	}
	wg.Wait()
}
