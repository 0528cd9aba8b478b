package gpu

import (
	"bytes"
	"context"
	"testing"
	"testing/cryptotest"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/setup"
	"github.com/cuzk/cuzk/setup/setuptest"
	"github.com/cuzk/cuzk/synth"
)

// testFixedBase opens the GPU multiplier, or skips saying why there is none.
func testFixedBase(t *testing.T) *FixedBase {
	t.Helper()
	f, err := NewFixedBase(0)
	if IsUnavailable(err) {
		t.Skipf("no CUDA library or device (the GPU host runs this): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// TestFixedBaseEdges: every GPU point equals gnark-crypto's on 0, 1, r-1, small values
// and random scalars.
func TestFixedBaseEdges(t *testing.T) {
	setuptest.CheckFixedBase(t, testFixedBase(t), 3000)
}

// TestFixedBaseLarge: more points than one device pass (2^21) and a last affine group
// cut short, against gnark-crypto's batch multiplication on the CPU.
func TestFixedBaseLarge(t *testing.T) {
	f := testFixedBase(t)
	n := 1<<21 + 4097
	s := setuptest.EdgeScalars(n, 5)
	_, _, g1, g2 := bls12381.Generators()
	o1 := make([]bls12381.G1Affine, n)
	if err := f.G1(context.Background(), s, o1); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, w := range bls12381.BatchScalarMultiplicationG1(&g1, s) {
		if !o1[i].Equal(&w) {
			bad++
		}
	}
	o2 := make([]bls12381.G2Affine, n)
	if err := f.G2(context.Background(), s, o2); err != nil {
		t.Fatal(err)
	}
	for i, w := range bls12381.BatchScalarMultiplicationG2(&g2, s) {
		if !o2[i].Equal(&w) {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d G1 and G2 points differ from gnark-crypto's", bad, 2*n)
	}
}

// TestSetupOnGPUIsGnarks: keys made with the GPU multiplier are byte for byte the
// dump of gnark's Setup's from the same toxic waste.
func TestSetupOnGPUIsGnarks(t *testing.T) {
	f := testFixedBase(t)
	c, err := synth.NewRegistry(t.TempDir()).Get(context.Background(), "synthetic-k12")
	if err != nil {
		t.Fatal(err)
	}
	var gpk groth16bls.ProvingKey
	var gvk groth16bls.VerifyingKey
	cryptotest.SetGlobalRandom(t, 21)
	if err := groth16bls.Setup(c.CS, &gpk, &gvk); err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := gpk.WriteDump(&want); err != nil {
		t.Fatal(err)
	}
	cryptotest.SetGlobalRandom(t, 21)
	if _, err := setup.Write(context.Background(), c.CS, &got, setup.Options{Mul: f, Chunk: 1000}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("dump made on %s differs from gnark's Setup's (%d and %d bytes)", f.Name(), got.Len(), want.Len())
	}
}
