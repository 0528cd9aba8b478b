package synth

import (
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"math/rand/v2"

	"github.com/consensys/gnark/frontend"
)

const maxSHA256Bytes = 1 << 16

// sha256Circuit proves knowledge of an N-byte Preimage (one variable per byte, range
// checked) whose SHA-256 digest is the public Digest, given as two big-endian 128-bit
// halves: Digest.0 is bytes 0..15, Digest.1 bytes 16..31 (a 256-bit value does not fit
// in one BLS12-381 scalar).
//
// The gadget works on bits with plain arithmetic constraints only. gnark's std sha2
// uses lookup tables, which add BSB22 commitments that our prover does not support.
type sha256Circuit struct {
	Digest   [2]frontend.Variable `gnark:",public"`
	Preimage []frontend.Variable
}

func newSHA256(p []int) builtin {
	return &sha256Circuit{Preimage: make([]frontend.Variable, p[0])}
}

func (c *sha256Circuit) Define(api frontend.API) error {
	g := shaGadget{api}
	msg := make([]frontend.Variable, 0, len(c.Preimage)*8)
	for _, b := range c.Preimage {
		msg = append(msg, api.ToBinary(b, 8)...) // little-endian bits of each byte
	}
	h := g.hash(msg, len(c.Preimage))
	for half := range c.Digest {
		var words [4]word
		copy(words[:], h[4*half:4*half+4])
		api.AssertIsEqual(g.packBigEndian(words[:]), c.Digest[half])
	}
	return nil
}

func (c *sha256Circuit) assign(rng *rand.Rand) frontend.Circuit {
	pre := make([]byte, len(c.Preimage))
	for i := range pre {
		pre[i] = byte(rng.Uint32())
	}
	sum := sha256.Sum256(pre)
	a := &sha256Circuit{Preimage: make([]frontend.Variable, len(pre))}
	for i, b := range pre {
		a.Preimage[i] = new(big.Int).SetUint64(uint64(b))
	}
	a.Digest[0] = new(big.Int).SetBytes(sum[:16])
	a.Digest[1] = new(big.Int).SetBytes(sum[16:])
	return a
}

// word is a 32-bit value as bits, least significant first. Bits are 0/1-valued
// variables or constants; rotations and shifts are free re-indexing.
type word [32]frontend.Variable

var sha256K = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

var sha256IV = [8]uint32{
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
}

type shaGadget struct{ api frontend.API }

// hash returns the digest words of msg (8 little-endian bits per byte, n bytes).
func (g shaGadget) hash(msg []frontend.Variable, n int) [8]word {
	// Padding: 0x80, zeros, then the bit length as a 64-bit big-endian integer.
	padded := len(msg)/8 + 9
	padded += (64 - padded%64) % 64
	bytes := make([][]frontend.Variable, padded)
	for i := range n {
		bytes[i] = msg[8*i : 8*i+8]
	}
	tail := make([]byte, padded-n)
	tail[0] = 0x80
	binary.BigEndian.PutUint64(tail[len(tail)-8:], uint64(n)*8)
	for i, b := range tail {
		bytes[n+i] = constBits(uint64(b), 8)
	}

	var state [8]word
	for i, v := range sha256IV {
		state[i] = constWord(v)
	}
	for blk := 0; blk < padded; blk += 64 {
		var w [16]word
		for t := range w {
			for j := range 4 { // byte 4t is the most significant
				copy(w[t][8*(3-j):8*(4-j)], bytes[blk+4*t+j])
			}
		}
		state = g.compress(state, w)
	}
	return state
}

func (g shaGadget) compress(h [8]word, block [16]word) [8]word {
	var w [64]word
	copy(w[:], block[:])
	for t := 16; t < 64; t++ {
		s0 := g.xor3(rotr(w[t-15], 7), rotr(w[t-15], 18), shr(w[t-15], 3))
		s1 := g.xor3(rotr(w[t-2], 17), rotr(w[t-2], 19), shr(w[t-2], 10))
		w[t] = g.add(34, g.pack(s1), g.pack(w[t-7]), g.pack(s0), g.pack(w[t-16]))
	}

	a, b, c, d, e, f, gg, hh := h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
	for t := range 64 {
		s1 := g.xor3(rotr(e, 6), rotr(e, 11), rotr(e, 25))
		var ch word
		for i := range ch { // g ⊕ (e ∧ (f ⊕ g)) = g + e·(f − g)
			ch[i] = g.api.Add(gg[i], g.api.Mul(e[i], g.api.Sub(f[i], gg[i])))
		}
		t1 := g.api.Add(g.pack(hh), g.pack(s1), g.pack(ch), sha256K[t], g.pack(w[t]))
		s0 := g.xor3(rotr(a, 2), rotr(a, 13), rotr(a, 22))
		var maj word
		for i := range maj { // ab + c·(a + b − 2ab)
			ab := g.api.Mul(a[i], b[i])
			maj[i] = g.api.Add(ab, g.api.Mul(c[i], g.api.Sub(g.api.Add(a[i], b[i]), g.api.Mul(ab, 2))))
		}
		// T1 is never reduced on its own: both sums stay below 2^35.
		newA := g.add(35, t1, g.pack(s0), g.pack(maj))
		newE := g.add(35, t1, g.pack(d))
		hh, gg, f, e, d, c, b, a = gg, f, e, newE, c, b, a, newA
	}
	out := [8]word{a, b, c, d, e, f, gg, hh}
	for i := range out {
		out[i] = g.add(33, g.pack(h[i]), g.pack(out[i]))
	}
	return out
}

// add returns the sum of the terms modulo 2^32; nbBits must bound the exact sum.
func (g shaGadget) add(nbBits int, terms ...frontend.Variable) word {
	bits := g.api.ToBinary(g.api.Add(terms[0], terms[1], terms[2:]...), nbBits)
	var w word
	copy(w[:], bits)
	return w
}

// xor3 costs two constraints per bit, fewer where a constant (shifted-in zero) occurs.
func (g shaGadget) xor3(x, y, z word) word {
	var r word
	for i := range r {
		r[i] = g.api.Xor(g.api.Xor(x[i], y[i]), z[i])
	}
	return r
}

// pack is Σ 2^i·bit_i: a linear combination, no constraint. Unlike api.FromBinary it
// does not re-assert booleanity: every bit is 0/1 by construction.
func (g shaGadget) pack(w word) frontend.Variable {
	terms := make([]frontend.Variable, len(w))
	for i, b := range w {
		terms[i] = g.api.Mul(b, uint64(1)<<i)
	}
	return g.api.Add(terms[0], terms[1], terms[2:]...)
}

// packBigEndian packs words (most significant first) into one value.
func (g shaGadget) packBigEndian(words []word) frontend.Variable {
	acc := frontend.Variable(0)
	for _, w := range words {
		acc = g.api.Add(g.api.Mul(acc, uint64(1)<<32), g.pack(w))
	}
	return acc
}

func rotr(w word, n int) word {
	var r word
	for i := range r {
		r[i] = w[(i+n)%32]
	}
	return r
}

func shr(w word, n int) word {
	var r word
	for i := range r {
		if i+n < 32 {
			r[i] = w[i+n]
		} else {
			r[i] = 0
		}
	}
	return r
}

func constBits(v uint64, n int) []frontend.Variable {
	bits := make([]frontend.Variable, n)
	for i := range bits {
		bits[i] = (v >> i) & 1
	}
	return bits
}

func constWord(v uint32) word {
	var w word
	copy(w[:], constBits(uint64(v), 32))
	return w
}
