package setup

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/setup/setuptest"
	"github.com/cuzk/cuzk/synth"
)

func compile(t testing.TB, name string) *synth.Compiled {
	t.Helper()
	c, err := synth.NewRegistry(t.TempDir()).Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// makeKeys runs Write with crypto/rand seeded by seed and returns the dump's bytes,
// the decoded proving key and the verifying key.
func makeKeys(t *testing.T, r1cs *cs.R1CS, seed uint64, o Options) ([]byte, *groth16bls.ProvingKey, *groth16bls.VerifyingKey) {
	t.Helper()
	cryptotest.SetGlobalRandom(t, seed)
	var buf bytes.Buffer
	vk, err := Write(context.Background(), r1cs, &buf, o)
	if err != nil {
		t.Fatal(err)
	}
	pk := new(groth16bls.ProvingKey)
	if err := pk.ReadDump(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("the written key does not read back with ReadDump: %v", err)
	}
	return buf.Bytes(), pk, vk
}

// TestWriteIsGnarkSetup: from the same toxic waste (crypto/rand seeded alike), the
// dump Write produces is byte for byte the WriteDump of the key gnark's groth16.Setup
// makes, and the verifying keys are equal field by field (unexported ones included).
// Chunks of 1000 points make every vector span several chunks, the last one partial.
func TestWriteIsGnarkSetup(t *testing.T) {
	c := compile(t, "synthetic-k12")
	var gpk groth16bls.ProvingKey
	var gvk groth16bls.VerifyingKey
	cryptotest.SetGlobalRandom(t, 7)
	if err := groth16bls.Setup(c.CS, &gpk, &gvk); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := gpk.WriteDump(&want); err != nil {
		t.Fatal(err)
	}
	got, pk, vk := makeKeys(t, c.CS, 7, Options{Chunk: 1000})
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("dump differs from gnark's: %d bytes, gnark %d; first difference at %d", len(got), want.Len(), firstDiff(got, want.Bytes()))
	}
	if !reflect.DeepEqual(vk, &gvk) {
		t.Error("verifying key differs from gnark's Setup's")
	}
	if len(gpk.G1.A) == 0 || gpk.NbInfinityA == 0 || gpk.NbInfinityB == 0 {
		t.Fatalf("circuit too plain to test the infinity markers: %d A points, %d/%d at infinity", len(gpk.G1.A), gpk.NbInfinityA, gpk.NbInfinityB)
	}
	if !reflect.DeepEqual(pk.InfinityA, gpk.InfinityA) || !reflect.DeepEqual(pk.G2.B, gpk.G2.B) || !reflect.DeepEqual(pk.G1.Z, gpk.G1.Z) {
		t.Error("decoded key differs from gnark's")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSampledPoints checks, at 2^12 and 2^16, sampled points of every vector of the
// key against the scalar gnark's Setup defines for it times the generator, both
// computed here independently: the QAP by gnark's own sequential recurrence over the
// R1C iterator, the points by gnark-crypto's ScalarMultiplication.
func TestSampledPoints(t *testing.T) {
	for _, name := range []string{"synthetic-k12", "synthetic-k16"} {
		t.Run(name, func(t *testing.T) {
			c := compile(t, name)
			_, pk, vk := makeKeys(t, c.CS, 11, Options{Chunk: 1 << 13})
			cryptotest.SetGlobalRandom(t, 11)
			domain := fft.NewDomain(uint64(c.CS.GetNbConstraints()))
			tw, err := sampleToxicWaste(domain.Cardinality)
			if err != nil {
				t.Fatal(err)
			}
			checkSampled(t, c.CS, domain, &tw, pk, vk)
		})
	}
}

func checkSampled(t *testing.T, r1cs *cs.R1CS, domain *fft.Domain, tw *toxicWaste, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) {
	A, B, C := referenceQAP(r1cs, domain, tw)
	nbPublic := r1cs.GetNbPublicVariables()
	_, _, g1, g2 := curve.Generators()
	rng := rand.New(rand.NewPCG(1, 2))
	sample := func(n int) []int {
		idx := []int{0, n - 1}
		for range 24 {
			idx = append(idx, rng.IntN(n))
		}
		return idx
	}
	k := func(i int, inv *fr.Element) fr.Element {
		var t0, t1 fr.Element
		t1.Mul(&A[i], &tw.beta)
		t0.Mul(&B[i], &tw.alpha)
		t1.Add(&t1, &t0).Add(&t1, &C[i]).Mul(&t1, inv)
		return t1
	}
	checkG1 := func(what string, i int, got curve.G1Affine, s fr.Element) {
		var want curve.G1Affine
		want.ScalarMultiplication(&g1, s.BigInt(new(big.Int)))
		if !got.Equal(&want) {
			t.Errorf("%s[%d] is not its scalar times the G1 generator", what, i)
		}
	}
	// A and B keep the non-zero entries in wire order: map key index -> wire.
	nonZero := func(v []fr.Element, inf []bool) []int {
		var w []int
		for i := range v {
			if inf[i] != v[i].IsZero() {
				t.Fatalf("infinity marker of wire %d is %v, its scalar zero is %v", i, inf[i], v[i].IsZero())
			}
			if !inf[i] {
				w = append(w, i)
			}
		}
		return w
	}
	wa, wb := nonZero(A, pk.InfinityA), nonZero(B, pk.InfinityB)
	if len(wa) != len(pk.G1.A) || len(wb) != len(pk.G1.B) || len(wb) != len(pk.G2.B) {
		t.Fatalf("key has %d A, %d B, %d G2 B points, want %d, %d", len(pk.G1.A), len(pk.G1.B), len(pk.G2.B), len(wa), len(wb))
	}
	for _, i := range sample(len(wa)) {
		checkG1("G1.A", i, pk.G1.A[i], A[wa[i]])
	}
	for _, i := range sample(len(wb)) {
		checkG1("G1.B", i, pk.G1.B[i], B[wb[i]])
		var want curve.G2Affine
		want.ScalarMultiplication(&g2, B[wb[i]].BigInt(new(big.Int)))
		if !pk.G2.B[i].Equal(&want) {
			t.Errorf("G2.B[%d] is not its scalar times the G2 generator", i)
		}
	}
	if len(pk.G1.K) != len(A)-nbPublic || len(vk.G1.K) != nbPublic {
		t.Fatalf("%d pk K, %d vk K points for %d wires, %d public", len(pk.G1.K), len(vk.G1.K), len(A), nbPublic)
	}
	for _, i := range sample(len(pk.G1.K)) {
		checkG1("pk G1.K", i, pk.G1.K[i], k(nbPublic+i, &tw.deltaInv))
	}
	for i := range vk.G1.K {
		checkG1("vk G1.K", i, vk.G1.K[i], k(i, &tw.gammaInv))
	}
	// Z[i] = (τ^n-1)/δ·τ^rev(i), rev the bit reversal over log n bits.
	n := int(domain.Cardinality)
	if len(pk.G1.Z) != n-1 {
		t.Fatalf("%d Z points, want %d", len(pk.G1.Z), n-1)
	}
	logN := 0
	for 1<<logN < n {
		logN++
	}
	for _, i := range sample(n - 1) {
		rev := 0
		for b := range logN {
			rev |= (i >> b & 1) << (logN - 1 - b)
		}
		var s, one fr.Element
		one.SetOne()
		s.Exp(tw.t, big.NewInt(int64(n))).Sub(&s, &one).Mul(&s, &tw.deltaInv)
		var tr fr.Element
		tr.Exp(tw.t, big.NewInt(int64(rev)))
		s.Mul(&s, &tr)
		checkG1("G1.Z", i, pk.G1.Z[i], s)
	}
	for _, p := range []struct {
		what string
		got  curve.G1Affine
		s    fr.Element
	}{{"α₁", pk.G1.Alpha, tw.alpha}, {"β₁", pk.G1.Beta, tw.beta}, {"δ₁", pk.G1.Delta, tw.delta}, {"vk α₁", vk.G1.Alpha, tw.alpha}} {
		checkG1(p.what, 0, p.got, p.s)
	}
	for _, p := range []struct {
		what string
		got  curve.G2Affine
		s    fr.Element
	}{{"β₂", pk.G2.Beta, tw.beta}, {"δ₂", pk.G2.Delta, tw.delta}, {"vk γ₂", vk.G2.Gamma, tw.gamma}, {"vk δ₂", vk.G2.Delta, tw.delta}} {
		var want curve.G2Affine
		want.ScalarMultiplication(&g2, p.s.BigInt(new(big.Int)))
		if !p.got.Equal(&want) {
			t.Errorf("%s is not its scalar times the G2 generator", p.what)
		}
	}
}

// referenceQAP is gnark v0.14.0's setupABC: L_0 from the closed form, then
// L_{j+1} = ω·L_j·(τ-ω^j)/(τ-ω^{j+1}), accumulated constraint by constraint.
func referenceQAP(r1cs *cs.R1CS, domain *fft.Domain, tw *toxicWaste) (A, B, C []fr.Element) {
	nbWires := r1cs.NbInternalVariables + r1cs.GetNbPublicVariables() + r1cs.GetNbSecretVariables()
	A, B, C = make([]fr.Element, nbWires), make([]fr.Element, nbWires), make([]fr.Element, nbWires)
	one := fr.One()
	w := domain.Generator
	wi := fr.One()
	tt := make([]fr.Element, r1cs.GetNbConstraints()+1)
	for i := range tt {
		tt[i].Sub(&tw.t, &wi)
		wi.Mul(&wi, &w)
	}
	tInv := fr.BatchInvert(tt)
	var L fr.Element
	L.Exp(tw.t, big.NewInt(int64(domain.Cardinality))).Sub(&L, &one)
	L.Mul(&L, &tInv[0]).Mul(&L, &domain.CardinalityInv)
	acc := func(res *fr.Element, term constraint.Term) {
		var v fr.Element
		v.Mul(&r1cs.Coefficients[term.CoeffID()], &L)
		res.Add(res, &v)
	}
	it := r1cs.GetR1CIterator()
	for j, c := 0, it.Next(); c != nil; j, c = j+1, it.Next() {
		for _, term := range c.L {
			acc(&A[term.WireID()], term)
		}
		for _, term := range c.R {
			acc(&B[term.WireID()], term)
		}
		for _, term := range c.O {
			acc(&C[term.WireID()], term)
		}
		L.Mul(&L, &w).Mul(&L, &tt[j]).Mul(&L, &tInv[j+1])
	}
	return A, B, C
}

// TestProofsVerify: a proof by cuzk's prover with the written key verifies with
// gnark's verifier and the written verifying key, and fails with another key's.
func TestProofsVerify(t *testing.T) {
	ctx := context.Background()
	c := compile(t, "synthetic-k12")
	_, gpk, vk := makeKeys(t, c.CS, 3, Options{})
	_, _, otherVK := makeKeys(t, c.CS, 4, Options{})
	pk, err := prover.NewProvingKey(c.Name, gpk, c.NbConstraints())
	if err != nil {
		t.Fatal(err)
	}
	cpu := prover.NewCPU()
	key, err := cpu.LoadKey(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	inputs, err := synth.Inputs(c.Name, 5)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := synth.Solve(ctx, c, inputs)
	if err != nil {
		t.Fatal(err)
	}
	public, err := sol.Witness.Public()
	if err != nil {
		t.Fatal(err)
	}
	proofs, _, err := prover.Prove(ctx, cpu, pk, key, []*synth.Solution{sol})
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proofs[0], vk, public); err != nil {
		t.Fatalf("proof with the new key does not verify: %v", err)
	}
	if err := groth16.Verify(proofs[0], otherVK, public); err == nil {
		t.Fatal("proof verifies with another setup's verifying key")
	}
}

// TestFixedBaseCPU: the CPU multiplier on the edge scalars (0, 1, r-1, small values).
func TestFixedBaseCPU(t *testing.T) {
	setuptest.CheckFixedBase(t, CPU{}, 1000)
}

// TestToxicWasteNotWritten: none of τ, α, β, γ, δ, 1/γ, 1/δ appears in the written key
// or in what Phase is told, in Montgomery form or as a canonical integer (either byte
// order).
func TestToxicWasteNotWritten(t *testing.T) {
	c := compile(t, "synthetic-k12")
	var said strings.Builder
	dump, _, vk := makeKeys(t, c.CS, 13, Options{Phase: func(name string, d time.Duration) { fmt.Fprintln(&said, name, d) }})
	var vkb bytes.Buffer
	if _, err := vk.WriteTo(&vkb); err != nil {
		t.Fatal(err)
	}
	cryptotest.SetGlobalRandom(t, 13)
	tw, err := sampleToxicWaste(fft.NewDomain(uint64(c.CS.GetNbConstraints())).Cardinality)
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]fr.Element{"τ": tw.t, "α": tw.alpha, "β": tw.beta, "γ": tw.gamma, "δ": tw.delta, "1/γ": tw.gammaInv, "1/δ": tw.deltaInv} {
		limbs := e.Bits() // canonical
		be := e.Bytes()
		le := slices.Clone(be[:])
		slices.Reverse(le)
		var raw [32]byte
		for i, w := range e { // Montgomery limbs, as memory holds them
			binary.LittleEndian.PutUint64(raw[8*i:], w)
		}
		var canon [32]byte
		for i, w := range limbs {
			binary.LittleEndian.PutUint64(canon[8*i:], w)
		}
		for form, b := range map[string][]byte{"Montgomery": raw[:], "canonical LE": canon[:], "big-endian": be[:], "little-endian": le} {
			if bytes.Contains(dump, b[:16]) || bytes.Contains(vkb.Bytes(), b[:16]) {
				t.Errorf("%s (%s) appears in the written keys", name, form)
			}
		}
		if strings.Contains(said.String(), e.String()) {
			t.Errorf("%s appears in the phase report", name)
		}
	}
}
