package prover

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/synth"
)

func proveOne(t *testing.T, pk *ProvingKey, sols ...*synth.Solution) []*groth16bls.Proof {
	t.Helper()
	ctx := context.Background()
	be := NewCPU()
	k, err := be.LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	proofs, _, err := Prove(ctx, be, pk, k, sols)
	if err != nil {
		t.Fatalf("prove: %v", err)
	}
	if len(proofs) != len(sols) {
		t.Fatalf("%d proofs for %d solutions", len(proofs), len(sols))
	}
	return proofs
}

func TestProveVerifies(t *testing.T) {
	for _, c := range []struct{ lanes, depth int }{
		{1, 1},  // 1 constraint, domain 1
		{2, 1},  // 2 constraints
		{4, 1},  // domain exactly a power of two
		{5, 1},  // one more
		{8, 2},  // 16 constraints
		{17, 1}, // 17
		{100, 5},
		{1024, 2}, // 2048: exact power of two, larger
		{683, 3},  // 2049: one more
	} {
		tc := compileLanes(t, c.lanes, c.depth)
		pk, vk := tc.setup(t)
		proof := proveOne(t, pk, tc.solve(t))[0]
		if err := verifyGnark(t, vk, proof, tc.public); err != nil {
			t.Fatalf("%s (%d constraints, domain %d): gnark rejects our proof: %v", tc.name, pk.NbConstraints, pk.DomainSize(), err)
		}
	}
}

func TestBatchGivesDistinctValidProofs(t *testing.T) {
	tc := compileLanes(t, 50, 3)
	pk, vk := tc.setup(t)
	var sols []*synth.Solution
	var publics []*testCircuit
	for i := 0; i < 3; i++ {
		w := *tc
		w.newWitness(t)
		sols = append(sols, w.solve(t))
		publics = append(publics, &w)
	}
	proofs := proveOne(t, pk, sols...)
	seen := map[string]bool{}
	for i, p := range proofs {
		if err := verifyGnark(t, vk, p, publics[i].public); err != nil {
			t.Fatalf("proof %d of the batch: %v", i, err)
		}
		if err := verifyGnark(t, vk, p, publics[(i+1)%3].public); err == nil {
			t.Fatalf("proof %d verifies against another solution's public input", i)
		}
		b, err := EncodeProof(p)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(b)] {
			t.Fatalf("proof %d repeats an earlier one", i)
		}
		seen[string(b)] = true
	}

	// The same witness twice still gives different proofs (fresh r, s).
	again := proveOne(t, pk, tc.solve(t), tc.solve(t))
	if again[0].Ar.Equal(&again[1].Ar) || again[0].Krs.Equal(&again[1].Krs) {
		t.Fatal("two proofs of one witness share Ar or Krs: randomization is not fresh")
	}
}

func TestTamperedPublicWitnessFails(t *testing.T) {
	tc := compileLanes(t, 20, 2)
	pk, vk := tc.setup(t)
	sol := tc.solve(t)
	proof := proveOne(t, pk, sol)[0]
	if err := verifyGnark(t, vk, proof, tc.public); err != nil {
		t.Fatal(err)
	}
	vec := tc.public.Vector().(fr.Vector)
	one := fr.One()
	vec[0].Add(&vec[0], &one)
	if err := verifyGnark(t, vk, proof, tc.public); err == nil {
		t.Fatal("proof verifies with a tampered public input")
	}
}

