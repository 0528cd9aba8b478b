package gpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

func testBackend(t testing.TB) *CUDA { return testBackendWith(t, Options{}) }

func testBackendWith(t testing.TB, opt Options) *CUDA {
	t.Helper()
	skipWithoutDevice(t)
	b, err := NewCUDA(0, opt)
	if err != nil {
		if IsUnavailable(err) {
			t.Skipf("no CUDA device: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestProveBuiltins proves built-in circuits with real keys (gnark Setup) on the
// device, checks the backend's sums equal the CPU backend's, and verifies the proofs
// with gnark; once with the key's bases as they are and once precomputed.
func TestProveBuiltins(t *testing.T) {
	for _, copies := range []int{0, 16} {
		t.Run(fmt.Sprintf("precompute=%d", copies), func(t *testing.T) {
			proveBuiltins(t, testBackendWith(t, Options{PrecomputeCopies: copies}))
		})
	}
}

func proveBuiltins(t *testing.T, b *CUDA) {
	ctx := context.Background()
	// sha256-preimage-b256: a witness of mostly 0, 1 and -1 over more than 2^16 wires,
	// whose MSMs take their window from the scalars' bit lengths.
	names := []string{"synthetic-k8", "merkle-poseidon2-d3-c1", "sha256-preimage-b32", "synthetic-k16", "sha256-preimage-b256"}
	if testing.Short() {
		names = names[:1]
	}
	reg := synth.NewRegistry(t.TempDir())
	cpu := prover.NewCPU()
	for _, name := range names {
		comp, err := reg.Get(ctx, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var gpk groth16bls.ProvingKey
		var vk groth16bls.VerifyingKey
		if err := groth16bls.Setup(comp.CS, &gpk, &vk); err != nil {
			t.Fatalf("%s: setup: %v", name, err)
		}
		pk, err := prover.NewProvingKey(name, &gpk, comp.NbConstraints())
		if err != nil {
			t.Fatal(err)
		}
		key, err := b.LoadKey(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		ckey, err := cpu.LoadKey(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		const batch = 3
		var sols, csols []*synth.Solution
		for i := range batch {
			in, err := synth.Inputs(name, uint64(i+1))
			if err != nil {
				t.Fatal(err)
			}
			s1, err := synth.Solve(ctx, comp, in)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := synth.Solve(ctx, comp, in)
			if err != nil {
				t.Fatal(err)
			}
			sols, csols = append(sols, s1), append(csols, s2)
		}
		pubs := make([][]byte, batch)
		for i := range sols {
			pubs[i] = sols[i].Public
		}
		got, times, err := b.Prove(ctx, key, sols)
		if err != nil {
			t.Fatalf("%s: cuda prove: %v", name, err)
		}
		want, _, err := cpu.Prove(ctx, ckey, csols)
		if err != nil {
			t.Fatalf("%s: cpu prove: %v", name, err)
		}
		for i := range got {
			g, w := got[i], want[i]
			if !g.A.Equal(&w.A) || !g.B1.Equal(&w.B1) || !g.K.Equal(&w.K) || !g.B2.Equal(&w.B2) {
				t.Fatalf("%s: solution %d: cuda parts differ from cpu (A %v B1 %v K %v B2 %v)", name, i,
					g.A.Equal(&w.A), g.B1.Equal(&w.B1), g.K.Equal(&w.K), g.B2.Equal(&w.B2))
			}
		}
		// Full proofs through the prover package, verified by gnark.
		for i := range sols {
			in, _ := synth.Inputs(name, uint64(i+1))
			sols[i], err = synth.Solve(ctx, comp, in)
			if err != nil {
				t.Fatal(err)
			}
		}
		// The first alone (one proof at a time), the rest as a batch (batched pass).
		proofs, _, err := prover.Prove(ctx, b, pk, key, sols[:1])
		if err != nil {
			t.Fatal(err)
		}
		rest, _, err := prover.Prove(ctx, b, pk, key, sols[1:])
		if err != nil {
			t.Fatal(err)
		}
		proofs = append(proofs, rest...)
		verifyAll(t, name, proofs, pubs, &vk)
		t.Logf("%s: %d constraints, batch %d: parts equal cpu, proofs verify (h2d %v ntt %v msm %v total %v)",
			name, pk.NbConstraints, batch, times.H2D, times.NTT, times.MSM, times.Total)
		key.Close()
		ckey.Close()
	}
}

// TestProvePhaseTimes checks that the backend fills every phase the worker writes to
// the attempt row (h2d_ms, ntt_ms, msm_g1_ms, msm_g2_ms, msm_ms), on a small
// timing-only random key (the parts are not checked here: TestProveBuiltins does).
func TestProvePhaseTimes(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	const n, nbPublic = 1 << 12, 2
	gpk, err := prover.RandomKey(n, n, nbPublic)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := prover.NewProvingKey("timing-2^12", gpk, n)
	if err != nil {
		t.Fatal(err)
	}
	key, err := b.LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	var sols []*synth.Solution
	for range 2 {
		s := &synth.Solution{W: make([]fr.Element, n), A: make([]fr.Element, n), B: make([]fr.Element, n),
			NbPublic: nbPublic}
		for _, v := range [][]fr.Element{s.W, s.A, s.B} {
			randFr(rng, v)
		}
		sols = append(sols, s)
	}
	_, times, err := b.Prove(ctx, key, sols)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("phases: h2d %v ntt %v msm_g1 %v msm_g2 %v msm %v total %v",
		times.H2D, times.NTT, times.MSMG1, times.MSMG2, times.MSM, times.Total)
	for name, d := range map[string]time.Duration{"H2D": times.H2D, "NTT": times.NTT, "MSMG1": times.MSMG1,
		"MSMG2": times.MSMG2, "MSM": times.MSM, "Total": times.Total} {
		if d <= 0 {
			t.Errorf("%s = %v, want > 0", name, d)
		}
	}
	if times.MSM > times.Total || times.H2D+times.NTT+times.MSM != times.Total {
		t.Errorf("h2d %v + ntt %v + msm %v != total %v", times.H2D, times.NTT, times.MSM, times.Total)
	}
}

// TestProveBatchOverCap proves more solutions of a small circuit than one batched pass
// holds, so they go through the device in several groups, and verifies every proof.
// synthetic-k14
// has more solutions per group than its H scratch holds (hBatchCap < batchCap), so
// the gathered path runs H in several runs within a group.
func TestProveBatchOverCap(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    func(domain int) int
	}{
		{"synthetic-k8", func(d int) int { return batchCap(d)*2 + 3 }},
		{"synthetic-k14", func(d int) int { return hBatchCap(d)*2 + 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) { proveBatchOverCap(t, tc.name, tc.n) })
	}
}

func proveBatchOverCap(t *testing.T, name string, count func(domain int) int) {
	b := testBackend(t)
	ctx := context.Background()
	comp, pk, key, vk := realKey(t, b, name)
	n := count(pk.DomainSize())
	sols, pubs := solveMany(t, comp, name, 100, n)
	proofs, _, err := prover.Prove(ctx, b, pk, key, sols)
	if err != nil {
		t.Fatal(err)
	}
	verifyAll(t, name, proofs, pubs, vk)
	t.Logf("%s: %d proofs in groups of %d, H in runs of %d, verify", name, n,
		batchCap(pk.DomainSize()), hBatchCap(pk.DomainSize()))
}

// TestProveLanes runs four Prove calls of batches at once on one backend, more than
// its lanes and its key's batch slot sets, each over two groups, and verifies every
// proof: one call's groups stage on the third stream while another's run their MSMs.
func TestProveLanes(t *testing.T) {
	const name = "synthetic-k8"
	b := testBackend(t)
	if b.ProveLanes() != 2 {
		t.Fatalf("ProveLanes() = %d, want 2", b.ProveLanes())
	}
	comp, pk, key, vk := realKey(t, b, name)
	if got := len(key.(*cudaKey).whBatch); got != b.ProveLanes() {
		t.Fatalf("%d batch slot sets for %d lanes", got, b.ProveLanes())
	}
	const calls = 4
	n := batchCap(pk.DomainSize()) + 5
	sizes := make([]int, calls)
	for c := range sizes {
		sizes[c] = n
	}
	proveAtOnce(t, b, comp, pk, key, vk, name, 1000, sizes, false)
	t.Logf("%d calls of %d proofs at once, %d lanes: all verify", calls, n, b.ProveLanes())
}

// realKey compiles a built-in circuit, runs gnark's setup and loads the proving key on
// b (closed with the test).
func realKey(t *testing.T, b *CUDA, name string) (*synth.Compiled, *prover.ProvingKey, prover.Key, *groth16bls.VerifyingKey) {
	t.Helper()
	ctx := context.Background()
	comp, err := synth.NewRegistry(t.TempDir()).Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var gpk groth16bls.ProvingKey
	var vk groth16bls.VerifyingKey
	if err := groth16bls.Setup(comp.CS, &gpk, &vk); err != nil {
		t.Fatal(err)
	}
	pk, err := prover.NewProvingKey(name, &gpk, comp.NbConstraints())
	if err != nil {
		t.Fatal(err)
	}
	key, err := b.LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { key.Close() })
	return comp, pk, key, &vk
}

// solveMany solves n instances of a built-in circuit from seeds seed, seed+1, ...
func solveMany(t *testing.T, comp *synth.Compiled, name string, seed uint64, n int) ([]*synth.Solution, [][]byte) {
	t.Helper()
	sols := make([]*synth.Solution, n)
	pubs := make([][]byte, n)
	for i := range sols {
		in, err := synth.Inputs(name, seed+uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if sols[i], err = synth.Solve(context.Background(), comp, in); err != nil {
			t.Fatal(err)
		}
		pubs[i] = sols[i].Public
	}
	return sols, pubs
}

// verifyAll verifies each proof with gnark against its public witness.
func verifyAll(t *testing.T, name string, proofs []*groth16bls.Proof, pubs [][]byte, vk *groth16bls.VerifyingKey) {
	t.Helper()
	for i, p := range proofs {
		pw, err := witness.New(ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		if err := pw.UnmarshalBinary(pubs[i]); err != nil {
			t.Fatal(err)
		}
		if err := groth16.Verify(p, vk, pw); err != nil {
			t.Fatalf("%s: proof %d of %d does not verify: %v", name, i, len(proofs), err)
		}
	}
}

// TestProveStaged: proofs that are not batched, staged on the third stream beside the
// other lane's MSMs (proveStaged), verify with gnark and their phase times add up: six
// calls at once, of one solution and of three. Only keys too large to batch (domain
// above 2^19) take this path, so a small key's batch size is set to 1 as for such a key.
func TestProveStaged(t *testing.T) {
	b := testBackend(t)
	if b.staged(&cudaKey{batch: 16}) || !b.staged(&cudaKey{batch: 1}) {
		t.Fatal("want batched keys' single proofs under the lock and unbatched keys staged")
	}
	const name = "synthetic-k8"
	comp, pk, key, vk := realKey(t, b, name)
	k := key.(*cudaKey)
	k.batch = 1 // as a key above 2^19 constraints: every call goes through proveStaged
	if !b.staged(k) {
		t.Fatal("unbatched key not staged")
	}
	proveAtOnce(t, b, comp, pk, key, vk, name, 2000, []int{1, 3, 1, 3, 1, 3}, true)
	if len(k.slots) != len(k.wh) {
		t.Fatalf("%d of %d pipeline slots free after the calls", len(k.slots), len(k.wh))
	}
}

// phasesAddUp reports whether a Prove call's phase times are consistent: H2D, NTT and
// MSM add up to Total, or, for proofs staged one at a time, the MSM section lies
// within Total and the G1 MSMs within it. (A staged proof's upload of A and B and its
// H run beside its first MSMs, and also while it waits for the other lane's MSMs,
// which Total leaves out: they need not lie within Total.)
func phasesAddUp(times prover.PhaseTimes, staged bool) bool {
	if times.Wait < 0 || times.Total <= 0 || times.MSM <= 0 {
		return false
	}
	if !staged {
		return times.H2D+times.NTT+times.MSM == times.Total
	}
	return times.MSM <= times.Total && times.MSMG1 <= times.MSM
}

// proveAtOnce makes one Prove call per entry of sizes, all at once, each of that many
// solutions (seeds from seed on), checks each call's phase times add up (phasesAddUp;
// every phase measured, with all), and verifies every proof with gnark.
func proveAtOnce(t *testing.T, b *CUDA, comp *synth.Compiled, pk *prover.ProvingKey, key prover.Key,
	vk *groth16bls.VerifyingKey, name string, seed uint64, sizes []int, all bool) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, len(sizes))
	proofs := make([][]*groth16bls.Proof, len(sizes))
	pubs := make([][][]byte, len(sizes))
	for c, n := range sizes {
		var sols []*synth.Solution
		sols, pubs[c] = solveMany(t, comp, name, seed+uint64(100*c), n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums, times, err := prover.ProveSums(ctx, b, pk, key, sols)
			switch {
			case err != nil:
				errs[c] = err
			case !phasesAddUp(times, b.staged(key.(*cudaKey))),
				all && (times.H2D <= 0 || times.NTT <= 0 || times.MSMG1 <= 0 || times.MSMG2 <= 0):
				errs[c] = fmt.Errorf("phase times: %+v", times)
			default:
				proofs[c] = sums.Assemble()
			}
		}()
	}
	wg.Wait()
	for c := range sizes {
		if errs[c] != nil {
			t.Fatalf("call %d: %v", c, errs[c])
		}
		verifyAll(t, name, proofs[c], pubs[c], vk)
	}
}
