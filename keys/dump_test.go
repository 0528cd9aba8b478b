package keys

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// cubeCircuit: x³ + x + 5 == y, a few constraints with one public input.
type cubeCircuit struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func (c *cubeCircuit) Define(api frontend.API) error {
	x3 := api.Mul(c.X, c.X, c.X)
	api.AssertIsEqual(c.Y, api.Add(x3, c.X, 5))
	return nil
}

func compileCube(t testing.TB) *cs.R1CS {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &cubeCircuit{})
	if err != nil {
		t.Fatal(err)
	}
	return ccs.(*cs.R1CS)
}

// setupCube makes a keys directory of the cube circuit as cuzk wrote them before keys
// were written once: pk.bin (gnark's groth16.Setup, WriteTo), vk.bin, and the dump
// made from pk.bin with its sidecar. It returns pk.bin's digest.
func setupCube(t *testing.T) (Dir, *cs.R1CS, string) {
	t.Helper()
	d := Dir(t.TempDir())
	ccs := compileCube(t)
	gpk, gvk, err := groth16.Setup(ccs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.Path("cube", ""), dirPerm); err != nil {
		t.Fatal(err)
	}
	for f, w := range map[string]io.WriterTo{PKFile: gpk, VKFile: gvk} {
		if err := writeAtomic(d.Path("cube", f), func(out io.Writer) error { _, err := w.WriteTo(out); return err }); err != nil {
			t.Fatal(err)
		}
	}
	digest, err := FileDigest(d.Path("cube", PKFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.writeDump("cube", gpk.(*groth16bls.ProvingKey), digest, fileSize(d.Path("cube", PKFile))); err != nil {
		t.Fatal(err)
	}
	return d, ccs, digest
}

// load is LoadLogged with its log lines returned.
func load(t *testing.T, d Dir, digest string) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, LoadStats, string) {
	t.Helper()
	var buf bytes.Buffer
	pk, vk, st, err := d.LoadLogged("cube", digest, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatalf("load: %v\nlog:\n%s", err, buf.String())
	}
	return pk, vk, st, buf.String()
}

// raw is the key's uncompressed encoding, to compare keys whatever file they came from.
func raw(t *testing.T, pk *groth16bls.ProvingKey) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := pk.WriteRawTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pkBinKey is the key as pk.bin holds it, parsed the old way.
func pkBinKey(t *testing.T, d Dir) *groth16bls.ProvingKey {
	t.Helper()
	pk, _, err := d.readPK("cube", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

func readSumFile(t *testing.T, d Dir) dumpSum {
	t.Helper()
	b, err := os.ReadFile(d.Path("cube", DumpSumFile))
	if err != nil {
		t.Fatal(err)
	}
	var s dumpSum
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func editSum(t *testing.T, d Dir, edit func(*dumpSum)) {
	t.Helper()
	s := readSumFile(t, d)
	edit(&s)
	b, _ := json.Marshal(s)
	if err := os.WriteFile(d.Path("cube", DumpSumFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// proveVerify proves x = 3 with pk and checks the proof with gnark's Verify.
func proveVerify(t *testing.T, ccs *cs.R1CS, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) {
	t.Helper()
	full, err := frontend.NewWitness(&cubeCircuit{X: 3, Y: 35}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	public, err := full.Public()
	if err != nil {
		t.Fatal(err)
	}
	proof, err := groth16.Prove(ccs, pk, full)
	if err != nil {
		t.Fatal(err)
	}
	if err := groth16.Verify(proof, vk, public); err != nil {
		t.Fatalf("proof made with the loaded key does not verify: %v", err)
	}
}

func TestOldDirectoryLoadsFromItsDump(t *testing.T) {
	d, ccs, digest := setupCube(t)
	s := readSumFile(t, d)
	if s.Format != DumpFormat || s.PKDigest != digest || s.DumpBytes != fileSize(d.Path("cube", DumpFile)) {
		t.Fatalf("sidecar of an old directory: %+v; want format %q, pk digest %s and the dump's size", s, DumpFormat, digest)
	}
	if got := wantTreeOf(t, d.Path("cube", DumpFile), treeChunk); got != s.DumpTree || s.DumpChunk != treeChunk {
		t.Errorf("sidecar records dump tree digest %s in chunks of %d, the file has %s", s.DumpTree, s.DumpChunk, got)
	}

	pk, vk, st, log := load(t, d, digest)
	if st.Source != SourceDump || st.DumpWritten || st.Bytes != s.DumpBytes {
		t.Errorf("load after Setup: %+v, want it from the dump, nothing written", st)
	}
	if !bytes.Equal(raw(t, pk), raw(t, pkBinKey(t, d))) {
		t.Error("the key read from pk.dump differs from pk.bin's")
	}
	for _, want := range []string{`msg="loading proving key" circuit=cube from=pk.dump`, `msg="proving key loaded" circuit=cube from=pk.dump`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "WARN") {
		t.Errorf("a good dump logged a warning:\n%s", log)
	}
	proveVerify(t, ccs, pk, vk)

	// Without a registered digest the dump is still used: pk.bin is only hashed.
	if _, _, st, _ := load(t, d, ""); st.Source != SourceDump {
		t.Errorf("load without a digest: %+v, want it from the dump", st)
	}
}

func TestFirstLoadWritesDump(t *testing.T) {
	d, ccs, digest := setupCube(t)
	for _, f := range []string{DumpFile, DumpSumFile} {
		if err := os.Remove(d.Path("cube", f)); err != nil {
			t.Fatal(err)
		}
	}
	_, _, st, log := load(t, d, digest)
	if st.Source != SourcePK || !st.DumpWritten {
		t.Fatalf("first load without a dump: %+v, want pk.bin and a dump written", st)
	}
	if strings.Contains(log, "WARN") {
		t.Errorf("a missing dump is no reason to warn:\n%s", log)
	}
	if s := readSumFile(t, d); s.PKDigest != digest {
		t.Errorf("sidecar written by Load names %s, want %s", s.PKDigest, digest)
	}
	pk, vk, st, _ := load(t, d, digest)
	if st.Source != SourceDump || st.DumpWritten {
		t.Errorf("second load: %+v, want the dump", st)
	}
	proveVerify(t, ccs, pk, vk)
}

// Without pk.bin the key is missing, even with a good dump beside it: the error names
// pk.bin, and nothing is loaded from the cache.
func TestLoadWithoutPKBinFails(t *testing.T) {
	d, _, digest := setupCube(t)
	if err := os.Remove(d.Path("cube", PKFile)); err != nil {
		t.Fatal(err)
	}
	for _, dg := range []string{digest, ""} {
		pk, _, _, err := d.LoadLogged("cube", dg, nil)
		if err == nil || pk != nil || !strings.Contains(err.Error(), PKFile) {
			t.Errorf("load (digest %q) without pk.bin: key %v, error %v; want an error naming %s", dg, pk != nil, err, PKFile)
		}
	}
}

// A dump that fails a check is not used: the key comes from pk.bin, the dump is
// rebuilt and the next load uses it.
func TestBadDumpIsRebuilt(t *testing.T) {
	cases := []struct {
		name, reason string
		spoil        func(t *testing.T, d Dir)
	}{
		{"flipped byte", "corrupt", func(t *testing.T, d Dir) {
			p := d.Path("cube", DumpFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x40
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"huge length", "corrupt", func(t *testing.T, d Dir) {
			// G2.B's length (the last slice; no commitments): ReadDump would
			// allocate 2^40 points (192 TiB) if it ran before the hash check.
			p := d.Path("cube", DumpFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			nB := len(pkBinKey(t, d).G2.B)
			at := len(b) - nB*int(unsafe.Sizeof(bls12381.G2Affine{})) - 8
			if got := binary.LittleEndian.Uint64(b[at:]); got != uint64(nB) {
				t.Fatalf("G2.B length at %d is %d, want %d: the dump layout changed", at, got, nB)
			}
			binary.LittleEndian.PutUint64(b[at:], 1<<40)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", DumpFile + " has ", func(t *testing.T, d Dir) {
			p := d.Path("cube", DumpFile)
			if err := os.Truncate(p, fileSize(p)-100); err != nil {
				t.Fatal(err)
			}
		}},
		{"another key's dump", "dump was made from proving key", func(t *testing.T, d Dir) {
			editSum(t, d, func(s *dumpSum) { s.PKDigest = strings.Repeat("ab", 32) })
		}},
		{"another format", "dump format", func(t *testing.T, d Dir) {
			editSum(t, d, func(s *dumpSum) { s.Format = "gnark v0.13.0 gnark-crypto v0.18.0 bls12-381 WriteDump amd64" })
		}},
		{"garbled sidecar", DumpSumFile, func(t *testing.T, d Dir) {
			if err := os.WriteFile(d.Path("cube", DumpSumFile), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, ccs, digest := setupCube(t)
			want := raw(t, pkBinKey(t, d))
			tc.spoil(t, d)
			for _, dg := range []string{digest, ""} {
				pk, _, st, log := load(t, d, dg)
				if st.Source != SourcePK || !st.DumpWritten {
					t.Errorf("digest %q: load of a spoilt dump: %+v, want pk.bin and a new dump", dg, st)
				}
				if !strings.Contains(log, "level=WARN msg=\"proving key dump not used") || !strings.Contains(log, tc.reason) {
					t.Errorf("digest %q: want a warning saying %q, logged:\n%s", dg, tc.reason, log)
				}
				if !bytes.Equal(raw(t, pk), want) {
					t.Errorf("digest %q: loaded key differs from pk.bin's", dg)
				}
				pk, vk, st, _ := load(t, d, dg)
				if st.Source != SourceDump {
					t.Errorf("digest %q: load after the rebuild: %+v, want the dump", dg, st)
				}
				if !bytes.Equal(raw(t, pk), want) {
					t.Errorf("digest %q: rebuilt dump's key differs from pk.bin's", dg)
				}
				proveVerify(t, ccs, pk, vk)
				tc.spoil(t, d) // again, for the next digest
			}
		})
	}
}

// A pk.bin replaced by another key's leaves a stale dump behind: Load without a
// digest hashes pk.bin and uses it, not the dump; Load with the old digest refuses.
func TestStaleDumpAfterReplacedKey(t *testing.T) {
	d, _, oldDigest := setupCube(t)
	other, _, newDigest := setupCube(t)
	b, err := os.ReadFile(other.Path("cube", PKFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.Path("cube", PKFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := d.LoadLogged("cube", strings.Repeat("cd", 32), nil); err == nil || !strings.Contains(err.Error(), "cuzk.circuits.pk_digest of cube is "+strings.Repeat("cd", 32)) {
		t.Errorf("load with a digest neither file has: err = %v", err)
	}
	pk, _, st, log := load(t, d, "")
	if st.Source != SourcePK || !strings.Contains(log, "dump was made from proving key "+oldDigest[:16]) {
		t.Errorf("load without a digest after pk.bin was replaced: %+v\n%s", st, log)
	}
	if !bytes.Equal(raw(t, pk), raw(t, pkBinKey(t, other))) {
		t.Error("load without a digest did not return the key now in pk.bin")
	}
	if s := readSumFile(t, d); s.PKDigest != newDigest {
		t.Errorf("rebuilt sidecar names %s, want %s", s.PKDigest, newDigest)
	}
}

// The dump's format tag names the gnark and gnark-crypto versions whose memory layout
// it holds; a dependency upgrade must change the tag, or old dumps would be misread.
func TestDumpFormatMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range []string{"github.com/consensys/gnark", "github.com/consensys/gnark-crypto"} {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + `\s+(v\S+)`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("go.mod does not require %s", mod)
		}
		name := mod[strings.LastIndex(mod, "/")+1:]
		if want := name + " " + string(m[1]) + " "; !strings.Contains(DumpFormat, want) {
			t.Errorf("DumpFormat %q lacks %q (go.mod); update it so dumps of the old layout are rebuilt", DumpFormat, want)
		}
	}
}

// WriteDumpOnly stores a key as cuzk setup does: pk.dump alone, read back from the dump
// under the digest it returns, and refused under another.
func TestWriteDumpOnly(t *testing.T) {
	d := Dir(t.TempDir())
	gpk, gvk, err := groth16.Setup(compileCube(t))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := d.WriteDumpOnly("cube", gpk.(*groth16bls.ProvingKey), gvk.(*groth16bls.VerifyingKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path("cube", PKFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after WriteDumpOnly: %v, want none", PKFile, err)
	}
	pk, _, st, err := d.LoadWith("cube", digest, LoadOptions{})
	if err != nil || st.Source != SourceDump || len(pk.G1.A) != len(gpk.(*groth16bls.ProvingKey).G1.A) {
		t.Fatalf("load: source %s, err %v", st.Source, err)
	}
	if _, _, _, err := d.LoadWith("cube", strings.Repeat("0", 64), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "not the registered key") {
		t.Errorf("load under another digest: %v, want not the registered key", err)
	}
}