// TestPartsMatchNaive checks the CPU backend against a straightforward computation:
// scalar multiplications summed one by one, and h from schoolbook polynomial
// arithmetic (naive inverse DFT, product, exact division by X^n − 1).
func TestPartsMatchNaive(t *testing.T) {
	for _, c := range []struct{ lanes, depth int }{{1, 1}, {3, 1}, {5, 2}, {16, 2}, {7, 3}} {
		tc := compileLanes(t, c.lanes, c.depth)
		pk := tc.randomKey(t)
		sol := tc.solve(t)
		w := append([]fr.Element(nil), sol.W...)
		// The reference takes gnark's own C, which the prover never sees.
		res, err := tc.ccs.Solve(tc.full)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveParts(t, pk, w, sol.A, sol.B, res.(*cs.R1CSSolution).C)

		be := NewCPU()
		k, err := be.LoadKey(context.Background(), pk)
		if err != nil {
			t.Fatal(err)
		}
		// Prove twice with one key: the reused scratch buffers must not leak state.
		for rep := 0; rep < 2; rep++ {
			s := tc.solve(t)
			parts, _, err := be.Prove(context.Background(), k, []*synth.Solution{s})
			if err != nil {
				t.Fatal(err)
			}
			got := parts[0]
			if s.A != nil {
				t.Error("backend did not release A/B/C")
			}
			for _, p := range []struct {
				name      string
				got, want *bls12381.G1Jac
			}{{"A", &got.A, &want.A}, {"B1", &got.B1, &want.B1}, {"K", &got.K, &want.K}} {
				if !p.got.Equal(p.want) {
					t.Errorf("%s: Parts.%s differs from the naive sum", tc.name, p.name)
				}
			}
			if !got.B2.Equal(&want.B2) {
				t.Errorf("%s: Parts.B2 differs from the naive sum", tc.name)
			}
		}
	}
}

func naiveParts(t *testing.T, pk *ProvingKey, w, a, b, c []fr.Element) Parts {
	t.Helper()
	g := pk.PK
	var p Parts
	p.A.FromAffine(&bls12381.G1Affine{})
	p.B1.FromAffine(&bls12381.G1Affine{})
	p.K.FromAffine(&bls12381.G1Affine{})
	p.B2.FromAffine(&bls12381.G2Affine{})
	addG1 := func(acc *bls12381.G1Jac, base *bls12381.G1Affine, s *fr.Element) {
		var q bls12381.G1Jac
		q.FromAffine(base)
		q.ScalarMultiplication(&q, s.BigInt(new(big.Int)))
		acc.AddAssign(&q)
	}
	ja, jb := 0, 0
	for i := range w {
		if !g.InfinityA[i] {
			addG1(&p.A, &g.G1.A[ja], &w[i])
			ja++
		}
		if !g.InfinityB[i] {
			addG1(&p.B1, &g.G1.B[jb], &w[i])
			var q bls12381.G2Jac
			q.FromAffine(&g.G2.B[jb])
			q.ScalarMultiplication(&q, w[i].BigInt(new(big.Int)))
			p.B2.AddAssign(&q)
			jb++
		}
	}
	for j := range g.G1.K {
		addG1(&p.K, &g.G1.K[j], &w[pk.NbPublic+j])
	}

	n := pk.DomainSize()
	h := naiveH(t, &g.Domain.Generator, n, a, b, c)
	logN := 0
	for 1<<logN < n {
		logN++
	}
	for i := range g.G1.Z { // the key's Z is bit-reversed
		addG1(&p.K, &g.G1.Z[i], &h[bitRev(i, logN)])
	}
	return p
}

