package gpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/synth"
)

// benchStream times what streaming a key's bases from pinned host memory costs
// against keeping them resident, in the same run: the G1 and G2 MSMs over one base set
// made both ways (interleaved runs, results equal to each other and, for G1, to
// gnark-crypto's), then whole proofs on a dense timing key loaded resident and then
// with a key memory limit of one byte, which streams every base set.
func benchStream(t *testing.T, c *cudaCtx, s *cudaStream, logN int, q1 []bls12381.G1Affine, q2 []bls12381.G2Affine) {
	n := 1 << logN
	sc := make([]fr.Element, n)
	randFr(rand.New(rand.NewPCG(uint64(logN), 7)), sc)
	wb := uploadedFr(t, c, s, sc)
	defer wb.free()
	b1 := make([]bls12381.G1Affine, n)
	for i := range b1 {
		b1[i] = q1[i%len(q1)]
	}
	var r1 [2]bls12381.G1Jac
	pair(t, "stream_msm_g1", logN, func(set *baseSet, i int) (err error) {
		r1[i], err = s.msmG1(set, 0, n, wb, 0, nil)
		return err
	}, func(flags int) (*baseSet, error) { return s.newBasesG1(b1, 4<<30, flags) })
	if !r1[0].Equal(&r1[1]) {
		t.Errorf("G1 MSM 2^%d: streamed result differs from resident", logN)
	}
	var want bls12381.G1Jac
	want.MultiExp(b1, sc, ecc.MultiExpConfig{})
	if !want.Equal(&r1[1]) {
		t.Errorf("G1 MSM 2^%d streamed: result differs from gnark-crypto", logN)
	}
	b1 = nil
	b2 := make([]bls12381.G2Affine, n)
	for i := range b2 {
		b2[i] = q2[i%len(q2)]
	}
	var r2 [2]bls12381.G2Jac
	pair(t, "stream_msm_g2", logN, func(set *baseSet, i int) (err error) {
		r2[i], err = s.msmG2(set, 0, n, wb, 0, nil)
		return err
	}, func(flags int) (*baseSet, error) { return s.newBasesG2(b2, 4<<30, flags) })
	if !r2[0].Equal(&r2[1]) {
		t.Errorf("G2 MSM 2^%d: streamed result differs from resident", logN)
	}
	b2 = nil

	ctx := context.Background()
	pk, newSol := timingKey(t, logN, q1, q2)
	var prove [2]time.Duration
	var bytes [2]int64
	for i, opt := range []Options{{}, {KeyMemoryBytes: 1}} {
		be := testBackendWith(t, opt)
		t0 := time.Now()
		key, err := be.LoadKey(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		load := time.Since(t0)
		bytes[i] = key.Bytes()
		// A proof releases its solution's vectors: each run proves a fresh one, made
		// outside the timing (random solutions take longer than a proof).
		var d []time.Duration
		for r := range 4 {
			sol := []*synth.Solution{newSol()}
			t0 := time.Now()
			if _, _, err := be.Prove(ctx, key, sol); err != nil {
				t.Fatal(err)
			}
			if r > 0 {
				d = append(d, time.Since(t0))
			}
		}
		slices.Sort(d)
		prove[i] = d[len(d)/2]
		fmt.Printf("BENCH stream_prove 2^%d %s loadkey_ms=%.1f device_key_bytes=%d prove_ms=%.1f (min %.1f, %d runs)\n",
			logN, []string{"resident", "streamed"}[i], ms(load), bytes[i], ms(prove[i]), ms(d[0]), len(d))
		key.Close()
		be.Close()
	}
	fmt.Printf("BENCH stream_prove 2^%d streamed/resident=%.2fx\n", logN, float64(prove[1])/float64(prove[0]))
}

// pair times run over a base set made resident and one made streamed, alternating
// five rounds each after a warm-up, and prints both medians and their ratio; run's
// second argument is 0 for the resident set and 1 for the streamed one.
func pair(t *testing.T, op string, logN int, run func(*baseSet, int) error, mk func(flags int) (*baseSet, error)) {
	var sets [2]*baseSet
	for i, flags := range []int{0, basesForceStreamed} {
		set, err := mk(flags)
		if err != nil {
			t.Fatal(err)
		}
		defer set.close()
		sets[i] = set
	}
	var d [2][]time.Duration
	for r := range 6 {
		for i := range sets {
			t0 := time.Now()
			if err := run(sets[i], i); err != nil {
				t.Fatal(err)
			}
			if r > 0 {
				d[i] = append(d[i], time.Since(t0))
			}
		}
	}
	for i := range d {
		slices.Sort(d[i])
	}
	res, str := d[0][len(d[0])/2], d[1][len(d[1])/2]
	fmt.Printf("BENCH %s 2^%d resident_ms=%.2f streamed_ms=%.2f streamed/resident=%.2fx (5 runs each)\n",
		op, logN, ms(res), ms(str), float64(str)/float64(res))
}
