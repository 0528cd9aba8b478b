package synth

import (
	"math/bits"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// BLS12-381's scalar field modulus q by 64-bit limbs, least significant first, and
// ⌊2^318/q⌋, for wide.reduce (TestWideConstants holds them to fr's).
const (
	wq0 = 18446744069414584321
	wq1 = 6034159408538082302
	wq2 = 3691218898639771653
	wq3 = 8353516859464449352
	wmu = 10183805594867568095

	maxWordCoeff = 1<<62 - 1 // the largest integer wide.addWord and mulWord take
)

// mulWord sets z = x·c for a coefficient c ≤ maxWordCoeff given as an integer, not in
// Montgomery form. Poseidon2's linear layers, folded into linear expressions by
// gnark's builder, give porep's R1Cs most of their coefficients other than ±1 and ±2,
// and nearly all of those are powers of 3 below 2^62.
func mulWord(z, x *fr.Element, c uint64) {
	t0, t1, t2, t3, t4 := mul4x1(x, c)
	reduce5(z, t0, t1, t2, t3, t4)
}

// mul4x1 is x's form times c ≤ maxWordCoeff, in five words: four word products,
// where a Montgomery product (fr.Mul) takes sixteen and a reduction.
func mul4x1(x *fr.Element, c uint64) (t0, t1, t2, t3, t4 uint64) {
	h0, t0 := bits.Mul64(x[0], c)
	h1, l1 := bits.Mul64(x[1], c)
	h2, l2 := bits.Mul64(x[2], c)
	h3, l3 := bits.Mul64(x[3], c)
	var k uint64
	t1, k = bits.Add64(l1, h0, 0)
	t2, k = bits.Add64(l2, h1, k)
	t3, k = bits.Add64(l3, h2, k)
	return t0, t1, t2, t3, h3 + k // x·c < q·2^62 < 2^317
}

// wide is a sum of field elements' Montgomery forms, and of their multiples by
// integers below 2^62, kept unreduced in five words (least significant first) and
// reduced once, at the end (reduce): a form is linear in its element's value, so the
// sum's form is the sum of the forms mod q. reduce needs it below 2^318: addWord
// reduces it when a product takes it to 2^317 or more, and the other additions add
// less than 2^256 each.
type wide [5]uint64

// set makes w x's form.
func (w *wide) set(x *fr.Element) { *w = wide{x[0], x[1], x[2], x[3], 0} }

// add adds x's form.
func (w *wide) add(x *fr.Element) {
	var c uint64
	w[0], c = bits.Add64(w[0], x[0], 0)
	w[1], c = bits.Add64(w[1], x[1], c)
	w[2], c = bits.Add64(w[2], x[2], c)
	w[3], c = bits.Add64(w[3], x[3], c)
	w[4] += c
}

// sub adds −x's form, q − x (q for x = 0, which reduce removes).
func (w *wide) sub(x *fr.Element) {
	var b uint64
	n0, b := bits.Sub64(wq0, x[0], 0)
	n1, b := bits.Sub64(wq1, x[1], b)
	n2, b := bits.Sub64(wq2, x[2], b)
	n3, _ := bits.Sub64(wq3, x[3], b)
	var c uint64
	w[0], c = bits.Add64(w[0], n0, 0)
	w[1], c = bits.Add64(w[1], n1, c)
	w[2], c = bits.Add64(w[2], n2, c)
	w[3], c = bits.Add64(w[3], n3, c)
	w[4] += c
}

// addWord adds x's form times c ≤ maxWordCoeff (mul4x1).
func (w *wide) addWord(x *fr.Element, c uint64) {
	l0, l1, l2, l3, h := mul4x1(x, c)
	var k uint64
	w[0], k = bits.Add64(w[0], l0, 0)
	w[1], k = bits.Add64(w[1], l1, k)
	w[2], k = bits.Add64(w[2], l2, k)
	w[3], k = bits.Add64(w[3], l3, k)
	w[4] += h + k // below 2^318: both terms were below 2^317
	if w[4] >= 1<<61 {
		var r fr.Element
		w.reduce(&r)
		w.set(&r)
	}
}

// reduce sets z to the element whose form is w mod q; w must be below 2^318.
func (w *wide) reduce(z *fr.Element) { reduce5(z, w[0], w[1], w[2], w[3], w[4]) }

// reduce5 sets z to the element whose form is t0..t4 (least significant first) mod
// q; t must be below 2^318.
func reduce5(z *fr.Element, t0, t1, t2, t3, t4 uint64) {
	var b uint64
	if t4 != 0 {
		// m from the top 64 bits: m ≤ ⌊t/q⌋ ≤ m + 2 (each of the three floors loses
		// less than one, the first 2^254/q < 0.6).
		m, _ := bits.Mul64(t4<<2|t3>>62, wmu)
		p1, p0 := bits.Mul64(m, wq0)
		t0, b = bits.Sub64(t0, p0, 0)
		carry := p1
		var cy uint64
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
	}
	// Now t < 3q (2^256 < 3q too): at most two subtractions.
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
