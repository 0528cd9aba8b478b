package gpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/prover"
)

// TestMSMPrecomputed checks MSMs over precomputed base sets (shifted copies on the
// device, windows sharing buckets) against gnark-crypto: G1 and G2, sizes around
// powers of two, random and witness-like scalars with zeros and r−1, repeated,
// negated and infinite points, sub-ranges, several copy limits, and batched, indexed
// and chunked calls.
func TestMSMPrecomputed(t *testing.T) {
	c, s := testDevice(t)
	rng := rand.New(rand.NewPCG(21, 22))
	const m = 1 << 10
	q1, q2 := distinctG1(rng, m), distinctG2(rng, 64)
	maxLog := maxLogFor(t, 20)
	for i, n := range msmSizes(maxLog) {
		copies := []int{2, 3, 16}[i%3]
		for _, kind := range []string{"random", "skewed", "witness"} {
			src, neg := layout(rng, n, min(n, m), true)
			b1 := tiled(q1, src, neg)
			sc := scalars(rng, n, kind)
			off := n / 3
			var want, wantOff bls12381.G1Jac
			want.MultiExp(q1, aggregate(m, src, neg, sc), ecc.MultiExpConfig{})
			wantOff.MultiExp(q1, aggregate(m, src[off:], neg[off:], sc[off:]), ecc.MultiExpConfig{})
			set, err := s.newBasesG1(b1, 1<<30, 0)
			if err != nil {
				t.Fatal(err)
			}
			cw, k, ok, err := set.precompute(s, copies, 1<<30)
			if err != nil || !ok {
				set.close()
				t.Fatalf("precompute G1 n=%d copies=%d: ok=%v err=%v", n, copies, ok, err)
			}
			got, err := s.msmG1Host(set, 0, sc)
			if err == nil && !got.Equal(&want) {
				t.Errorf("G1 n=%d %s c=%d copies=%d: mismatch", n, kind, cw, k)
			}
			if err == nil && n >= 1<<16 && kind != "skewed" {
				checkCopiesOrDensity(t, s, set, sc, kind, cw, k)
			}
			gotOff, err2 := s.msmG1Host(set, off, sc[off:])
			set.close()
			if err = firstErr(err, err2); err != nil {
				t.Fatal(err)
			}
			if !gotOff.Equal(&wantOff) {
				t.Errorf("G1 n=%d %s c=%d copies=%d from %d: mismatch", n, kind, cw, k, off)
			}
		}
		if n > 1<<16+1 {
			continue // G2 to 2^16: its reference is slow on the CPU
		}
		for _, kind := range []string{"random", "witness"} {
			if kind == "witness" && n < 1<<16-1 {
				continue
			}
			src, neg := layout(rng, n, min(n, 64), true)
			b2 := tiled(q2, src, neg)
			sc := scalars(rng, n, kind)
			var want bls12381.G2Jac
			want.MultiExp(q2, aggregate(64, src, neg, sc), ecc.MultiExpConfig{})
			set, err := s.newBasesG2(b2, 1<<30, 0)
			if err != nil {
				t.Fatal(err)
			}
			cw, k, ok, err := set.precompute(s, copies, 1<<30)
			if err != nil || !ok {
				set.close()
				t.Fatalf("precompute G2 n=%d copies=%d: ok=%v err=%v", n, copies, ok, err)
			}
			got, err := s.msmG2Host(set, 0, sc)
			if err == nil && n >= 1<<16 {
				checkCopiesOrDensity(t, s, set, sc, kind, cw, k)
			}
			set.close()
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(&want) {
				t.Errorf("G2 n=%d %s c=%d copies=%d: mismatch", n, kind, cw, k)
			}
		}
	}

	// Batched, indexed and chunked calls over one precomputed set of each group.
	const n, nb, stride, sOff = 3001, 5, 3001 + 7, 3
	b1 := make([]bls12381.G1Affine, n)
	b2 := make([]bls12381.G2Affine, n)
	for i := range b1 {
		b1[i], b2[i] = q1[rng.IntN(m)], q2[rng.IntN(64)]
	}
	w := scalars(rng, sOff+nb*stride, "random")
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(rng.IntN(stride))
	}
	wb, err := c.alloc(len(w) * fr.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	defer wb.free()
	ib, err := c.alloc(n * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ib.free()
	set1, err := s.newBasesG1(b1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer set1.close()
	set2, err := s.newBasesG2(b2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer set2.close()
	for _, set := range []*baseSet{set1, set2} {
		if _, _, ok, err := set.precompute(s, 4, 0); err != nil || !ok {
			t.Fatalf("precompute: ok=%v err=%v", ok, err)
		}
	}
	if err := firstErr(s.uploadFr(wb, 0, w), s.uploadU32(ib, idx)); err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{0, 777} {
		if err := s.setMSMChunk(chunk); err != nil {
			t.Fatal(err)
		}
		for _, ix := range []*devBuf{nil, ib} {
			got1, err := s.msmG1Batch(set1, 0, n, wb, sOff, stride, nb, ix)
			if err != nil {
				t.Fatal(err)
			}
			got2, err := s.msmG2Batch(set2, 0, n, wb, sOff, stride, nb, ix)
			if err != nil {
				t.Fatal(err)
			}
			for j := range nb {
				want1, want2 := batchWant(t, b1, b2, w, idx, sOff+j*stride, ix != nil)
				if !got1[j].Equal(&want1) || !got2[j].Equal(&want2) {
					t.Errorf("batch vector %d (chunk %d, indexed %v): G1 ok %v, G2 ok %v", j, chunk,
						ix != nil, got1[j].Equal(&want1), got2[j].Equal(&want2))
				}
			}
		}
	}
	if err := s.setMSMChunk(0); err != nil {
		t.Fatal(err)
	}
}

// checkCopiesOrDensity checks which way an MSM of 2^16 points or more went over a
// set precomputed as c-bit windows in k copies: random scalars over the copies (their
// window spans c·k bits), a sparse witness over the first copy at a narrower density
// window (msm_density_over_copies).
func checkCopiesOrDensity(t *testing.T, s *cudaStream, set *baseSet, sc []fr.Element, kind string, c, k int) {
	t.Helper()
	width, err := s.msmHostWidth(set, 0, sc)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case kind == "random" && width != c*k:
		t.Errorf("%s scalars, n=%d over %d copies of c=%d: window %d bits, want the copies' %d", kind, len(sc), k, c, width, c*k)
	case kind == "witness" && (width >= c || width < 8):
		t.Errorf("%s scalars, n=%d over %d copies of c=%d: window %d bits, want the density window (8..%d)", kind, len(sc), k, c, width, c-1)
	}
}

// TestPrecomputeRefusals: a streamed set cannot be precomputed (a precise error), a
// set whose copies do not fit stays usable as it was, and a second call changes
// nothing.
func TestPrecomputeRefusals(t *testing.T) {
	_, s := testDevice(t)
	rng := rand.New(rand.NewPCG(23, 24))
	pts := distinctG1(rng, 1000)
	streamed, err := s.newBasesG1(pts, 0, basesForceStreamed)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ok, err := streamed.precompute(s, 4, 0)
	streamed.close()
	if ok || err == nil {
		t.Fatalf("streamed set: ok=%v err=%v, want an error", ok, err)
	}
	set, err := s.newBasesG1(pts, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer set.close()
	before := set.deviceBytes()
	if _, _, ok, err := set.precompute(s, 4, 1<<62); ok || err != nil {
		t.Fatalf("copies beyond device memory: ok=%v err=%v, want not done and no error", ok, err)
	}
	if set.deviceBytes() != before {
		t.Fatalf("device bytes %d after a refused precomputation, want %d", set.deviceBytes(), before)
	}
	c1, k1, ok, err := set.precompute(s, 4, 0)
	if err != nil || !ok || k1 < 2 || set.deviceBytes() != before*int64(k1) {
		t.Fatalf("precompute: c=%d copies=%d ok=%v err=%v bytes %d (one copy %d)", c1, k1, ok, err, set.deviceBytes(), before)
	}
	c2, k2, ok, err := set.precompute(s, 16, 0)
	if err != nil || !ok || c2 != c1 || k2 != k1 {
		t.Fatalf("second precompute: c=%d copies=%d ok=%v err=%v, want the first shape %d/%d", c2, k2, ok, err, c1, k1)
	}
	sc := scalars(rng, len(pts), "random")
	var want bls12381.G1Jac
	want.MultiExp(pts, sc, ecc.MultiExpConfig{})
	got, err := s.msmG1Host(set, 0, sc)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&want) {
		t.Fatal("MSM over the precomputed set: mismatch")
	}
}

// TestPrecomputeAuto: under Options.PrecomputeAuto (the worker's --gpu-precompute auto)
// a key proven in batches gets copies of its bases, each set with its copies within
// 1/32 of the key memory; a key proven one at a time gets copies of every set when 16
// times its bases fit within half the key memory, and none otherwise.
func TestPrecomputeAuto(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	q1, q2 := distinctG1(rng, 1<<10), distinctG2(rng, 1<<8)
	small, _ := timingKey(t, 12, q1, q2)
	large, _ := timingKey(t, 20, q1, q2)
	if batchCap(small.DomainSize()) < 2 || batchCap(large.DomainSize()) > 1 {
		t.Fatalf("batch caps %d and %d: the test needs a batched and an unbatched key",
			batchCap(small.DomainSize()), batchCap(large.DomainSize()))
	}
	ctx := context.Background()
	load := func(b *CUDA, pk *prover.ProvingKey) *cudaKey {
		k, err := b.LoadKey(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k.(*cudaKey)
	}
	sets := func(k *cudaKey) map[string]*baseSet {
		return map[string]*baseSet{"A": k.a, "B1": k.b1, "K‖Z": k.kz, "B2": k.b2}
	}
	one := func(set *baseSet) int64 { return int64(set.count) * 96 * int64(set.group) } // G2 points: twice G1's bytes
	copyBytes := func(k *cudaKey) (c int64) {
		for _, set := range sets(k) {
			c += set.deviceBytes() - one(set)
		}
		return c
	}

	// The share allows about five copies of K‖Z, fewer than the 16 asked for.
	kz := int64(len(small.KZ)) * 96
	limit := 32 * (5*kz + kz/2)
	ks := load(testBackendWith(t, Options{PrecomputeCopies: 16, PrecomputeAuto: true, KeyMemoryBytes: limit}), small)
	for name, set := range sets(ks) {
		if got := set.deviceBytes(); got < 2*one(set) || got > limit/32 {
			t.Errorf("batched key, %s: %d device bytes for %d points, want copies (at least %d) within %d",
				name, got, set.count, 2*one(set), limit/32)
		}
	}
	if ks.PrecomputedBytes() != copyBytes(ks) {
		t.Errorf("batched key: PrecomputedBytes %d, want the copies' %d", ks.PrecomputedBytes(), copyBytes(ks))
	}

	// The device's own memory holds 16 times a 2^20 key's bases (about 10 GiB) twice.
	kl := load(testBackendWith(t, Options{PrecomputeCopies: 16, PrecomputeAuto: true}), large)
	for name, set := range sets(kl) {
		if got := set.deviceBytes(); got < 2*one(set) {
			t.Errorf("unbatched key, %s: %d device bytes, want copies (at least %d)", name, got, 2*one(set))
		}
	}
	if kl.PrecomputedBytes() != copyBytes(kl) || kl.PrecomputedBytes() == 0 {
		t.Errorf("unbatched key: PrecomputedBytes %d, want the copies' %d", kl.PrecomputedBytes(), copyBytes(kl))
	}

	// A key memory of 16 times the bases: the key fits, half of it does not hold the copies.
	var bases int64
	for _, set := range sets(kl) {
		bases += one(set)
	}
	kn := load(testBackendWith(t, Options{PrecomputeCopies: 16, PrecomputeAuto: true, KeyMemoryBytes: 16 * bases}), large)
	for name, set := range sets(kn) {
		if got := set.deviceBytes(); got != one(set) {
			t.Errorf("unbatched key under a limit, %s: %d device bytes, want %d (no copies)", name, got, one(set))
		}
	}
	if p := kn.PrecomputedBytes(); p != 0 {
		t.Errorf("unbatched key under a limit: PrecomputedBytes %d, want 0", p)
	}
}
