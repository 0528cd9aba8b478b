package keys

import (
	"bytes"
	"testing"

	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// readDumpKZ reads every dump as gnark's ReadDump does, with K right before Z in one
// vector, so that the prover takes K‖Z without copying: for the cube key and keys of
// built-in circuits (random points), the key read is the one written (its dump again,
// byte for byte, equal to gnark's reading), and NewProvingKey's K‖Z is the key's own
// memory.
func TestReadDumpKZ(t *testing.T) {
	gpk, _, err := groth16.Setup(compileCube(t))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]*groth16bls.ProvingKey{"cube": gpk.(*groth16bls.ProvingKey)}
	for _, name := range []string{"synthetic-k6", "porep-k16"} {
		c, err := synth.NewRegistry(t.TempDir()).Get(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if keys[name], err = prover.RandomKeyFor(name, c.CS); err != nil {
			t.Fatal(err)
		}
	}
	for name, pk := range keys {
		var b bytes.Buffer
		if err := pk.WriteDump(&b); err != nil {
			t.Fatal(err)
		}
		want := new(groth16bls.ProvingKey)
		if err := want.ReadDump(bytes.NewReader(b.Bytes())); err != nil {
			t.Fatal(err)
		}
		got, err := readDumpKZ(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var again bytes.Buffer
		if err := got.WriteDump(&again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw(t, got), raw(t, want)) || !bytes.Equal(again.Bytes(), b.Bytes()) {
			t.Errorf("%s: the key read differs from gnark's reading of its dump", name)
		}
		nk, nz := len(got.G1.K), len(got.G1.Z)
		if nk == 0 || nz == 0 || &got.G1.K[:nk+1][nk] != &got.G1.Z[0] {
			t.Fatalf("%s: K (%d) and Z (%d) are not one vector", name, nk, nz)
		}
		ppk, err := prover.NewProvingKey(name, got, int(got.Domain.Cardinality))
		if err != nil {
			t.Fatal(err)
		}
		if &ppk.KZ[0] != &got.G1.K[0] || &ppk.KZ[nk] != &got.G1.Z[0] {
			t.Errorf("%s: NewProvingKey copied K and Z instead of taking them as they lie", name)
		}
	}
	// A damaged stream fails as gnark's reading fails, naming the slice.
	var b bytes.Buffer
	if err := keys["cube"].WriteDump(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := readDumpKZ(bytes.NewReader(b.Bytes()[:b.Len()-10])); err == nil || !bytes.Contains([]byte(err.Error()), []byte("read G2.B")) {
		t.Errorf("truncated dump: %v, want an error reading G2.B", err)
	}
}
