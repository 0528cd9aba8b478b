package keys

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/setup"
	"github.com/cuzk/cuzk/synth"
)

// rawPointBytes is the size of pk's points in memory (what the dump must hold).
func rawPointBytes(pk *groth16bls.ProvingKey) int64 {
	g1, g2 := int64(unsafe.Sizeof(bls12381.G1Affine{})), int64(unsafe.Sizeof(bls12381.G2Affine{}))
	return g1*int64(pk.NbG1()) + g2*int64(pk.NbG2())
}

// Setup writes the proving key once, as the dump: no pk.bin; the sidecar names the
// dump as the key; Load takes it from the dump with and without the digest, refuses
// another digest, and the key proves.
func TestSetupWritesKeyOnce(t *testing.T) {
	d := Dir(t.TempDir())
	ccs := compileCube(t)
	vk, digest, err := d.Setup(context.Background(), "cube", ccs, setup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(d.Path("cube", ""))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{DumpFile, DumpSumFile, VKFile}; !slices.Equal(names, want) {
		t.Fatalf("files after Setup: %v, want %v", names, want)
	}
	if got := wantTreeOf(t, d.Path("cube", DumpFile), treeChunk); got != digest {
		t.Errorf("pk digest %s, the dump's tree digest is %s", digest, got)
	}
	if got, err := DumpDigest(d.Path("cube", DumpFile)); err != nil || got != digest {
		t.Errorf("DumpDigest = %s, %v; want the pk digest %s", got, err, digest)
	}
	if !d.Has("cube") {
		t.Error("Has is false for a key written as the dump")
	}
	if got, err := d.Digest("cube"); err != nil || got != digest {
		t.Errorf("Digest = %s, %v; want %s", got, err, digest)
	}
	for _, dg := range []string{digest, ""} {
		pk, lvk, st, _ := load(t, d, dg)
		if st.Source != SourceDump || st.DumpWritten {
			t.Errorf("digest %q: %+v, want the dump", dg, st)
		}
		if !bytes.Equal(encodeVK(t, lvk), encodeVK(t, vk)) {
			t.Error("verifying key on disk differs from Setup's")
		}
		proveVerify(t, ccs, pk, lvk)
		if dumpBytes := fileSize(d.Path("cube", DumpFile)); dumpBytes <= rawPointBytes(pk) {
			t.Errorf("dump of %d bytes cannot hold %d bytes of points", dumpBytes, rawPointBytes(pk))
		}
	}
	other := strings.Repeat("0f", 32)
	if pk, _, _, err := d.LoadLogged("cube", other, nil); pk != nil || err == nil || !strings.Contains(err.Error(), "pk_digest of cube is "+other) {
		t.Errorf("load with another digest: key %v, err %v", pk != nil, err)
	}
}

// A key written as the dump alone has nothing to be rebuilt from: a damaged dump, a
// dump of another format or a missing dump fail the load, naming the file.
func TestDumpOnlyKeyDamageFails(t *testing.T) {
	for name, spoil := range map[string]func(d Dir){
		"flipped byte": func(d Dir) {
			b, _ := os.ReadFile(d.Path("cube", DumpFile))
			b[len(b)/2] ^= 1
			_ = os.WriteFile(d.Path("cube", DumpFile), b, 0o644)
		},
		"truncated":      func(d Dir) { _ = os.Truncate(d.Path("cube", DumpFile), 100) },
		"another format": func(d Dir) { editSum(t, d, func(s *dumpSum) { s.Format = "gnark v0.13.0 other" }) },
		"no dump":        func(d Dir) { _ = os.Remove(d.Path("cube", DumpFile)) },
	} {
		t.Run(name, func(t *testing.T) {
			d := Dir(t.TempDir())
			_, digest, err := d.Setup(context.Background(), "cube", compileCube(t), setup.Options{})
			if err != nil {
				t.Fatal(err)
			}
			spoil(d)
			pk, _, _, err := d.LoadLogged("cube", digest, nil)
			if pk != nil || err == nil || !strings.Contains(err.Error(), filepath.Join("cube", DumpFile)) {
				t.Errorf("load: key %v, err %v; want an error naming %s", pk != nil, err, DumpFile)
			}
		})
	}
}

// The dump's size stays within 1.15x of the raw point bytes it holds, at 2^16: the
// header (domain, infinity markers) is small beside the points.
func TestDumpSizeBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2^16 setup")
	}
	d := Dir(t.TempDir())
	compiled := compileBuiltin(t, "synthetic-k16")
	_, digest, err := d.Setup(context.Background(), "synthetic-k16", compiled.CS, setup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pk, _, err := d.Load("synthetic-k16", digest)
	if err != nil {
		t.Fatal(err)
	}
	size, raw := fileSize(d.Path("synthetic-k16", DumpFile)), rawPointBytes(pk)
	t.Logf("dump %d bytes, points %d bytes: %.4fx", size, raw, float64(size)/float64(raw))
	if float64(size) > 1.15*float64(raw) {
		t.Errorf("dump %d bytes is over 1.15x its %d bytes of points", size, raw)
	}
	ents, _ := os.ReadDir(d.Path("synthetic-k16", ""))
	if len(ents) != 3 {
		t.Errorf("%d files in the key's directory, want 3 (one copy of the key)", len(ents))
	}
}

func encodeVK(t *testing.T, vk *groth16bls.VerifyingKey) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := vk.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func compileBuiltin(t *testing.T, name string) *synth.Compiled {
	t.Helper()
	c, err := synth.NewRegistry(t.TempDir()).Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
