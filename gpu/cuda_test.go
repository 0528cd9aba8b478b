package gpu

import (
	"math/big"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
)

// testDevice opens device 0 and one stream, or skips the test when no CUDA device
// (or library) is usable here, saying why.
func testDevice(t testing.TB) (*cudaCtx, *cudaStream) {
	t.Helper()
	skipWithoutDevice(t)
	lib, err := openLib("")
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	n, err := lib.deviceCount()
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	if n == 0 {
		t.Skip("no CUDA device: device count is 0")
	}
	c, err := lib.newCtx(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	s, err := c.newStream(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.close(); err != nil {
			t.Error(err)
		}
		if err := c.close(); err != nil {
			t.Error(err)
		}
	})
	return c, s
}

// randFr fills v with uniformly random field elements from a fast seeded generator
// (test data only). Any value below r is a valid Montgomery representation.
func randFr(rng *rand.Rand, v []fr.Element) {
	for i := range v {
		for {
			e := fr.Element{rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64() >> 1}
			if lessThanR(&e) {
				v[i] = e
				break
			}
		}
	}
}

var rLimbs = [4]uint64{0xffffffff00000001, 0x53bda402fffe5bfe, 0x3339d80809a1d805, 0x73eda753299d7d48}

func lessThanR(e *fr.Element) bool {
	for i := 3; i >= 0; i-- {
		if e[i] != rLimbs[i] {
			return e[i] < rLimbs[i]
		}
	}
	return false
}

func distinctG1(rng *rand.Rand, m int) []bls12381.G1Affine {
	_, _, g1, _ := bls12381.Generators()
	s := make([]fr.Element, m)
	randFr(rng, s)
	return bls12381.BatchScalarMultiplicationG1(&g1, s)
}

func distinctG2(rng *rand.Rand, m int) []bls12381.G2Affine {
	_, _, _, g2 := bls12381.Generators()
	s := make([]fr.Element, m)
	randFr(rng, s)
	return bls12381.BatchScalarMultiplicationG2(&g2, s)
}

// layout tiles m distinct points over n bases, with a few infinities and negations.
func layout(rng *rand.Rand, n, m int, special bool) ([]int32, []bool) {
	src, neg := make([]int32, n), make([]bool, n)
	for i := range src {
		src[i] = int32(i % m)
	}
	if special && n > 2 {
		for range 1 + n/64 {
			i := rng.IntN(n)
			src[i] = -1 // point at infinity
			j := rng.IntN(n)
			if src[j] >= 0 {
				neg[j] = true
			}
		}
	}
	return src, neg
}

// scalars returns n scalars of the given kind: "random" (with zeros, ones and r−1
// sprinkled in), "skewed" (mostly 0 and 1, as in real witnesses), "ones" (all 1 but
// a -1 and a 0), "small" (at most 64 bits, a quarter of them negated) or "zeros".
func scalars(rng *rand.Rand, n int, kind string) []fr.Element {
	v := make([]fr.Element, n)
	randFr(rng, v)
	var one, minusOne fr.Element
	one.SetOne()
	minusOne.Neg(&one)
	switch kind {
	case "random":
		for k := range 1 + n/32 {
			i := rng.IntN(n)
			switch k % 3 {
			case 0:
				v[i].SetZero()
			case 1:
				v[i] = minusOne
			case 2:
				v[i] = one
			}
		}
		if n >= 3 {
			v[0].SetZero()
			v[1] = minusOne
		}
	case "ones": // one bucket holds every digit but two: the most units of one bucket
		for i := range v {
			v[i] = one
		}
		if n >= 3 {
			v[n/2] = minusOne
			v[n-1].SetZero()
		}
	case "small": // at most 64 bits, or minus such a value (r - k: k's digits, negated)
		for i := range v {
			x := rng.Uint64() >> rng.IntN(64)
			v[i].SetUint64(x)
			if rng.IntN(4) == 0 {
				v[i].Neg(&v[i])
			}
		}
		v[n-1].SetUint64(^uint64(0)) // the longest: 64 bits, digits up to the carry's window
	case "zeros":
		for i := range v {
			v[i].SetZero()
		}
	case "witness": // as sha256's: about half zeros, the rest ±1 but 1% below 2^35
		for i := range v {
			switch x := rng.IntN(100); {
			case x < 55:
				v[i].SetZero()
			case x < 77:
				v[i] = one
			case x < 99:
				v[i] = minusOne
			default:
				v[i].SetUint64(rng.Uint64() >> 29)
			}
		}
	case "skewed":
		for i := range v {
			switch x := rng.IntN(10); {
			case x < 6:
				v[i] = one
			case x < 8:
				v[i].SetZero()
			}
		}
	}
	return v
}

