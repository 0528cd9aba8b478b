package gpu

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/bench"
	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// TestGPUBench times the device beside gnark-crypto on this host's cores, in the same
// run, and prints one BENCH line per measurement. It runs only with CUZK_GPU_BENCH=1
// (scripts/gpu-check.sh sets it). CUZK_GPU_BENCH_LOGS limits the sizes, e.g. "20,22".
// Bases are 2^16 distinct random points tiled to the size, as the reference numbers in
// the project's anchors were taken; scalars are full-size random.
func TestGPUBench(t *testing.T) {
	if os.Getenv("CUZK_GPU_BENCH") != "1" {
		t.Skip("set CUZK_GPU_BENCH=1 to run the GPU benchmarks")
	}
	c, s := testDevice(t)
	logs := []int{20, 22, 24}
	if v := os.Getenv("CUZK_GPU_BENCH_LOGS"); v != "" {
		logs = nil
		for _, f := range strings.Split(v, ",") {
			var l int
			fmt.Sscan(f, &l)
			logs = append(logs, l)
		}
	}
	cpuRef := os.Getenv("CUZK_GPU_BENCH_CPU") != "0"
	// CUZK_GPU_BENCH_OPS limits the operations (g1, g1skew, g2, ntt, prove, batch; g1distinct, g2distinct, keyload, stream and witness only when named), e.g. "g1,ntt";
	// default all.
	ops := os.Getenv("CUZK_GPU_BENCH_OPS")
	named := func(op string) bool { return slices.Contains(strings.Split(ops, ","), op) }
	want := func(op string) bool { return ops == "" || named(op) }
	rng := rand.New(rand.NewPCG(21, 22))
	const distinct = 1 << 16
	q1 := distinctG1(rng, distinct)
	q2 := distinctG2(rng, distinct)
	maxN := 1 << slices.Max(logs)
	sc := make([]fr.Element, maxN)
	randFr(rng, sc)
	wb, err := c.alloc(maxN * fr.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	defer wb.free()
	if err := s.uploadFr(wb, 0, sc); err != nil {
		t.Fatal(err)
	}
	report := func(op string, logN int, gpu []time.Duration, cpu time.Duration) {
		slices.Sort(gpu)
		med := gpu[len(gpu)/2]
		line := fmt.Sprintf("BENCH %-8s 2^%d gpu_ms=%.2f (min %.2f, %d runs)", op, logN, ms(med), ms(gpu[0]), len(gpu))
		if cpu > 0 {
			line += fmt.Sprintf(" cpu_ms=%.1f (%d cores) speedup=%.1fx", ms(cpu), runtime.NumCPU(), float64(cpu)/float64(med))
		}
		t.Log(line)
		fmt.Println(line)
	}
	for _, logN := range logs {
		if want("g1") {
			benchMSMG1(t, s, q1, wb, sc, logN, cpuRef, report)
		}
		if want("g1skew") {
			// Witness-like scalars (60% ones, 20% zeros): one bucket of window 0 holds
			// most points. The reference is the same MSM with the library's default c.
			sk := scalars(rng, 1<<logN, "skewed")
			kb, err := c.alloc(len(sk) * fr.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.uploadFr(kb, 0, sk); err != nil {
				t.Fatal(err)
			}
			benchMSMG1Named(t, "msm_g1_skewed", s, q1, kb, sk, logN, cpuRef, report)
			kb.free()
		}
		if want("g2") {
			benchMSMG2(t, s, "msm_g2", q2, wb, sc, logN, cpuRef, report)
		}
		// Distinct bases (r_i·G, made on the device) as a real key's: the MSM gathers
		// them from device memory, where the tiled 2^16 stay in L2. The CPU reference
		// only up to 2^22.
		if named("g1distinct") {
			b, _ := distinctBases(t, rng, 1<<logN, true)
			benchMSMG1Named(t, "msm_g1_distinct", s, b, wb, sc, logN, cpuRef && logN <= 22, report)
		}
		if named("g2distinct") {
			_, b := distinctBases(t, rng, 1<<logN, false)
			benchMSMG2(t, s, "msm_g2_distinct", b, wb, sc, logN, cpuRef && logN <= 22, report)
		}
		// The NTT below 2^22 only when named (its plans at 2^20 and 2^21 are A/B runs).
		if want("ntt") && (logN >= 22 || named("ntt")) {
			benchNTT(t, s, wb, sc, logN, cpuRef, report)
		}
	}
	if want("batch") {
		// Small circuits: a batch in one pass against the same proofs one at a time.
		// CUZK_GPU_BENCH_BATCH_LOGS: sizes (default 12,14,16).
		for _, f := range strings.Split(cmp.Or(os.Getenv("CUZK_GPU_BENCH_BATCH_LOGS"), "12,14,16"), ",") {
			var l int
			fmt.Sscan(f, &l)
			benchSmallBatch(t, l, 16, q1, q2)
		}
	}
	if named("witness") { // opt-in, as keyload: they compile circuits and write keys
		// CUZK_GPU_BENCH_WITNESS: built-in circuits whose solved witnesses are timed.
		for _, name := range strings.Split(cmp.Or(os.Getenv("CUZK_GPU_BENCH_WITNESS"),
			"sha256-preimage-b2048,merkle-poseidon2-d20-c256"), ",") {
			benchWitness(t, c, s, q1, q2, name, rng, report)
		}
	}
	if named("stream") {
		// CUZK_GPU_BENCH_STREAM_LOGS: sizes (default 24).
		for _, f := range strings.Split(cmp.Or(os.Getenv("CUZK_GPU_BENCH_STREAM_LOGS"), "24"), ",") {
			var l int
			fmt.Sscan(f, &l)
			benchStream(t, c, s, l, q1, q2)
		}
	}
	if named("keyload") {
		// CUZK_GPU_BENCH_KEYLOAD_LOGS: sizes (default 18,20,22); pk.bin is parsed too up to
		// CUZK_GPU_BENCH_KEYLOAD_OLD (default 18: at 2^22 it took minutes).
		oldMax := envInt("CUZK_GPU_BENCH_KEYLOAD_OLD", 18)
		for _, f := range strings.Split(cmp.Or(os.Getenv("CUZK_GPU_BENCH_KEYLOAD_LOGS"), "18,20,22"), ",") {
			var l int
			fmt.Sscan(f, &l)
			benchKeyLoad(t, l, q1, q2, l <= oldMax, report)
		}
	}
	for _, logN := range logs {
		if logN > 22 || !want("prove") {
			continue
		}
		benchProve(t, logN, q1, q2, Options{}, "prove", cpuRef, report)
		// CUZK_GPU_BENCH_PRECOMPUTE_AUTO=1: the copies as the worker's --gpu-precompute
		// auto makes them (Options.PrecomputeAuto), op prove_auto.
		if copies := envInt("CUZK_GPU_BENCH_PRECOMPUTE", 0); copies > 1 {
			auto := os.Getenv("CUZK_GPU_BENCH_PRECOMPUTE_AUTO") == "1"
			benchProve(t, logN, q1, q2, Options{PrecomputeCopies: copies, PrecomputeAuto: auto},
				map[bool]string{false: "prove_pc", true: "prove_auto"}[auto], false, report)
		}
	}
}

// benchPrecomputed times an MSM again over the same set with CUZK_GPU_BENCH_PRECOMPUTE
// copies (when set): the precomputation once ("<op>_pcbuild"), then the MSM
// ("<op>_pc"), whose result must equal ref.
func benchPrecomputed(t *testing.T, op string, s *cudaStream, set *baseSet, logN int, report reporter,
	run func() error, same func() bool) {
	copies := envInt("CUZK_GPU_BENCH_PRECOMPUTE", 0)
	if copies < 2 {
		return
	}
	t0 := time.Now()
	c, k, ok, err := set.precompute(s, copies, 4<<30)
	build := time.Since(t0)
	if err != nil || !ok {
		t.Errorf("%s 2^%d: precompute: ok=%v err=%v", op, logN, ok, err)
		return
	}
	report(fmt.Sprintf("%s_pcbuild c=%d copies=%d", op, c, k), logN, []time.Duration{build}, 0)
	gpu := timeRuns(t, 5, run)
	if !same() {
		t.Errorf("%s 2^%d precomputed: result differs", op, logN)
	}
	profileOnce(func() { run() })
	report(op+"_pc", logN, gpu, 0)
}

type reporter func(op string, logN int, gpu []time.Duration, cpu time.Duration)

// timeRuns times runs calls of f after one untimed call (which sizes the scratch).
func timeRuns(t *testing.T, runs int, f func() error) []time.Duration {
	var d []time.Duration
	for r := range runs + 1 {
		t0 := time.Now()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if r > 0 {
			d = append(d, time.Since(t0))
		}
	}
	return d
}

func benchMSMG1(t *testing.T, s *cudaStream, q []bls12381.G1Affine, wb *devBuf, sc []fr.Element, logN int,
	cpuRef bool, report reporter) {
	benchMSMG1Named(t, "msm_g1", s, q, wb, sc, logN, cpuRef, report)
}

// windowSweep times the MSM again with each window size in CUZK_GPU_BENCH_CS (e.g.
// "15,16,17", forced on s through its knobs), checking that each result equals same(),
// the default window's result.
func windowSweep(t *testing.T, s *cudaStream, op string, logN, runs int, report reporter, run func() error, same func() bool) {
	v := os.Getenv("CUZK_GPU_BENCH_CS")
	if v == "" {
		return
	}
	defer func() {
		if err := s.setKnobs(Knobs{}); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range strings.Split(v, ",") {
		w, err := strconv.Atoi(c)
		if err != nil {
			t.Fatalf("CUZK_GPU_BENCH_CS: %v", err)
		}
		if err := s.setKnobs(Knobs{MSMWindowG1: w, MSMWindowG2: w}); err != nil {
			t.Fatal(err)
		}
		gpu := timeRuns(t, runs, run)
		if !same() {
			t.Errorf("%s 2^%d with c=%s: result differs from the default window's", op, logN, c)
		}
		profileOnce(func() { run() })
		report(op+" c="+c, logN, gpu, 0)
	}
}

// repeated is n elements, q over and over.
func repeated[T any](q []T, n int) []T {
	b := make([]T, n)
	for i := range b {
		b[i] = q[i%len(q)]
	}
	return b
}

// distinctBases is n points r_i·G of G1 and G2 (only G1 when g1 is set, only G2
// otherwise), the r_i random, made on the device.
func distinctBases(t *testing.T, rng *rand.Rand, n int, g1 bool) ([]bls12381.G1Affine, []bls12381.G2Affine) {
	f, err := NewFixedBase(0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := make([]fr.Element, n)
	randFr(rng, r)
	if g1 {
		p := make([]bls12381.G1Affine, n)
		if err := f.G1(context.Background(), r, p); err != nil {
			t.Fatal(err)
		}
		return p, nil
	}
	p := make([]bls12381.G2Affine, n)
	if err := f.G2(context.Background(), r, p); err != nil {
		t.Fatal(err)
	}
	return nil, p
}

// tiledBasesG1 is n bases tiled from q (q's first n when it has as many), and their
// resident base set.
func tiledBasesG1(t *testing.T, s *cudaStream, q []bls12381.G1Affine, n int) ([]bls12381.G1Affine, *baseSet) {
	b := q[:min(n, len(q)):min(n, len(q))]
	if len(b) < n {
		b = repeated(q, n)
	}
	set, err := s.newBasesG1(b, 4<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b, set
}

// tiledBasesG2 is n bases tiled from q (q's first n when it has as many), and their
// resident base set.
func tiledBasesG2(t *testing.T, s *cudaStream, q []bls12381.G2Affine, n int) ([]bls12381.G2Affine, *baseSet) {
	b := q[:min(n, len(q)):min(n, len(q))]
	if len(b) < n {
		b = repeated(q, n)
	}
	set, err := s.newBasesG2(b, 4<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b, set
}

// uploadedFr is sc in a device buffer of its own; the caller frees it.
func uploadedFr(t *testing.T, c *cudaCtx, s *cudaStream, sc []fr.Element) *devBuf {
	wb, err := c.alloc(len(sc) * fr.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.uploadFr(wb, 0, sc); err != nil {
		t.Fatal(err)
	}
	return wb
}

func benchMSMG1Named(t *testing.T, op string, s *cudaStream, q []bls12381.G1Affine, wb *devBuf, sc []fr.Element,
	logN int, cpuRef bool, report reporter) {
	n := 1 << logN
	b, set := tiledBasesG1(t, s, q, n)
	defer set.close()
	var got bls12381.G1Jac
	gpu := timeRuns(t, 5, func() (err error) { got, err = s.msmG1(set, 0, n, wb, 0, nil); return err })
	profileOnce(func() { s.msmG1(set, 0, n, wb, 0, nil) })
	ref := got
	windowSweep(t, s, op, logN, 3, report, func() (err error) { got, err = s.msmG1(set, 0, n, wb, 0, nil); return err },
		func() bool { return got.Equal(&ref) })
	got = ref
	defer benchPrecomputed(t, op, s, set, logN, report, func() (err error) { got, err = s.msmG1(set, 0, n, wb, 0, nil); return err },
		func() bool { return got.Equal(&ref) })
	var cpu time.Duration
	if cpuRef {
		var want bls12381.G1Jac
		t0 := time.Now()
		want.MultiExp(b, sc[:n], ecc.MultiExpConfig{})
		cpu = time.Since(t0)
		if !want.Equal(&got) {
			t.Errorf("bench %s 2^%d: result differs from gnark-crypto", op, logN)
		}
	}
	report(op, logN, gpu, cpu)
}

func benchMSMG2(t *testing.T, s *cudaStream, op string, q []bls12381.G2Affine, wb *devBuf, sc []fr.Element, logN int,
	cpuRef bool, report reporter) {
	n := 1 << logN
	b, set := tiledBasesG2(t, s, q, n)
	defer set.close()
	var got bls12381.G2Jac
	gpu := timeRuns(t, 3, func() (err error) { got, err = s.msmG2(set, 0, n, wb, 0, nil); return err })
	profileOnce(func() { s.msmG2(set, 0, n, wb, 0, nil) })
	ref := got
	windowSweep(t, s, op, logN, 2, report, func() (err error) { got, err = s.msmG2(set, 0, n, wb, 0, nil); return err },
		func() bool { return got.Equal(&ref) })
	got = ref
	defer benchPrecomputed(t, op, s, set, logN, report, func() (err error) { got, err = s.msmG2(set, 0, n, wb, 0, nil); return err },
		func() bool { return got.Equal(&ref) })
	var cpu time.Duration
	if cpuRef {
		var want bls12381.G2Jac
		t0 := time.Now()
		want.MultiExp(b, sc[:n], ecc.MultiExpConfig{})
		cpu = time.Since(t0)
		if !want.Equal(&got) {
			t.Errorf("bench %s 2^%d: result differs from gnark-crypto", op, logN)
		}
	}
	report(op, logN, gpu, cpu)
}

// nttBenchFlags: the benchmark's transform, DIF (natural to bit-reversed) unless
// CUZK_GPU_BENCH_NTT_DIT=1 (bit-reversed to natural, computeH's other direction).
func nttBenchFlags() int {
	if os.Getenv("CUZK_GPU_BENCH_NTT_DIT") == "1" {
		return nttDIT
	}
	return 0
}

// benchNTT times a forward NTT with the data on the device (nttBenchFlags).
func benchNTT(t *testing.T, s *cudaStream, wb *devBuf, sc []fr.Element, logN int, cpuRef bool, report reporter) {
	n := 1 << logN
	dom := fft.NewDomain(uint64(n))
	d, err := s.newDomain(dom)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	flags := nttBenchFlags()
	gpu := timeRuns(t, 5, func() error { return s.ntt(d, wb, 0, flags) })
	var cpu time.Duration
	if cpuRef {
		a := append([]fr.Element(nil), sc[:n]...)
		dir := fft.DIF
		if flags&nttDIT != 0 {
			dir = fft.DIT
		}
		t0 := time.Now()
		dom.FFT(a, dir)
		cpu = time.Since(t0)
		// The output against gnark-crypto's at the benchmark's sizes.
		if got := nttOnce(t, s, d, wb, sc[:n], flags); !slices.Equal(got, a) {
			t.Errorf("bench ntt 2^%d: result differs from gnark-crypto", logN)
		}
	}
	report("ntt", logN, gpu, cpu)
	if err := s.uploadFr(wb, 0, sc); err != nil { // restore the scalars
		t.Fatal(err)
	}
}

// nttOnce transforms in on the device (its copy in wb) and returns the output.
func nttOnce(t *testing.T, s *cudaStream, d *nttDomain, wb *devBuf, in []fr.Element, flags int) []fr.Element {
	t.Helper()
	out := make([]fr.Element, len(in))
	if err := firstErr(s.uploadFr(wb, 0, in), s.ntt(d, wb, 0, flags), s.downloadFr(wb, 0, out)); err != nil {
		t.Fatal(err)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// profileOnce runs f (outside the timed runs) with the library's per-stage MSM
// timing on: it prints a "msm-profile" line to stderr.
func profileOnce(f func()) {
	os.Setenv("CUZK_MSM_PROFILE", "1")
	defer os.Unsetenv("CUZK_MSM_PROFILE")
	f()
}

// benchProve times Backend.Prove (no synthesis) for 2^logN constraints and as many
// wires, on a timing-only key whose bases are tiled random points: proofs made with
// it do NOT verify. The CPU reference is the project's CPU backend on the same key
// (CUZK_GPU_BENCH_PROVE_CPU=0 leaves it out; TestGPUBenchGnark compares with gnark).
// timingKey is a dense key of 2^logN constraints and wires over tiled random bases
// (timing only: no setup made it), with a generator of random solutions for it.
func timingKey(t *testing.T, logN int, q1 []bls12381.G1Affine, q2 []bls12381.G2Affine) (*prover.ProvingKey, func() *synth.Solution) {
	gpk, nbPublic := timingGnarkKey(logN, q1, q2)
	n, nbWires := 1<<logN, len(gpk.InfinityA)
	pk, err := prover.NewProvingKey(fmt.Sprintf("timing-2^%d", logN), gpk, n)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(logN), 1))
	newSol := func() *synth.Solution {
		s := &synth.Solution{W: make([]fr.Element, nbWires), A: make([]fr.Element, n), B: make([]fr.Element, n),
			NbPublic: nbPublic}
		randFr(rng, s.W)
		randFr(rng, s.A)
		randFr(rng, s.B)
		return s
	}
	return pk, newSol
}

// timingGnarkKey is timingKey's gnark key, with its number of public wires.
func timingGnarkKey(logN int, q1 []bls12381.G1Affine, q2 []bls12381.G2Affine) (*groth16bls.ProvingKey, int) {
	n := 1 << logN
	nbWires, nbPublic := n, 2
	dom := fft.NewDomain(uint64(n))
	tile1 := func(k int) []bls12381.G1Affine {
		v := make([]bls12381.G1Affine, k)
		for i := range v {
			v[i] = q1[(i*7+k)%len(q1)]
		}
		return v
	}
	gpk := &groth16bls.ProvingKey{Domain: *dom}
	gpk.G1.A, gpk.G1.B = tile1(nbWires), tile1(nbWires)
	nk := nbWires - nbPublic
	kz := tile1(nk + n - 1)
	gpk.G1.K, gpk.G1.Z = kz[:nk:nk], kz[nk:]
	gpk.G2.B = make([]bls12381.G2Affine, nbWires)
	for i := range gpk.G2.B {
		gpk.G2.B[i] = q2[i%len(q2)]
	}
	gpk.InfinityA, gpk.InfinityB = make([]bool, nbWires), make([]bool, nbWires)
	return gpk, nbPublic
}

// benchWitness times the G1 MSM over the solved witness of a built-in circuit (the
// scalars of a proof's A and B sums: mostly 0 and 1 for SHA-256's bits, full-size for
// Poseidon2's states) beside random scalars of the same length, in the same run, after
// checking the device's witness sum against gnark-crypto's, and prints the witness's
// make-up. With CUZK_GPU_BENCH_CS the witness's MSM is timed again with each window
// given there (witness_<name> lines, 2^k the wires' count rounded up), with
// CUZK_GPU_BENCH_PRECOMPUTE over precomputed copies.
func benchWitness(t *testing.T, c *cudaCtx, s *cudaStream, q []bls12381.G1Affine, q2 []bls12381.G2Affine, name string,
	rng *rand.Rand, report reporter) {
	ctx := context.Background()
	t0 := time.Now()
	comp, err := synth.NewRegistry(t.TempDir()).Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	in, err := synth.Inputs(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := synth.Solve(ctx, comp, in)
	if err != nil {
		t.Fatal(err)
	}
	prep := time.Since(t0)
	w := sol.W
	n := len(w)
	var zero, one, small int
	for i := range w {
		switch {
		case w[i].IsZero():
			zero++
		case w[i].IsOne():
			one++
		case w[i].IsUint64() && w[i].Uint64() < 1<<16:
			small++
		}
	}
	b, set := tiledBasesG1(t, s, q, n)
	defer set.close()
	rnd := make([]fr.Element, n)
	randFr(rng, rnd)
	median := func(sc []fr.Element, check bool) time.Duration {
		wb := uploadedFr(t, c, s, sc)
		defer wb.free()
		var got bls12381.G1Jac
		d := timeRuns(t, 5, func() (err error) { got, err = s.msmG1(set, 0, n, wb, 0, nil); return err })
		if check {
			var want bls12381.G1Jac
			want.MultiExp(b, sc, ecc.MultiExpConfig{})
			if !got.Equal(&want) {
				t.Errorf("witness MSM of %s: result differs from gnark-crypto", name)
			}
		}
		profileOnce(func() { s.msmG1(set, 0, n, wb, 0, nil) })
		if check {
			ref := got
			windowSweep(t, s, "witness_"+name, bits.Len(uint(n-1)), 5, report,
				func() (err error) { got, err = s.msmG1(set, 0, n, wb, 0, nil); return err },
				func() bool { return got.Equal(&ref) })
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	wit, ran := median(w, true), median(rnd, false)
	// With CUZK_GPU_BENCH_PRECOMPUTE copies: the witness's MSM again over the set
	// precomputed as --gpu-precompute makes it, whose window is the copies' own
	// (witness_<name>_pc lines), against witness_ms's window from the bit lengths.
	if envInt("CUZK_GPU_BENCH_PRECOMPUTE", 0) > 1 {
		wb := uploadedFr(t, c, s, w)
		defer wb.free()
		ref, err := s.msmG1(set, 0, n, wb, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got bls12381.G1Jac
		benchPrecomputed(t, "witness_"+name, s, set, bits.Len(uint(n-1)), report,
			func() (err error) { got, err = s.msmG1(set, 0, n, wb, 0, nil); return err },
			func() bool { return got.Equal(&ref) })
	}
	// G2, as a proof's B sum: timed, not checked (TestMSMG2 checks such scalars).
	_, set2 := tiledBasesG2(t, s, q2, n)
	defer set2.close()
	median2 := func(sc []fr.Element) time.Duration {
		wb := uploadedFr(t, c, s, sc)
		defer wb.free()
		d := timeRuns(t, 3, func() error { _, err := s.msmG2(set2, 0, n, wb, 0, nil); return err })
		profileOnce(func() { s.msmG2(set2, 0, n, wb, 0, nil) })
		slices.Sort(d)
		return d[len(d)/2]
	}
	wit2, ran2 := median2(w), median2(rnd)
	pct := func(k int) float64 { return 100 * float64(k) / float64(n) }
	fmt.Printf("BENCH witness  %s constraints=%d wires=%d zero=%.1f%% one=%.1f%% small=%.1f%% other=%.1f%% "+
		"witness_ms=%.2f random_ms=%.2f random/witness=%.2fx g2_witness_ms=%.2f g2_random_ms=%.2f g2_random/witness=%.2fx "+
		"(compile+solve %.1fs)\n", name, comp.NbConstraints(), n,
		pct(zero), pct(one), pct(small), pct(n-zero-one-small), ms(wit), ms(ran), float64(ran)/float64(wit),
		ms(wit2), ms(ran2), float64(ran2)/float64(wit2), prep.Seconds())
}

// benchKeyLoad times a dense 2^logN key's way from its files to resident, as a
// worker loads it: keys.Dir.LoadWith from pk.dump (sidecar checks, the dump's
// digest, ReadDump), prover.NewProvingKey, then the CUDA backend's LoadKey (upload), and
// the CPU backend's LoadKey from the same key. With old it also times the way before
// the dump existed: parsing pk.bin (every point decompressed and subgroup-checked).
// The files were just written, so the page cache serves them, as it did in the
// worker run that measured srs_ms = 184.8 s at 2^22.
func benchKeyLoad(t *testing.T, logN int, q1 []bls12381.G1Affine, q2 []bls12381.G2Affine, old bool, report reporter) {
	ctx := context.Background()
	gpk, nbPublic := timingGnarkKey(logN, q1, q2)
	vk := new(groth16bls.VerifyingKey)
	vk.G1.Alpha, vk.G1.Beta, vk.G1.Delta = gpk.G1.A[0], gpk.G1.B[0], gpk.G1.Z[0]
	vk.G2.Beta, vk.G2.Delta, vk.G2.Gamma = gpk.G2.B[0], gpk.G2.B[1], gpk.G2.B[1]
	vk.G1.K = gpk.G1.A[:nbPublic]
	dir := keys.Dir(t.TempDir())
	name := fmt.Sprintf("timing-k%d", logN)
	t0 := time.Now()
	digest, err := dir.Write(name, gpk, vk)
	if err != nil {
		t.Fatal(err)
	}
	report("keyload_write", logN, []time.Duration{time.Since(t0)}, 0)
	gpk = nil
	n := 1 << logN
	load := func(want string) (*prover.ProvingKey, time.Duration) {
		t0 := time.Now()
		k, _, st, err := dir.LoadWith(name, digest, keys.LoadOptions{})
		if err != nil || st.Source != want {
			t.Fatalf("load %s 2^%d: source %s, want %s: %v", name, logN, st.Source, want, err)
		}
		pk, err := prover.NewProvingKey(name, k, n)
		if err != nil {
			t.Fatal(err)
		}
		return pk, time.Since(t0)
	}
	pk, file := load(keys.SourceDump)
	t0 = time.Now()
	key, err := testBackend(t).LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	dev := time.Since(t0)
	key.Close()
	t0 = time.Now()
	ck, err := prover.NewCPU().LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	cpu := time.Since(t0)
	ck.Close()
	fmt.Printf("BENCH keyload  2^%d dump_bytes=%d file_ms=%.1f cuda_loadkey_ms=%.1f cpu_loadkey_ms=%.1f to_device_ms=%.1f to_cpu_ms=%.1f\n",
		logN, fileBytes(dir.Path(name, keys.DumpFile)), ms(file), ms(dev), ms(cpu), ms(file+dev), ms(file+cpu))
	if !old {
		return
	}
	if err := os.Remove(dir.Path(name, keys.DumpSumFile)); err != nil {
		t.Fatal(err)
	}
	_, parse := load(keys.SourcePK) // also rewrites the dump, as a worker's first load does
	fmt.Printf("BENCH keyload  2^%d pk_bytes=%d pkbin_ms=%.1f dump_ms=%.1f ratio=%.1fx\n",
		logN, fileBytes(dir.Path(name, keys.PKFile)), ms(parse), ms(file), float64(parse)/float64(file))
}

func fileBytes(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func benchProve(t *testing.T, logN int, q1 []bls12381.G1Affine, q2 []bls12381.G2Affine, opt Options, op string,
	cpuRef bool, report reporter) {
	ctx := context.Background()
	pk, newSol := timingKey(t, logN, q1, q2)
	b := testBackendWith(t, opt)
	t0 := time.Now()
	key, err := b.LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	report(op+"_loadkey", logN, []time.Duration{time.Since(t0)}, 0)
	line := fmt.Sprintf("BENCH keybytes %s 2^%d bytes=%d precomputed_bytes=%d", op, logN, key.Bytes(),
		key.(*cudaKey).PrecomputedBytes())
	t.Log(line)
	fmt.Println(line)
	defer func() {
		key.Close()
		b.Close()
	}()
	var gpu []time.Duration
	var last prover.PhaseTimes
	// CUZK_GPU_BENCH_PROVE_RUNS timed proofs (default 3) after one untimed.
	for r := range envInt("CUZK_GPU_BENCH_PROVE_RUNS", 3) + 1 {
		sol := newSol() // outside the timing: random solutions take longer than a proof
		t0 := time.Now()
		_, times, err := b.Prove(ctx, key, []*synth.Solution{sol})
		if err != nil {
			t.Fatal(err)
		}
		if r > 0 {
			gpu = append(gpu, time.Since(t0))
			last = times
		}
	}
	line = fmt.Sprintf("BENCH phases   %s 2^%d h2d=%.1fms ntt=%.1fms msm_g1=%.1fms msm_g2=%.1fms msm=%.1fms total=%.1fms",
		op, logN, ms(last.H2D), ms(last.NTT), ms(last.MSMG1), ms(last.MSMG2), ms(last.MSM), ms(last.Total))
	t.Log(line)
	fmt.Println(line)
	// Batch of 4: throughput per proof with the G2/G1 overlap across solutions.
	sols := []*synth.Solution{newSol(), newSol(), newSol(), newSol()}
	t0 = time.Now()
	if _, _, err := b.Prove(ctx, key, sols); err != nil {
		t.Fatal(err)
	}
	per := time.Since(t0) / 4
	// Two callers at once, one solution per call, as the worker's two provers of a
	// device with --max-batch 1: throughput per proof (proveStaged overlaps one call's
	// upload and H with the other's MSMs).
	const two = 4
	var pair [2][]*synth.Solution
	for i := range pair {
		for range two {
			pair[i] = append(pair[i], newSol())
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	t0 = time.Now()
	for i := range pair {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, sol := range pair[i] {
				if _, _, err := b.Prove(ctx, key, []*synth.Solution{sol}); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	perPair := time.Since(t0) / (2 * two)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var cpu time.Duration
	if cpuRef && os.Getenv("CUZK_GPU_BENCH_PROVE_CPU") != "0" {
		cb := prover.NewCPU()
		ck, err := cb.LoadKey(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if _, _, err := cb.Prove(ctx, ck, []*synth.Solution{newSol()}); err != nil {
			t.Fatal(err)
		}
		cpu = time.Since(t0)
		ck.Close()
	}
	report(op, logN, gpu, cpu)
	report(op+"/b4", logN, []time.Duration{per}, cpu)
	report(op+"/2callers", logN, []time.Duration{perPair}, cpu)
}

// TestGPUBenchGnark times proving on the device beside gnark's own groth16.Prove on
// this host's cores, in the same run (internal/bench: interleaved, ratio of medians),
// on synthetic-k<K> for K in CUZK_GPU_BENCH_GNARK_LOGS (default 20,22; "none" skips).
// The key is random (prover.RandomKeyFor, shaped like the circuit): timing only, the
// proofs are not verified, because gnark's Setup takes minutes at these sizes; both
// provers use the same key. Our side is synth.Solve + prover.Prove, gnark's is
// groth16.Prove (which solves too); the BENCH line also gives the ratio to our prove
// alone (no synthesis).
func TestGPUBenchGnark(t *testing.T) {
	if os.Getenv("CUZK_GPU_BENCH") != "1" {
		t.Skip("set CUZK_GPU_BENCH=1 to run the GPU benchmarks")
	}
	spec := os.Getenv("CUZK_GPU_BENCH_GNARK_LOGS")
	if spec == "" {
		spec = "20,22"
	}
	if spec == "none" {
		t.Skip("CUZK_GPU_BENCH_GNARK_LOGS=none")
	}
	b := testBackend(t)
	ctx := context.Background()
	reg := synth.NewRegistry(t.TempDir())
	runs := envInt("CUZK_GPU_BENCH_GNARK_RUNS", 3)
	for _, f := range strings.Split(spec, ",") {
		var logN int
		fmt.Sscan(f, &logN)
		name := fmt.Sprintf("synthetic-k%d", logN)
		t0 := time.Now()
		comp, err := reg.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		in, err := synth.Inputs(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		bc, err := bench.SynthCase(comp, in, nil, nil) // nil key: random, timing only
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s: compiled in %v\n", name, time.Since(t0).Round(time.Millisecond))
		res, err := bench.Measure(ctx, bench.Options{Case: bc, Backend: b, Runs: runs, Compare: "gnark"}, os.Stdout)
		if err != nil {
			t.Fatal(err)
		}
		res.Print(os.Stdout)
		var prove, total []time.Duration
		for _, s := range res.Ours {
			prove = append(prove, s.Prove)
			total = append(total, s.Total())
		}
		g := slices.Clone(res.Gnark)
		slices.Sort(g)
		slices.Sort(prove)
		slices.Sort(total)
		gm, pm, tm := g[len(g)/2], prove[len(prove)/2], total[len(total)/2]
		line := fmt.Sprintf("BENCH gnark    2^%d %s (random key, timing only) gnark_prove_ms=%.0f (%d cores) "+
			"cuzk_solve+prove_ms=%.1f cuzk_prove_ms=%.1f speedup_vs_gnark=%.1fx prove_only_ratio=%.1fx (%d runs)",
			logN, name, ms(gm), runtime.NumCPU(), ms(tm), ms(pm), float64(gm)/float64(tm), float64(gm)/float64(pm), len(g))
		t.Log(line)
		fmt.Println(line)
	}
}

// benchSmallBatch times k proofs of a small dense key proven one Prove call each
// against the same k in one call (one batched pass over the bases), alternating the
// two three times, and prints the ratio of the medians.
func benchSmallBatch(t *testing.T, logN, k int, q1 []bls12381.G1Affine, q2 []bls12381.G2Affine) {
	ctx := context.Background()
	pk, newSol := timingKey(t, logN, q1, q2)
	b := testBackend(t)
	key, err := b.LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	sols := func() []*synth.Solution {
		v := make([]*synth.Solution, k)
		for i := range v {
			v[i] = newSol()
		}
		return v
	}
	var single, batched []time.Duration
	for r := range 4 {
		v := sols()
		t0 := time.Now()
		for _, s := range v {
			if _, _, err := prover.Prove(ctx, b, pk, key, []*synth.Solution{s}); err != nil {
				t.Fatal(err)
			}
		}
		d1 := time.Since(t0)
		v = sols()
		t0 = time.Now()
		if _, _, err := prover.Prove(ctx, b, pk, key, v); err != nil {
			t.Fatal(err)
		}
		if r > 0 { // the first round sizes the scratch
			single, batched = append(single, d1), append(batched, time.Since(t0))
		}
	}
	slices.Sort(single)
	slices.Sort(batched)
	s, bt := single[len(single)/2], batched[len(batched)/2]
	line := fmt.Sprintf("BENCH batch    2^%d k=%d single_ms_per_proof=%.2f batch_ms_per_proof=%.2f throughput_ratio=%.2fx",
		logN, k, ms(s)/float64(k), ms(bt)/float64(k), float64(s)/float64(bt))
	t.Log(line)
	fmt.Println(line)
	batchWindowGrid(t, b, logN, k, sols, func(v []*synth.Solution) error {
		_, _, err := prover.Prove(ctx, b, pk, key, v)
		return err
	})
}

// batchWindowGrid times the batch again with the G1 and G2 window sizes forced to each
// pair in CUZK_GPU_BENCH_BATCH_CS ("g1:g2,...", e.g. "9:10,10:10", forced on b through
// its knobs), median of three after one untimed run. The proofs' parts are not
// compared here: TestMSMWindowEdges checks forced windows.
func batchWindowGrid(t *testing.T, b *CUDA, logN, k int, sols func() []*synth.Solution, prove func([]*synth.Solution) error) {
	v := os.Getenv("CUZK_GPU_BENCH_BATCH_CS")
	if v == "" {
		return
	}
	defer func() {
		if err := b.SetKnobs(Knobs{}); err != nil {
			t.Error(err)
		}
	}()
	for _, pair := range strings.Split(v, ",") {
		g1, g2, ok := strings.Cut(pair, ":")
		w1, err1 := strconv.Atoi(g1)
		w2, err2 := strconv.Atoi(g2)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("CUZK_GPU_BENCH_BATCH_CS: %q is not g1:g2", pair)
		}
		if err := b.SetKnobs(Knobs{MSMWindowG1: w1, MSMWindowG2: w2}); err != nil {
			t.Fatal(err)
		}
		var d []time.Duration
		for r := range 4 {
			batch := sols()
			t0 := time.Now()
			if err := prove(batch); err != nil {
				t.Fatal(err)
			}
			if r > 0 {
				d = append(d, time.Since(t0))
			}
		}
		slices.Sort(d)
		line := fmt.Sprintf("BENCH batchc   2^%d k=%d c_g1=%s c_g2=%s batch_ms_per_proof=%.2f", logN, k, g1, g2,
			ms(d[len(d)/2])/float64(k))
		t.Log(line)
		fmt.Println(line)
	}
}
