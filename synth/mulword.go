package synth

import (
	"math/bits"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// BLS12-381's scalar field modulus q by 64-bit limbs, least significant first, and
// ⌊2^317/q⌋, for mulWord (TestMulWordConstants holds them to fr's).
const (
	wq0 = 18446744069414584321
	wq1 = 6034159408538082302
	wq2 = 3691218898639771653
	wq3 = 8353516859464449352
	wmu = 5091902797433784047

	maxWordCoeff = 1<<62 - 1 // the largest c mulWord takes
)

// mulWord sets z = x·c for a coefficient c ≤ maxWordCoeff given as an integer, not in
// Montgomery form. A field element's Montgomery form is linear in its value, so x's
// form times c, reduced mod q, is x·c's form: four word products and a reduction by
// an estimated quotient, where a Montgomery product (fr.Mul) takes sixteen and its
// own reduction. Poseidon2's linear layers, folded into linear expressions by gnark's
// builder, give porep's R1Cs most of their coefficients other than ±1 and ±2, and
// nearly all of those are powers of 3 below 2^62.
func mulWord(z, x *fr.Element, c uint64) {
	// t = x·c < q·2^62 < 2^317, in five words.
	h0, t0 := bits.Mul64(x[0], c)
	h1, l1 := bits.Mul64(x[1], c)
	t1, cy := bits.Add64(l1, h0, 0)
	h1 += cy
	h2, l2 := bits.Mul64(x[2], c)
	t2, cy := bits.Add64(l2, h1, 0)
	h2 += cy
	h3, l3 := bits.Mul64(x[3], c)
	t3, cy := bits.Add64(l3, h2, 0)
	t4 := h3 + cy

	// m from t's top 64 bits: m ≤ ⌊t/q⌋ ≤ m + 2 (each of the three floors loses less
	// than one, the first 2^253/q < 1).
	m, _ := bits.Mul64(t4<<3|t3>>61, wmu)

	// t −= m·q
	var b uint64
	p1, p0 := bits.Mul64(m, wq0)
	t0, b = bits.Sub64(t0, p0, 0)
	carry := p1
	p1, p0 = bits.Mul64(m, wq1)
	p0, cy = bits.Add64(p0, carry, 0)
	carry = p1 + cy
	t1, b = bits.Sub64(t1, p0, b)
	p1, p0 = bits.Mul64(m, wq2)
	p0, cy = bits.Add64(p0, carry, 0)
	carry = p1 + cy
	t2, b = bits.Sub64(t2, p0, b)
	p1, p0 = bits.Mul64(m, wq3)
	p0, cy = bits.Add64(p0, carry, 0)
	carry = p1 + cy
	t3, b = bits.Sub64(t3, p0, b)
	t4, _ = bits.Sub64(t4, carry, b)

	// Now t < 3q: at most two more subtractions.
	for t4 != 0 || !belowQ(t0, t1, t2, t3) {
		t0, b = bits.Sub64(t0, wq0, 0)
		t1, b = bits.Sub64(t1, wq1, b)
		t2, b = bits.Sub64(t2, wq2, b)
		t3, b = bits.Sub64(t3, wq3, b)
		t4 -= b
	}
	z[0], z[1], z[2], z[3] = t0, t1, t2, t3
}

// belowQ says whether the four words t0..t3 (least significant first) are below q.
func belowQ(t0, t1, t2, t3 uint64) bool {
	_, b := bits.Sub64(t0, wq0, 0)
	_, b = bits.Sub64(t1, wq1, b)
	_, b = bits.Sub64(t2, wq2, b)
	_, b = bits.Sub64(t3, wq3, b)
	return b != 0
}