// tiled lays the distinct points q out as layout says: q[src[i]], negated where
// neg[i], infinity where src[i] < 0.
func tiled[T any, P interface {
	*T
	Neg(*T) *T
}](q []T, src []int32, neg []bool) []T {
	b := make([]T, len(src))
	for i, j := range src {
		if j >= 0 {
			b[i] = q[j]
			if neg[i] {
				P(&b[i]).Neg(&b[i])
			}
		}
	}
	return b
}

// batchWant is gnark-crypto's result for one vector of a batched MSM: scalar i is
// w[off+i], or w[off+idx[i]] when indexed.
func batchWant(t *testing.T, b1 []bls12381.G1Affine, b2 []bls12381.G2Affine, w []fr.Element, idx []uint32, off int,
	indexed bool) (bls12381.G1Jac, bls12381.G2Jac) {
	t.Helper()
	v := make([]fr.Element, len(b1))
	for i := range v {
		k := i
		if indexed {
			k = int(idx[i])
		}
		v[i] = w[off+k]
	}
	var want1 bls12381.G1Jac
	var want2 bls12381.G2Jac
	if _, err := want1.MultiExp(b1, v, ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := want2.MultiExp(b2, v, ecc.MultiExpConfig{}); err != nil {
		t.Fatal(err)
	}
	return want1, want2
}

// aggregate folds scalars onto the distinct points (negations and infinities
// resolved), so the reference is one small, duplicate-free MSM.
func aggregate(m int, src []int32, neg []bool, sc []fr.Element) []fr.Element {
	agg := make([]fr.Element, m)
	for i, s := range src {
		if s < 0 {
			continue
		}
		if neg[i] {
			agg[s].Sub(&agg[s], &sc[i])
		} else {
			agg[s].Add(&agg[s], &sc[i])
		}
	}
	return agg
}

func msmSizes(maxLog int) []int {
	sizes := []int{1, 2, 3}
	for _, k := range []int{4, 8, 12, 16, 20, 22} {
		if k > maxLog {
			break
		}
		sizes = append(sizes, 1<<k-1, 1<<k, 1<<k+1)
	}
	return sizes
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func maxLogFor(t *testing.T, full int) int {
	if testing.Short() {
		return min(full, 12)
	}
	return envInt("CUZK_GPU_TEST_MAXLOG", full)
}

func TestMSMG1(t *testing.T) {
	_, s := testDevice(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const m = 1 << 12
	q := distinctG1(rng, m)
	for _, n := range msmSizes(maxLogFor(t, 22)) {
		// MSMs of 2^16 points and more take their window from the scalars' bit lengths:
		// sparse and short scalars run narrower or fewer windows there.
		for _, kind := range []string{"random", "skewed", "ones", "small", "zeros"} {
			if (kind != "random" && n > 1<<20) || ((kind == "small" || kind == "zeros") && n < 1<<16-1) {
				continue
			}
			src, neg := layout(rng, n, min(n, m), true)
			bases := tiled(q, src, neg)
			sc := scalars(rng, n, kind)
			var want bls12381.G1Jac
			agg := aggregate(m, src, neg, sc)
			if _, err := want.MultiExp(q, agg, ecc.MultiExpConfig{}); err != nil {
				t.Fatal(err)
			}
			set, err := s.newBasesG1(bases, 1<<30, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.msmG1Host(set, 0, sc)
			set.close()
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(&want) {
				t.Fatalf("G1 MSM n=%d %s: mismatch\n got %s\nwant %s", n, kind, got.String(), want.String())
			}
			t.Logf("G1 MSM n=%d %s: ok", n, kind)
		}
	}
}

// windowEdgeScalars are scalars at the edges of the signed-digit windows: around 2^254,
// where the library takes r - k instead of k so that ceil(255/c) windows suffice;
// r - 1 and r - 2; all ones below bit 254 and below 2^(c·w) for every w, whose digits
// all carry; digits of exactly 2^(c-1) (no carry) and 2^(c-1) + 1 (carry) in every
// window; then random ones.
func windowEdgeScalars(rng *rand.Rand, c, n int) []fr.Element {
	r := fr.Modulus()
	var ks []*big.Int
	add := func(k *big.Int) {
		if k.Sign() >= 0 && k.Cmp(r) < 0 {
			ks = append(ks, k)
		}
	}
	pow := func(e int) *big.Int { return new(big.Int).Lsh(big.NewInt(1), uint(e)) }
	for _, d := range []int64{-2, -1, 0, 1, 2} {
		add(new(big.Int).Add(pow(254), big.NewInt(d)))
		add(new(big.Int).Add(r, big.NewInt(d-2)))
	}
	for e := c; e < 255; e += c {
		add(new(big.Int).Sub(pow(e), big.NewInt(1)))
	}
	half, halfUp := new(big.Int), new(big.Int)
	for e := 0; e+c <= 254; e += c {
		half.Add(half, pow(e+c-1))
		halfUp.Add(halfUp, new(big.Int).Add(pow(e+c-1), pow(e)))
		add(new(big.Int).Set(half))
		add(new(big.Int).Set(halfUp))
		add(new(big.Int).Sub(r, half))
	}
	v := make([]fr.Element, n)
	randFr(rng, v)
	for i, k := range ks {
		if i < n {
			v[i].SetBigInt(k)
		}
	}
	return v
}

// TestMSMWindowEdges forces window sizes (the stream's knobs) around those the library picks and
// checks MSMs of windowEdgeScalars against gnark-crypto, G1 and G2: the digits of every
// edge reach the top window, where a carry out would need one window more.
func TestMSMWindowEdges(t *testing.T) {
	_, s := testDevice(t)
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 1 << 10
	q1, q2 := distinctG1(rng, n), distinctG2(rng, n)
	set1, err := s.newBasesG1(q1, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer set1.close()
	set2, err := s.newBasesG2(q2, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer set2.close()
	defer func() {
		if err := s.setKnobs(Knobs{}); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range []int{5, 8, 9, 10, 13, 15, 16, 17, 19, 20} {
		if err := s.setKnobs(Knobs{MSMWindowG1: c, MSMWindowG2: c}); err != nil {
			t.Fatal(err)
		}
		sc := windowEdgeScalars(rng, c, n)
		var want1 bls12381.G1Jac
		if _, err := want1.MultiExp(q1, sc, ecc.MultiExpConfig{}); err != nil {
			t.Fatal(err)
		}
		got1, err := s.msmG1Host(set1, 0, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !got1.Equal(&want1) {
			t.Fatalf("G1 MSM, c = %d: mismatch\n got %s\nwant %s", c, got1.String(), want1.String())
		}
		var want2 bls12381.G2Jac
		if _, err := want2.MultiExp(q2, sc, ecc.MultiExpConfig{}); err != nil {
			t.Fatal(err)
		}
		got2, err := s.msmG2Host(set2, 0, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !got2.Equal(&want2) {
			t.Fatalf("G2 MSM, c = %d: mismatch\n got %s\nwant %s", c, got2.String(), want2.String())
		}
		for _, set := range []*baseSet{set1, set2} {
			wc, err := s.msmHostWidth(set, 0, sc)
			if err != nil {
				t.Fatal(err)
			}
			if wc != c {
				t.Fatalf("group %d MSM with the window forced to %d took %d", set.group, c, wc)
			}
		}
		t.Logf("c = %d: G1 and G2 equal gnark-crypto's", c)
	}
}

func TestMSMG2(t *testing.T) {
	_, s := testDevice(t)
	rng := rand.New(rand.NewPCG(3, 4))
	const m = 1 << 10
	q := distinctG2(rng, m)
	for _, n := range msmSizes(maxLogFor(t, 20)) {
		for _, kind := range []string{"random", "skewed", "ones", "small", "zeros"} {
			if (kind != "random" && n > 1<<16+1) || (kind != "random" && kind != "skewed" && n < 1<<16-1) {
				continue
			}
			src, neg := layout(rng, n, min(n, m), true)
			bases := tiled(q, src, neg)
			sc := scalars(rng, n, kind)
			var want bls12381.G2Jac
			if _, err := want.MultiExp(q, aggregate(m, src, neg, sc), ecc.MultiExpConfig{}); err != nil {
				t.Fatal(err)
			}
			set, err := s.newBasesG2(bases, 1<<30, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.msmG2Host(set, 0, sc)
			set.close()
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(&want) {
				t.Fatalf("G2 MSM n=%d %s: mismatch", n, kind)
			}
			t.Logf("G2 MSM n=%d %s: ok", n, kind)
		}
	}
}

// TestMSMNaive checks small MSMs against term-by-term scalar multiplication, so the
// MSM reference itself is not trusted blindly.
func TestMSMNaive(t *testing.T) {
	_, s := testDevice(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 7, 33} {
		pts := distinctG1(rng, n)
		pts = append(pts, pts[0]) // a repeated point
		pts[1].Neg(&pts[0])       // P and -P
		sc := scalars(rng, len(pts), "random")
		var want, term bls12381.G1Jac
		for i := range pts {
			var p bls12381.G1Jac
			p.FromAffine(&pts[i])
			var b big.Int
			sc[i].BigInt(&b)
			term.ScalarMultiplication(&p, &b)
			want.AddAssign(&term)
		}
		set, err := s.newBasesG1(pts, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.msmG1Host(set, 0, sc)
		set.close()
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(&want) {
			t.Fatalf("naive G1 n=%d: mismatch", len(pts))
		}
	}
}

// TestMSMStreamedAndIndexed runs MSMs over a base set kept in host memory and
// streamed in small chunks, with device scalars reached through an index map and an
// offset, as the backend uses them.
func TestMSMStreamedAndIndexed(t *testing.T) {
	c, s := testDevice(t)
	rng := rand.New(rand.NewPCG(7, 8))
	// 70000: past 2^16 points, where the window comes from the scalars' bit lengths,
	// counted through the index.
	for _, n := range []int{5000, 70000} {
		msmStreamedAndIndexed(t, c, s, rng, n)
	}
}

func msmStreamedAndIndexed(t *testing.T, c *cudaCtx, s *cudaStream, rng *rand.Rand, n int) {
	const m = 1 << 10
	q1 := distinctG1(rng, m)
	q2 := distinctG2(rng, 64)
	b1 := make([]bls12381.G1Affine, n)
	b2 := make([]bls12381.G2Affine, n)
	for i := range b1 {
		b1[i] = q1[i%m]
		b2[i] = q2[i%64]
	}
	w := scalars(rng, 2*n+10, "skewed")
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(rng.IntN(len(w) - 10))
	}
	for _, flags := range []int{0, basesForceStreamed} {
		s1, err := s.newBasesG1(b1, 0, flags)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := s.newBasesG2(b2, 0, flags)
		if err != nil {
			t.Fatal(err)
		}
		if got := s1.resident(); got != (flags == 0) {
			t.Fatalf("resident = %v with flags %d", got, flags)
		}
		if err := s.setMSMChunk(777); err != nil {
			t.Fatal(err)
		}
		wb, err := c.alloc(len(w) * fr.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		ib, err := c.alloc(len(idx) * 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.uploadFr(wb, 0, w); err != nil {
			t.Fatal(err)
		}
		if err := s.uploadU32(ib, idx); err != nil {
			t.Fatal(err)
		}
		const off, sOff = 100, 10
		cnt := n - off
		gathered := make([]fr.Element, cnt)
		for i := range gathered {
			gathered[i] = w[sOff+int(idx[i])]
		}
		var want1 bls12381.G1Jac
		want1.MultiExp(b1[off:], gathered, ecc.MultiExpConfig{})
		got1, err := s.msmG1(s1, off, cnt, wb, sOff, ib)
		if err != nil {
			t.Fatal(err)
		}
		if !got1.Equal(&want1) {
			t.Fatalf("indexed G1 n=%d (flags %d): mismatch", n, flags)
		}
		var want2 bls12381.G2Jac
		want2.MultiExp(b2[:cnt], w[sOff:sOff+cnt], ecc.MultiExpConfig{})
		got2, err := s.msmG2(s2, 0, cnt, wb, sOff, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !got2.Equal(&want2) {
			t.Fatalf("offset G2 n=%d (flags %d): mismatch", n, flags)
		}
		s.setMSMChunk(0)
		s1.close()
		s2.close()
		wb.free()
		ib.free()
	}
}

// TestMSMZeroRuns checks MSMs whose chunks hold only zero scalars (the library writes
// only nonzero digits, so such a chunk has nothing to sort), and an all-zero MSM: the
// first two chunks of 777 points are all zero, the rest witness-like, on resident and
// streamed bases, G1 and G2, against gnark-crypto.
func TestMSMZeroRuns(t *testing.T) {
	c, s := testDevice(t)
	rng := rand.New(rand.NewPCG(17, 18))
	const n = 4000
	q1 := distinctG1(rng, 1<<9)
	q2 := distinctG2(rng, 64)
	b1 := make([]bls12381.G1Affine, n)
	b2 := make([]bls12381.G2Affine, n)
	for i := range b1 {
		b1[i], b2[i] = q1[rng.IntN(len(q1))], q2[rng.IntN(len(q2))]
	}
	w := scalars(rng, 2*n, "skewed")
	for i := range 2 * 777 {
		w[i].SetZero()
	}
	for i := n; i < 2*n; i++ { // the second vector: all zero
		w[i].SetZero()
	}
	wb, err := c.alloc(len(w) * fr.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	defer wb.free()
	if err := s.uploadFr(wb, 0, w); err != nil {
		t.Fatal(err)
	}
	if err := s.setMSMChunk(777); err != nil {
		t.Fatal(err)
	}
	defer s.setMSMChunk(0)
	for _, flags := range []int{0, basesForceStreamed} {
		s1, err := s.newBasesG1(b1, 0, flags)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := s.newBasesG2(b2, 0, flags)
		if err != nil {
			t.Fatal(err)
		}
		for _, off := range []int{0, n} {
			var want1 bls12381.G1Jac
			want1.MultiExp(b1, w[off:off+n], ecc.MultiExpConfig{})
			got1, err := s.msmG1(s1, 0, n, wb, off, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want2 bls12381.G2Jac
			want2.MultiExp(b2, w[off:off+n], ecc.MultiExpConfig{})
			got2, err := s.msmG2(s2, 0, n, wb, off, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !got1.Equal(&want1) || !got2.Equal(&want2) {
				t.Fatalf("flags %d, scalars at %d: G1 equal %v, G2 equal %v", flags, off, got1.Equal(&want1), got2.Equal(&want2))
			}
		}
		s1.close()
		s2.close()
	}
}

// TestMSMBatch runs several MSMs over one base set in one batched call (strided
// scalar vectors, with and without an index map, streamed in chunks or not) and checks
// each vector's result against gnark-crypto, including all-zero and all-(r−1) vectors.
func TestMSMBatch(t *testing.T) {
	c, s := testDevice(t)
	rng := rand.New(rand.NewPCG(9, 10))
	const m = 1 << 9
	q1 := distinctG1(rng, m)
	q2 := distinctG2(rng, 64)
	var minusOne fr.Element
	minusOne.SetOne()
	minusOne.Neg(&minusOne)
	for _, tc := range []struct{ n, nb, chunk int }{{1, 2, 0}, {3, 5, 0}, {1000, 7, 0}, {4099, 17, 0}, {3000, 3, 777}} {
		n, nb := tc.n, tc.nb
		b1 := make([]bls12381.G1Affine, n)
		b2 := make([]bls12381.G2Affine, n)
		for i := range b1 {
			b1[i], b2[i] = q1[rng.IntN(m)], q2[rng.IntN(64)]
		}
		stride, sOff := n+13, 5
		w := scalars(rng, sOff+nb*stride, "random")
		for i := range n { // vector 0 all zero, vector 1 all r−1
			w[sOff+i].SetZero()
			w[sOff+stride+i] = minusOne
		}
		idx := make([]uint32, n)
		for i := range idx {
			idx[i] = uint32(rng.IntN(stride))
		}
		wb, err := c.alloc(len(w) * fr.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		ib, err := c.alloc(n * 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := firstErr(s.uploadFr(wb, 0, w), s.uploadU32(ib, idx), s.setMSMChunk(tc.chunk)); err != nil {
			t.Fatal(err)
		}
		set1, err := s.newBasesG1(b1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		set2, err := s.newBasesG2(b2, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, indexed := range []bool{false, true} {
			var ix *devBuf
			if indexed {
				ix = ib
			}
			got1, err := s.msmG1Batch(set1, 0, n, wb, sOff, stride, nb, ix)
			if err != nil {
				t.Fatal(err)
			}
			got2, err := s.msmG2Batch(set2, 0, n, wb, sOff, stride, nb, ix)
			if err != nil {
				t.Fatal(err)
			}
			for j := range nb {
				want1, want2 := batchWant(t, b1, b2, w, idx, sOff+j*stride, indexed)
				if !got1[j].Equal(&want1) || !got2[j].Equal(&want2) {
					t.Fatalf("batch n=%d nb=%d chunk=%d indexed=%v: vector %d differs (G1 %v, G2 %v)",
						n, nb, tc.chunk, indexed, j, got1[j].Equal(&want1), got2[j].Equal(&want2))
				}
			}
		}
		t.Logf("MSM batch n=%d nb=%d chunk=%d: every vector equals gnark-crypto", n, nb, tc.chunk)
		if err := firstErr(s.setMSMChunk(0), set1.close(), set2.close(), wb.free(), ib.free()); err != nil {
			t.Fatal(err)
		}
	}
}

// nttEdgeInput: n elements drawn from 0, 1, r-1 and r-2, in runs, so that whole
// butterflies see the largest sums and differences.
func nttEdgeInput(rng *rand.Rand, n int) []fr.Element {
	var one, m1, m2 fr.Element
	one.SetOne()
	m1.SetOne()
	m1.Neg(&m1)
	m2.Sub(&m1, &one)
	vals := []fr.Element{{}, one, m1, m2}
	v := make([]fr.Element, n)
	for i := 0; i < n; {
		e := vals[rng.IntN(len(vals))]
		for run := 1 + rng.IntN(8); run > 0 && i < n; run-- {
			v[i] = e
			i++
		}
	}
	return v
}

func nttLogs(t *testing.T) []int {
	logs := []int{1, 2, 5, 10, 11, 12, 16, 17, 18, 19, 20, 21, 22, 23, 24}
	maxLog := maxLogFor(t, 24)
	var out []int
	for _, l := range logs {
		if l <= maxLog {
			out = append(out, l)
		}
	}
	return out
}

// TestNTT checks the library's NTTs against gnark-crypto's FFT, all four directions,
// at sizes that take every kind of pass the domain's plan launches: radix-2 passes
// (fewer than 8 stages), the bounded radix-4 passes of 8 stages with Montgomery's or
// Shoup's twiddles, one or four groups a block, the radix-4 passes of 9 and 10 stages
// (2^17 to 2^20), 2^22's and 2^23's uneven first pass, and 2^24's mixed first pass.
// Up to 2^16 each size also runs on edge values (0, 1, r-1, r-2), whose sums and
// differences reach the reductions' bounds.
func TestNTT(t *testing.T) {
	c, s := testDevice(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, logN := range nttLogs(t) {
		n := 1 << logN
		dom := fft.NewDomain(uint64(n))
		d, err := s.newDomain(dom)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := c.alloc(n * fr.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		random := make([]fr.Element, n)
		randFr(rng, random)
		inputs := [][]fr.Element{random}
		if logN <= 16 {
			inputs = append(inputs, nttEdgeInput(rng, n))
		}
		for ii, in := range inputs {
			for _, tc := range []struct {
				name  string
				flags int
				ref   func(a []fr.Element)
			}{
				{"fft DIF", 0, func(a []fr.Element) { dom.FFT(a, fft.DIF) }},
				{"fft DIT", nttDIT, func(a []fr.Element) { dom.FFT(a, fft.DIT) }},
				{"ifft DIF", nttInverse, func(a []fr.Element) { dom.FFTInverse(a, fft.DIF) }},
				{"ifft DIT", nttInverse | nttDIT, func(a []fr.Element) { dom.FFTInverse(a, fft.DIT) }},
			} {
				want := append([]fr.Element(nil), in...)
				tc.ref(want)
				if err := s.uploadFr(buf, 0, in); err != nil {
					t.Fatal(err)
				}
				if err := s.ntt(d, buf, 0, tc.flags); err != nil {
					t.Fatal(err)
				}
				got := make([]fr.Element, n)
				if err := s.downloadFr(buf, 0, got); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("NTT 2^%d %s, input %d: element %d differs", logN, tc.name, ii, i)
					}
				}
			}
		}
		t.Logf("NTT 2^%d: fft/ifft DIF/DIT ok (%d inputs)", logN, len(inputs))
		d.close()
		buf.free()
	}
}

// refComputeH is gnark v0.14.0's computeH (backend/groth16/bls12-381/prove.go).
func refComputeH(a, b, c []fr.Element, domain *fft.Domain) []fr.Element {
	n := len(a)
	padding := make([]fr.Element, int(domain.Cardinality)-n)
	a = append(a, padding...)
	b = append(b, padding...)
	c = append(c, padding...)
	n = len(a)
	domain.FFTInverse(a, fft.DIF)
	domain.FFTInverse(b, fft.DIF)
	domain.FFTInverse(c, fft.DIF)
	domain.FFT(a, fft.DIT, fft.OnCoset())
	domain.FFT(b, fft.DIT, fft.OnCoset())
	domain.FFT(c, fft.DIT, fft.OnCoset())
	var den, one fr.Element
	one.SetOne()
	den.Exp(domain.FrMultiplicativeGen, new(bigInt).SetUint64(domain.Cardinality))
	den.Sub(&den, &one).Inverse(&den)
	for i := 0; i < n; i++ {
		a[i].Mul(&a[i], &b[i]).Sub(&a[i], &c[i]).Mul(&a[i], &den)
	}
	domain.FFTInverse(a, fft.DIF, fft.OnCoset())
	return a
}

// abProduct sets c = a∘b: the C of a satisfied system, which compute_h makes itself.
func abProduct(c, a, b []fr.Element) {
	for i := range c {
		c[i].Mul(&a[i], &b[i])
	}
}

func TestComputeH(t *testing.T) {
	c, s := testDevice(t)
	rng := rand.New(rand.NewPCG(11, 12))
	maxLog := maxLogFor(t, 22)
	for _, nc := range []int{1, 2, 3, 5, 1000, 1 << 12, 1<<16 - 3, 1<<20 + 1, 1 << 22} {
		if bits.Len(uint(nc-1)) > maxLog {
			continue
		}
		dom := fft.NewDomain(uint64(nc))
		n := int(dom.Cardinality)
		a, b, cc := make([]fr.Element, nc), make([]fr.Element, nc), make([]fr.Element, nc)
		randFr(rng, a)
		randFr(rng, b)
		abProduct(cc, a, b) // a satisfied system's C
		const off = 7       // h goes to an offset inside the a buffer, as the backend does
		d, err := s.newDomain(dom)
		if err != nil {
			t.Fatal(err)
		}
		ab, err1 := c.alloc((off + n) * fr.Bytes)
		bb, err2 := c.alloc(n * fr.Bytes)
		cb, err3 := c.alloc(n * fr.Bytes)
		if err := firstErr(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		// The c buffer's contents must not be read: random values, not C.
		junk := make([]fr.Element, n)
		randFr(rng, junk)
		if err := firstErr(s.uploadFr(ab, off, a), s.uploadFr(bb, 0, b), s.uploadFr(cb, 0, junk)); err != nil {
			t.Fatal(err)
		}
		if err := s.computeH(d, ab, off, bb, cb, nc); err != nil {
			t.Fatal(err)
		}
		got := make([]fr.Element, n)
		if err := s.downloadFr(ab, off, got); err != nil {
			t.Fatal(err)
		}
		want := refComputeH(a, b, cc, dom)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("compute_h %d constraints (domain %d): element %d differs", nc, n, i)
			}
		}
		t.Logf("compute_h %d constraints (domain %d): ok", nc, n)
		d.close()
		ab.free()
		bb.free()
		cb.free()
	}
}

// TestComputeHBatch runs H for several solutions in one call, their a vectors spaced
// apart inside one buffer as the backend's batch slots are, and checks each against
// gnark's computeH and that nothing between the vectors changed.
func TestComputeHBatch(t *testing.T) {
	c, s := testDevice(t)
	rng := rand.New(rand.NewPCG(21, 22))
	maxLog := maxLogFor(t, 16)
	for _, tc := range []struct{ nc, count int }{
		{1, 3}, {3, 1}, {1000, 5}, {1 << 12, 16}, {1<<14 - 5, 16}, {1<<16 - 1, 3},
	} {
		if bits.Len(uint(tc.nc-1)) > maxLog {
			continue
		}
		dom := fft.NewDomain(uint64(tc.nc))
		n := int(dom.Cardinality)
		// a vector j at aOff + j*aStride, with a gap of other data before each; b and c at
		// bcOff + j*n.
		const aOff, gap, bcOff = 5, 11, 3
		aStride := n + gap
		abuf := make([]fr.Element, aOff+tc.count*aStride)
		randFr(rng, abuf)
		b, cc := make([]fr.Element, bcOff+tc.count*n), make([]fr.Element, bcOff+tc.count*n)
		randFr(rng, b)
		randFr(rng, cc) // the device's c buffer: scratch, its contents never read
		d, err := s.newDomain(dom)
		if err != nil {
			t.Fatal(err)
		}
		ab, err1 := c.alloc(len(abuf) * fr.Bytes)
		bb, err2 := c.alloc(len(b) * fr.Bytes)
		cb, err3 := c.alloc(len(cc) * fr.Bytes)
		if err := firstErr(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		if err := firstErr(s.uploadFr(ab, 0, abuf), s.uploadFr(bb, 0, b), s.uploadFr(cb, 0, cc)); err != nil {
			t.Fatal(err)
		}
		if err := s.computeHBatch(d, ab, aOff, aStride, bb, cb, bcOff, n, tc.count, tc.nc); err != nil {
			t.Fatal(err)
		}
		got := make([]fr.Element, len(abuf))
		if err := s.downloadFr(ab, 0, got); err != nil {
			t.Fatal(err)
		}
		want := append([]fr.Element(nil), abuf...)
		for j := 0; j < tc.count; j++ {
			at, bc := aOff+j*aStride, bcOff+j*n
			c := make([]fr.Element, tc.nc)
			abProduct(c, abuf[at:at+tc.nc], b[bc:bc+tc.nc])
			h := refComputeH(append([]fr.Element(nil), abuf[at:at+tc.nc]...), append([]fr.Element(nil), b[bc:bc+tc.nc]...), c, dom)
			copy(want[at:], h)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("compute_h batch of %d, %d constraints (domain %d): element %d of the a buffer differs", tc.count, tc.nc, n, i)
			}
		}
		t.Logf("compute_h batch of %d, %d constraints (domain %d): ok", tc.count, tc.nc, n)
		d.close()
		ab.free()
		bb.free()
		cb.free()
	}
	// A batch whose last vector would run past its buffer is refused.
	dom := fft.NewDomain(64)
	d, err := s.newDomain(dom)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	ab, err1 := c.alloc(3 * 64 * fr.Bytes)
	bb, err2 := c.alloc(3 * 64 * fr.Bytes)
	if err := firstErr(err1, err2); err != nil {
		t.Fatal(err)
	}
	defer ab.free()
	defer bb.free()
	for _, bad := range []struct {
		name                     string
		aOff, aStride, bcOff, bs int
		count                    int
	}{
		{"a past the end", 1, 64, 0, 64, 3},
		{"b past the end", 0, 64, 1, 64, 3},
		{"stride below the domain", 0, 63, 0, 64, 2},
		{"count 0", 0, 64, 0, 64, 0},
	} {
		if err := s.computeHBatch(d, ab, bad.aOff, bad.aStride, bb, bb, bad.bcOff, bad.bs, bad.count, 64); err == nil {
			t.Errorf("compute_h batch, %s: accepted", bad.name)
		} else {
			t.Logf("compute_h batch, %s: %v", bad.name, err)
		}
	}
}

// TestUploadGather uploads pieces of many sizes into several buffers through a small
// staging buffer, so pieces share a fill, span fills and are split, the buffer's two
// slots are reused many times and several threads copy (over 2 MiB in all), and
// checks every byte landed where asked and nothing else changed; a batch with one
// piece out of range is refused before anything is copied.
func TestUploadGather(t *testing.T) {
	c, _ := testDevice(t)
	s, err := c.newStream(64 << 10) // two halves of 1,024 elements
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	rng := rand.New(rand.NewPCG(31, 32))
	const size = 40000
	bufs := make([]*devBuf, 3)
	host := make([][]fr.Element, 3)
	for i := range bufs {
		if bufs[i], err = c.alloc(size * fr.Bytes); err != nil {
			t.Fatal(err)
		}
		defer bufs[i].free()
		host[i] = make([]fr.Element, size)
		randFr(rng, host[i])
		if err := s.uploadFr(bufs[i], 0, host[i]); err != nil {
			t.Fatal(err)
		}
	}
	var pieces []upload
	at := []int{0, 0, 0}
	for k, n := range []int{0, 1, 3, 1023, 1024, 1025, 2500, 7, 0, 2049, 300, 20000, 15000, 30000, 9000, 17000} {
		i := k % 3
		if at[i]+n > size {
			continue
		}
		v := make([]fr.Element, n)
		randFr(rng, v)
		pieces = append(pieces, upload{bufs[i], at[i], v})
		copy(host[i][at[i]:], v)
		at[i] += n + 2 // leave two elements between pieces unchanged
	}
	if err := s.uploadGather(pieces); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		for i := range bufs {
			got := make([]fr.Element, size)
			if err := s.downloadFr(bufs[i], 0, got); err != nil {
				t.Fatal(err)
			}
			for j := range got {
				if got[j] != host[i][j] {
					t.Fatalf("%s: buffer %d element %d differs", what, i, j)
				}
			}
		}
	}
	check("gathered upload")
	bad := []upload{{bufs[0], 0, make([]fr.Element, 10)}, {bufs[1], size - 1, make([]fr.Element, 2)}}
	if err := s.uploadGather(bad); err == nil {
		t.Fatal("a piece past its buffer's end was accepted")
	} else {
		t.Logf("piece out of range: %v", err)
	}
	check("refused upload") // the valid first piece was not copied either
	t.Logf("%d pieces, %d elements, through a staging buffer of 2 x 1,024 elements: ok", len(pieces), at[0]+at[1]+at[2])
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func TestUnavailableWithoutLibrary(t *testing.T) {
	t.Setenv("CUZK_GPU_LIB", "/nonexistent/libcuzkgpu.so")
	_, err := NewCUDA(0, Options{})
	if err == nil || !IsUnavailable(err) {
		t.Fatalf("NewCUDA without library: %v, want unavailable", err)
	}
	if got := err.Error(); len(got) < 12 || got[:12] != "unavailable:" {
		t.Fatalf("error %q does not start with unavailable:", got)
	}
}