// naiveH returns the coefficients of h = (a·b − c)/(X^n − 1), where a, b, c are the
// polynomials taking the given values on the n-th roots of unity (powers of omega).
func naiveH(t *testing.T, omega *fr.Element, n int, av, bv, cv []fr.Element) []fr.Element {
	t.Helper()
	interp := func(v []fr.Element) []fr.Element {
		var omegaInv, nInv fr.Element
		omegaInv.Inverse(omega)
		nInv.SetUint64(uint64(n)).Inverse(&nInv)
		coef := make([]fr.Element, n)
		for k := 0; k < n; k++ {
			var wk, x fr.Element // wk = omega^{-k}, x = omega^{-jk}
			wk.Exp(omegaInv, big.NewInt(int64(k)))
			x.SetOne()
			for j := 0; j < len(v); j++ { // values beyond len(v) are zero (padding)
				var term fr.Element
				term.Mul(&v[j], &x)
				coef[k].Add(&coef[k], &term)
				x.Mul(&x, &wk)
			}
			coef[k].Mul(&coef[k], &nInv)
		}
		return coef
	}
	a, b, c := interp(av), interp(bv), interp(cv)
	num := make([]fr.Element, 2*n) // a·b − c, degree ≤ 2n−2
	for i := range a {
		for j := range b {
			var m fr.Element
			m.Mul(&a[i], &b[j])
			num[i+j].Add(&num[i+j], &m)
		}
	}
	for i := range c {
		num[i].Sub(&num[i], &c[i])
	}
	// Divide by X^n − 1 from the top: q[k−n] = r[k], r[k−n] += r[k].
	q := make([]fr.Element, n)
	for k := 2*n - 1; k >= n; k-- {
		q[k-n] = num[k]
		num[k-n].Add(&num[k-n], &num[k])
		num[k].SetZero()
	}
	for i := 0; i < n; i++ {
		if !num[i].IsZero() {
			t.Fatalf("a·b − c is not divisible by X^n − 1: the solution does not satisfy the constraints")
		}
	}
	return q
}

func bitRev(i, logN int) int {
	r := 0
	for k := 0; k < logN; k++ {
		r = r<<1 | (i>>k)&1
	}
	return r
}

type commitCircuit struct {
	X, Y frontend.Variable
}

func (c *commitCircuit) Define(api frontend.API) error {
	cm, err := api.(frontend.Committer).Commit(c.X)
	if err != nil {
		return err
	}
	api.AssertIsEqual(api.Mul(c.X, cm), api.Mul(c.Y, cm))
	return nil
}

func TestCommitmentCircuitsRejected(t *testing.T) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &commitCircuit{})
	if err != nil {
		t.Fatal(err)
	}
	const want = "circuit bsb22 uses gnark commitments, which cuzk does not support"
	check := func(what string, err error) {
		t.Helper()
		var ce *CommitmentError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", what, err, want)
		}
	}
	_, err = RandomKeyFor("bsb22", ccs)
	check("RandomKeyFor", err)

	var gpk groth16bls.ProvingKey
	var gvk groth16bls.VerifyingKey
	if err := groth16bls.Setup(ccs.(*cs.R1CS), &gpk, &gvk); err != nil {
		t.Fatal(err)
	}
	_, err = NewProvingKey("bsb22", &gpk, ccs.GetNbConstraints())
	check("NewProvingKey", err)
}

