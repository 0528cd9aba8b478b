package keys

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
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
		b, want := dumpOf(t, pk)
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

// TestDumpReaderBulk reads a dump from its file as the load does (dumpReader), with
// chunks small and not a point's size, so that every vector goes through the reads on
// every core: the key equals gnark's reading of the dump, the reader ends at the
// file's end, and a vector whose length runs past the end fails before it is allocated.
func TestDumpReaderBulk(t *testing.T) {
	c, err := synth.NewRegistry(t.TempDir()).Get(t.Context(), "porep-k16")
	if err != nil {
		t.Fatal(err)
	}
	pk, err := prover.RandomKeyFor("porep-k16", c.CS)
	if err != nil {
		t.Fatal(err)
	}
	b, want := dumpOf(t, pk)
	read := func(dump []byte) (*groth16bls.ProvingKey, *dumpReader, error) {
		path := filepath.Join(t.TempDir(), DumpFile)
		if err := os.WriteFile(path, dump, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		r := newDumpReader(f, int64(len(dump)), nil, nil)
		r.chunk = 1000
		pk, err := readDumpKZ(r)
		return pk, r, err
	}
	got, r, err := read(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw(t, got), raw(t, want)) {
		t.Error("the key read in chunks differs from gnark's reading of its dump")
	}
	if r.off != int64(b.Len()) {
		t.Errorf("reader at %d after the key, want the file's end %d", r.off, b.Len())
	}
	if n, _ := io.Copy(io.Discard, r); n != 0 {
		t.Errorf("%d bytes after the key", n)
	}
	// Cut inside G1.A: its length now runs past the file's end.
	if _, _, err := read(b.Bytes()[:b.Len()/4]); err == nil || !strings.Contains(err.Error(), "runs past the file's end") {
		t.Errorf("dump cut in G1.A: %v, want a vector running past the file's end", err)
	}
}

// dumpOf is pk's dump and gnark's reading of it.
func dumpOf(t *testing.T, pk *groth16bls.ProvingKey) (*bytes.Buffer, *groth16bls.ProvingKey) {
	t.Helper()
	var b bytes.Buffer
	if err := pk.WriteDump(&b); err != nil {
		t.Fatal(err)
	}
	want := new(groth16bls.ProvingKey)
	if err := want.ReadDump(bytes.NewReader(b.Bytes())); err != nil {
		t.Fatal(err)
	}
	return &b, want
}
