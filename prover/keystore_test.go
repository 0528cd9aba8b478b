package prover

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cuzk/cuzk/synth"
)

// countingBackend counts LoadKey calls.
type countingBackend struct {
	Backend
	loads atomic.Int32
}

func (c *countingBackend) LoadKey(ctx context.Context, pk *ProvingKey) (Key, error) {
	c.loads.Add(1)
	return c.Backend.LoadKey(ctx, pk)
}

func TestSetupKeyStoreProveVerify(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tc := compileLanes(t, 40, 3)
	var steps []string
	m, err := Setup(ctx, "lanes", tc.ccs, dir, func(s string) { steps = append(steps, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 || !strings.Contains(steps[0], "NOT a production ceremony") {
		t.Fatalf("Setup must warn first; steps: %q", steps)
	}
	if m.Origin != OriginDevSetup || m.Warning == "" || m.Constraints != 120 || m.PublicInputs != 1 {
		t.Fatalf("manifest: %+v", m)
	}
	f := CircuitFiles(dir, "lanes")
	if d, err := PKDigest(f.PK); err != nil || d != m.PKDigest {
		t.Fatalf("PKDigest = %s, %v; manifest has %s", d, err, m.PKDigest)
	}
	onDisk, err := ReadManifest(dir, "lanes")
	if err != nil || onDisk.PKDigest != m.PKDigest {
		t.Fatalf("ReadManifest: %+v, %v", onDisk, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("keys dir holds %d entries, want only the circuit's directory", len(entries))
	}
	if _, err := Setup(ctx, "lanes", tc.ccs, dir, nil); err == nil || !strings.Contains(err.Error(), "already has keys") {
		t.Fatalf("second Setup must refuse to overwrite: %v", err)
	}

	be := &countingBackend{Backend: NewCPU()}
	store := NewKeyStore(dir, be)
	defer store.Close()
	var wg sync.WaitGroup
	keys := make([]*LoadedKey, 8)
	errs := make([]error, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = store.Get(ctx, "lanes")
		}()
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("Get %d: %v", i, errs[i])
		}
		if keys[i] != keys[0] {
			t.Fatal("concurrent Gets returned different keys")
		}
	}
	if n := be.loads.Load(); n != 1 {
		t.Fatalf("key loaded %d times, want 1", n)
	}
	lk := keys[0]
	if lk.LoadTime <= 0 || lk.Manifest.PKDigest != m.PKDigest {
		t.Fatalf("loaded key: %+v", lk)
	}

	sol := tc.solve(t)
	public := sol.Public
	proofs, times, err := Prove(ctx, be, lk.PK, lk.Key, []*synth.Solution{sol})
	if err != nil {
		t.Fatal(err)
	}
	if times.Total <= 0 || times.NTT <= 0 || times.MSM <= 0 {
		t.Errorf("phase times not recorded: %+v", times)
	}
	pb, err := EncodeProof(proofs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(lk.VKBytes, pb, public); err != nil {
		t.Fatalf("Verify on stored bytes: %v", err)
	}
	vkFile, _ := os.ReadFile(f.VK)
	if !bytes.Equal(vkFile, lk.VKBytes) {
		t.Fatal("VKBytes differ from vk.bin")
	}
	// gnark itself accepts the proof with the verifying key read from disk.
	if err := verifyGnark(t, lk.VK, proofs[0], tc.public); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyBytes(t *testing.T) {
	tc := compileLanes(t, 10, 2)
	pk, vk := tc.setup(t)
	sol := tc.solve(t)
	public := sol.Public
	proof := proveOne(t, pk, sol)[0]
	var vkb bytes.Buffer
	if _, err := vk.WriteTo(&vkb); err != nil {
		t.Fatal(err)
	}
	pb, err := EncodeProof(proof)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(vkb.Bytes(), pb, public); err != nil {
		t.Fatalf("valid proof: %v", err)
	}

	// Another witness's public part.
	other := *tc
	other.newWitness(t)
	otherPublic, _ := other.public.MarshalBinary()
	if err := Verify(vkb.Bytes(), pb, otherPublic); err == nil {
		t.Fatal("proof verified against another public witness")
	}
	// Another proof of another witness does not pass for this one.
	p2, _ := EncodeProof(proveOne(t, pk, other.solve(t))[0])
	if err := Verify(vkb.Bytes(), p2, public); err == nil {
		t.Fatal("another witness's proof verified")
	}
	if err := Verify(vkb.Bytes(), append(pb, 0), public); err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Fatalf("trailing bytes: %v", err)
	}
	if err := Verify(vkb.Bytes(), pb[:len(pb)-1], public); err == nil {
		t.Fatal("truncated proof accepted")
	}
	if err := Verify(vkb.Bytes()[:40], pb, public); err == nil {
		t.Fatal("truncated vk accepted")
	}
	if err := Verify(vkb.Bytes(), pb, public[:len(public)-1]); err == nil {
		t.Fatal("truncated public witness accepted")
	}
}

func TestKeyStoreFallsBackAndDetectsCorruption(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tc := compileLanes(t, 8, 2)
	if _, err := Setup(ctx, "c", tc.ccs, dir, nil); err != nil {
		t.Fatal(err)
	}
	f := CircuitFiles(dir, "c")
	flip := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 1
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	flip(f.PKDump) // the dump is a cache: pk.bin still serves
	lk, err := LoadKey(ctx, dir, "c", NewCPU())
	if err != nil {
		t.Fatalf("load with a corrupt dump: %v", err)
	}
	pb, pub := proveBytes(t, lk, tc.solve(t))
	if err := Verify(lk.VKBytes, pb, pub); err != nil {
		t.Fatalf("proof with the key read from pk.bin: %v", err)
	}

	flip(f.PK)
	store := NewKeyStore(dir, NewCPU())
	if _, err := store.Get(ctx, "c"); err == nil || !strings.Contains(err.Error(), "does not match the manifest") {
		t.Fatalf("corrupt pk.bin and dump: %v", err)
	}
	if _, err := store.Get(ctx, "missing"); err == nil || !strings.Contains(err.Error(), "no keys") {
		t.Fatalf("unknown circuit: %v", err)
	}
	if _, err := store.Get(ctx, "../etc"); err == nil || !strings.Contains(err.Error(), "invalid circuit name") {
		t.Fatalf("path-like circuit name: %v", err)
	}
}

func TestImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	tc := compileLanes(t, 30, 2)
	pk, vk := tc.setup(t) // "elsewhere"
	save := func(name string, fn func(f *os.File) error) string {
		p := filepath.Join(src, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r1csPath := save("c.r1cs", func(f *os.File) error { _, err := tc.ccs.WriteTo(f); return err })
	pkPath := save("c.pk", func(f *os.File) error { _, err := pk.PK.WriteTo(f); return err }) // compressed
	vkPath := save("c.vk", func(f *os.File) error { _, err := vk.WriteTo(f); return err })

	// A verifying key from another setup of the same circuit is detected.
	_, vk2 := tc.setup(t)
	vk2Path := save("c2.vk", func(f *os.File) error { _, err := vk2.WriteTo(f); return err })
	keys := t.TempDir()
	if _, err := Import(ctx, "imp", r1csPath, pkPath, vk2Path, keys, nil); err == nil || !strings.Contains(err.Error(), "different setups") {
		t.Fatalf("mismatched vk: %v", err)
	}
	// A key for another circuit of another shape is detected.
	small := compileLanes(t, 5, 1)
	smallPath := save("small.r1cs", func(f *os.File) error { _, err := small.ccs.WriteTo(f); return err })
	if _, err := Import(ctx, "imp", smallPath, pkPath, vkPath, keys, nil); err == nil {
		t.Fatal("r1cs of another circuit accepted")
	}
	if entries, _ := os.ReadDir(keys); len(entries) != 0 {
		t.Fatalf("failed imports left %d entries in the keys dir", len(entries))
	}

	m, err := Import(ctx, "imp", r1csPath, pkPath, vkPath, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Origin != OriginImport || m.Warning != "" {
		t.Fatalf("manifest: %+v", m)
	}
	raw, _ := os.ReadFile(CircuitFiles(keys, "imp").Manifest)
	var back Manifest
	if err := json.Unmarshal(raw, &back); err != nil || back.PKDigest != m.PKDigest {
		t.Fatalf("manifest on disk: %v", err)
	}

	store := NewKeyStore(keys, NewCPU())
	lk, err := store.Get(ctx, "imp")
	if err != nil {
		t.Fatal(err)
	}
	pb, pub := proveBytes(t, lk, tc.solve(t))
	var vkb bytes.Buffer
	vk.WriteTo(&vkb)
	if err := Verify(vkb.Bytes(), pb, pub); err != nil {
		t.Fatalf("proof with imported key against the original vk: %v", err)
	}
}