func TestProveRespectsCancellation(t *testing.T) {
	tc := compileLanes(t, 10, 2)
	pk := tc.randomKey(t)
	be := NewCPU()
	k, err := be.LoadKey(context.Background(), pk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Prove(ctx, be, pk, k, []*synth.Solution{tc.solve(t)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled prove: got %v, want context.Canceled", err)
	}
	// Cancellation noticed between phases: after H, between MSMs, between proofs.
	for after := 1; after <= 6; after++ {
		ctx := &cancelAfter{Context: context.Background(), n: after}
		_, _, err := Prove(ctx, be, pk, k, []*synth.Solution{tc.solve(t), tc.solve(t)})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled at check %d: got %v, want context.Canceled", after, err)
		}
	}
	// A solution of the wrong circuit is refused before any work.
	other := compileLanes(t, 11, 2)
	if _, _, err := Prove(context.Background(), be, pk, k, []*synth.Solution{other.solve(t)}); err == nil || !strings.Contains(err.Error(), "wires") {
		t.Fatalf("mismatched solution: got %v", err)
	}
}

func TestRandomKeyShape(t *testing.T) {
	gpk, err := RandomKey(1000, 1500, 3)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := NewProvingKey("random", gpk, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if pk.NbWires != 1500 || pk.NbPublic != 3 || pk.DomainSize() != 1024 || len(pk.KZ) != 1497+1023 {
		t.Fatalf("shape: %d wires, %d public, domain %d, %d KZ", pk.NbWires, pk.NbPublic, pk.DomainSize(), len(pk.KZ))
	}
	seen := map[bls12381.G1Affine]bool{}
	for _, p := range append(append([]bls12381.G1Affine{}, gpk.G1.A...), pk.KZ...) {
		if !p.IsOnCurve() || seen[p] {
			t.Fatal("random G1 bases must be distinct points on the curve")
		}
		seen[p] = true
	}
	for _, p := range gpk.G2.B[:50] {
		if !p.IsOnCurve() {
			t.Fatal("random G2 base not on the curve")
		}
	}
	if _, err := RandomKey(10, 3, 3); err == nil {
		t.Fatal("a key without private wires must be refused")
	}
}

func TestNewProvingKeyLaysOutKZOnce(t *testing.T) {
	tc := compileLanes(t, 12, 2)
	gpk, err := RandomKeyFor(tc.name, tc.ccs)
	if err != nil {
		t.Fatal(err)
	}
	// Separate K and Z, as a key read from disk has them.
	gpk.G1.K = append([]bls12381.G1Affine(nil), gpk.G1.K...)
	gpk.G1.Z = append([]bls12381.G1Affine(nil), gpk.G1.Z...)
	k0, z0 := gpk.G1.K[0], gpk.G1.Z[len(gpk.G1.Z)-1]
	pk1, err := NewProvingKey(tc.name, gpk, tc.ccs.GetNbConstraints())
	if err != nil {
		t.Fatal(err)
	}
	nk := len(gpk.G1.K)
	if &pk1.KZ[0] != &gpk.G1.K[0] || &pk1.KZ[nk] != &gpk.G1.Z[0] || pk1.KZ[0] != k0 || pk1.KZ[len(pk1.KZ)-1] != z0 {
		t.Fatal("KZ must hold K then Z, aliased by the gnark key")
	}
	pk2, err := NewProvingKey(tc.name, gpk, tc.ccs.GetNbConstraints())
	if err != nil {
		t.Fatal(err)
	}
	if &pk2.KZ[0] != &pk1.KZ[0] {
		t.Fatal("a second NewProvingKey on the same key must reuse its layout")
	}
}

// cancelAfter is a context that reports cancellation from its n-th Err call on.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n--; c.n <= 0 {
		return context.Canceled
	}
	return nil
}

// A key's Shell holds no bases, leaves the key itself whole, and is all proof assembly
// needs beside a backend key that holds the bases (as a CUDA key does on its device).
func TestShellProvesWithTheBackendKey(t *testing.T) {
	tc := compileLanes(t, 8, 2)
	pk, vk := tc.setup(t)
	nA := len(pk.PK.G1.A)
	shell := pk.Shell()
	if len(shell.KZ) != 0 || len(shell.PK.G1.A)+len(shell.PK.G1.B)+len(shell.PK.G2.B)+len(shell.PK.InfinityA) != 0 {
		t.Fatalf("shell holds bases: %d K/Z, %d A", len(shell.KZ), len(shell.PK.G1.A))
	}
	if len(pk.PK.G1.A) != nA || len(pk.KZ) == 0 {
		t.Fatal("Shell changed the key it was made from")
	}
	if shell.NbWires != pk.NbWires || shell.DomainSize() != pk.DomainSize() || shell.HostBytes() >= pk.HostBytes() {
		t.Fatalf("shell shape %d wires, domain %d; key %d, %d", shell.NbWires, shell.DomainSize(), pk.NbWires, pk.DomainSize())
	}
	cpu := NewCPU()
	key, err := cpu.LoadKey(context.Background(), pk)
	if err != nil {
		t.Fatal(err)
	}
	proofs, _, err := Prove(context.Background(), cpu, shell, key, []*synth.Solution{tc.solve(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyGnark(t, vk, proofs[0], tc.public); err != nil {
		t.Fatalf("proof assembled with the shell: %v", err)
	}
}
