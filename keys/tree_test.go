package keys

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// wantTree computes the tree digest of b in chunks of chunk bytes from its
// definition, apart from the code under test: the tag, the chunk size and length as
// 8 big-endian bytes each, then each chunk's SHA-256.
func wantTree(b []byte, chunk int) (root string, chunks []string) {
	msg := []byte("cuzk-dump-tree-v1")
	for _, v := range []uint64{uint64(chunk), uint64(len(b))} {
		for i := 7; i >= 0; i-- {
			msg = append(msg, byte(v>>(8*i)))
		}
	}
	for lo := 0; lo < len(b); lo += chunk {
		sum := sha256.Sum256(b[lo:min(lo+chunk, len(b))])
		msg = append(msg, sum[:]...)
		chunks = append(chunks, hex.EncodeToString(sum[:]))
	}
	sum := sha256.Sum256(msg)
	return hex.EncodeToString(sum[:]), chunks
}

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

func wantTreeOf(t *testing.T, path string, chunk int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := wantTree(b, chunk)
	return root
}

// The sidecar's tree digest, chunk list and size are the file's, for writes that
// straddle chunk boundaries, fill chunks exactly or stay inside one, and the parallel
// load computes the same chunks.
func TestTreeDigestOfKnownFile(t *testing.T) {
	d := Dir(t.TempDir())
	if err := os.MkdirAll(d.Path("f", ""), dirPerm); err != nil {
		t.Fatal(err)
	}
	all := make([]byte, 7<<20+5)
	for i := range all {
		all[i] = byte(i*7 + i>>8)
	}
	for _, tc := range []struct {
		size, chunk int
		parts       []int // write sizes, then the rest
	}{
		{10_000, 1000, []int{3, 997, 1000, 4000, 1}},      // exact multiple of the chunk
		{10_000, 999, nil},                                // one write across 11 chunks
		{10_000, 4096, []int{1, 2, 5000}},                 // last chunk partial
		{10_000, 20_000, nil},                             // one chunk
		{len(all), 3<<20 + 7, []int{5, 1 << 20, 5 << 20}}, // chunk buffers grow past their first size
	} {
		data := all[:tc.size]
		t.Run(strconv.Itoa(tc.chunk), func(t *testing.T) {
			s, err := d.writeDumpFile("f", tc.chunk, func(w io.Writer) error {
				lo := 0
				for _, n := range append(tc.parts, len(data)-sum(tc.parts)) {
					if _, err := w.Write(data[lo : lo+n]); err != nil {
						return err
					}
					lo += n
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			root, chunks := wantTree(data, tc.chunk)
			if s.DumpTree != root || s.DumpChunk != int64(tc.chunk) || s.DumpBytes != int64(len(data)) || s.DumpSHA256 != "" {
				t.Errorf("sidecar %+v; want tree %s, chunk %d, %d bytes, no SHA-256", s, root, tc.chunk, len(data))
			}
			if strings.Join(s.DumpChunks, ",") != strings.Join(chunks, ",") {
				t.Errorf("chunk list %v, want %v", s.DumpChunks, chunks)
			}
			f, err := os.Open(d.Path("f", DumpFile))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var read int64
			sums, err := hashTree(f, int64(tc.chunk), int64(len(data)), func(n int64) { read += n })
			if err != nil {
				t.Fatal(err)
			}
			if got := treeRoot(int64(tc.chunk), int64(len(data)), sums); got != root || read != int64(len(data)) {
				t.Errorf("load hashes %s reading %d bytes, want %s and %d", got, read, root, len(data))
			}
		})
	}
	// A different chunk size or length is a different root, for the same bytes.
	data := all[:10_000]
	r1, _ := wantTree(data, 1000)
	r2, _ := wantTree(data, 2000)
	r3, _ := wantTree(data[:9000], 1000)
	if r1 == r2 || r1 == r3 {
		t.Error("roots do not depend on the chunk size and the length")
	}
}

// treeCube writes the cube circuit's keys as the dump alone, hashed in chunks of about
// a fifth of the dump, and returns the dir, the pk digest and the chunk size.
func treeCube(t *testing.T) (Dir, string, int) {
	t.Helper()
	d := Dir(t.TempDir())
	gpk, gvk, err := groth16.Setup(compileCube(t))
	if err != nil {
		t.Fatal(err)
	}
	pk, vk := gpk.(*groth16bls.ProvingKey), gvk.(*groth16bls.VerifyingKey)
	var b bytes.Buffer
	if err := pk.WriteDump(&b); err != nil {
		t.Fatal(err)
	}
	chunk := b.Len()/5 + 1
	digest, err := d.writeKeys("cube", chunk, pk.WriteDump, func() *groth16bls.VerifyingKey { return vk })
	if err != nil {
		t.Fatal(err)
	}
	if want := wantTreeOf(t, d.Path("cube", DumpFile), chunk); digest != want {
		t.Fatalf("pk digest %s, the dump's tree digest is %s", digest, want)
	}
	return d, digest, chunk
}

func editDump(t *testing.T, d Dir, edit func([]byte) []byte) {
	t.Helper()
	p := d.Path("cube", DumpFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, edit(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A dump that is not byte for byte the one its tree digest was taken of fails the load,
// naming the file and what differs: the chunks, the size, or the registered digest
// when the sidecar was rewritten to match the changed dump.
func TestTreeDigestDamageFailsPrecisely(t *testing.T) {
	d0, _, chunk := treeCube(t)
	size := int(fileSize(d0.Path("cube", DumpFile)))
	n := (size + chunk - 1) / chunk
	if n < 5 {
		t.Fatalf("%d chunks of %d bytes, want at least 5", n, chunk)
	}
	spanOf := func(k, size int) string {
		return fmt.Sprintf("chunk %d (bytes %d-%d)", k, k*chunk, min((k+1)*chunk, size)-1)
	}
	span := func(k int) string { return spanOf(k, size) }
	type tc struct {
		name  string
		spoil func(t *testing.T, d Dir)
		want  []string
	}
	var cases []tc
	for k := range n {
		at := k*chunk + chunk/3
		cases = append(cases, tc{fmt.Sprintf("bit flipped in chunk %d", k),
			func(t *testing.T, d Dir) { editDump(t, d, func(b []byte) []byte { b[at] ^= 0x10; return b }) },
			[]string{"has tree digest", "corrupt: 1 of " + strconv.Itoa(n) + " chunks differ from its sidecar's: " + span(k)}})
	}
	cases = append(cases,
		tc{"truncated", func(t *testing.T, d Dir) { editDump(t, d, func(b []byte) []byte { return b[:len(b)-1] }) },
			[]string{fmt.Sprintf("has %d bytes, its sidecar says %d (truncated or replaced)", size-1, size)}},
		tc{"byte appended", func(t *testing.T, d Dir) { editDump(t, d, func(b []byte) []byte { return append(b, 0) }) },
			[]string{fmt.Sprintf("has %d bytes, its sidecar says %d (truncated or replaced)", size+1, size)}},
		tc{"truncated, sidecar size rewritten", func(t *testing.T, d Dir) {
			editDump(t, d, func(b []byte) []byte { return b[:len(b)-1] })
			editSum(t, d, func(s *dumpSum) { s.DumpBytes-- })
		}, []string{"has tree digest", "corrupt: 1 of " + strconv.Itoa(n) + " chunks differ from its sidecar's: " + spanOf(n-1, size-1)}},
		tc{"chunks 1 and 2 swapped", func(t *testing.T, d Dir) {
			editDump(t, d, func(b []byte) []byte {
				c1 := bytes.Clone(b[chunk : 2*chunk])
				copy(b[chunk:], b[2*chunk:3*chunk])
				copy(b[2*chunk:], c1)
				return b
			})
		}, []string{"has tree digest", "corrupt: 2 of " + strconv.Itoa(n) + " chunks differ from its sidecar's: " + span(1) + " " + span(2)}},
		tc{"sidecar root rewritten", func(t *testing.T, d Dir) {
			editSum(t, d, func(s *dumpSum) { s.DumpTree = strings.Repeat("5a", 32); s.PKDigest = s.DumpTree })
		}, []string{"pk_digest of cube is ", "not the registered key"}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, digest, _ := treeCube(t)
			c.spoil(t, d)
			pk, _, _, err := d.LoadLogged("cube", digest, nil)
			if pk != nil || err == nil {
				t.Fatal("a spoilt dump loaded")
			}
			for _, w := range append(c.want, d.Path("cube", DumpFile)) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A dump changed and its sidecar rewritten to match (a tree root that the changed dump
// hashes to) is refused against the registered digest, naming both.
func TestTreeRewrittenSidecarRefused(t *testing.T) {
	d, digest, chunk := treeCube(t)
	editDump(t, d, func(b []byte) []byte { b[len(b)-3] ^= 1; return b })
	b, err := os.ReadFile(d.Path("cube", DumpFile))
	if err != nil {
		t.Fatal(err)
	}
	root, chunks := wantTree(b, chunk)
	editSum(t, d, func(s *dumpSum) { s.DumpTree, s.DumpChunks, s.PKDigest = root, chunks, root })
	if got, err := d.Digest("cube"); err != nil || got != root {
		t.Fatalf("Digest = %s, %v; the rewritten sidecar names %s", got, err, root)
	}
	pk, _, _, err := d.LoadLogged("cube", digest, nil)
	if pk != nil || err == nil {
		t.Fatal("a dump with a rewritten sidecar loaded under the registered digest")
	}
	want := fmt.Sprintf("proving key %s has tree digest (cuzk-dump-tree-v1) %s (%s), but cuzk.circuits.pk_digest of cube is %s: not the registered key",
		d.Path("cube", DumpFile), root, DumpSumFile, digest)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\ndoes not say %q", err, want)
	}
}

// A sidecar whose root is not the one its chunk list makes says so, and a chunk size
// that would mean more chunk hashes than a load keeps, or none, is refused before any
// is kept.
func TestTreeSidecarInconsistent(t *testing.T) {
	d, _, _ := treeCube(t)
	editSum(t, d, func(s *dumpSum) { s.DumpTree = strings.Repeat("5a", 32); s.PKDigest = s.DumpTree })
	if _, _, _, err := d.LoadLogged("cube", "", nil); err == nil || !strings.Contains(err.Error(), "every chunk matches its sidecar's list, the root does not") {
		t.Errorf("load: %v, want the sidecar named inconsistent", err)
	}
	f, err := os.Open(d.Path("cube", DumpFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, c := range []struct{ chunk, size int64 }{{1, treeMaxChunks + 1}, {0, 10}, {-1, 10}} {
		if _, err := hashTree(f, c.chunk, c.size, nil); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("hashTree(chunk %d, %d bytes): %v, want out of range", c.chunk, c.size, err)
		}
	}
	// The largest chunk size is one chunk, not an overflow.
	head := make([]byte, 10)
	if _, err := f.ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	if sums, err := hashTree(f, math.MaxInt64, 10, nil); err != nil || len(sums) != 1 || sums[0] != sha256.Sum256(head) {
		t.Errorf("hashTree(chunk MaxInt64, 10 bytes): %d sums, %v; want the SHA-256 of the 10 bytes", len(sums), err)
	}
}

// oldSidecar rewrites a sidecar as keys were written before the tree digest: the dump's
// whole-file SHA-256, as the pk digest too when the dump is the key.
func oldSidecar(t *testing.T, d Dir) string {
	t.Helper()
	sum, err := FileDigest(d.Path("cube", DumpFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(d.Path("cube", DumpSumFile))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dump_tree", "dump_chunk", "dump_chunks"} {
		delete(s, k)
	}
	s["dump_sha256"] = sum
	if _, ok := s["pk_bytes"]; !ok {
		s["pk_digest"] = sum
	}
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.Path("cube", DumpSumFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return sum
}

// Keys written before the tree digest, the dump alone with its whole-file SHA-256 as
// the registered digest, or a dump beside pk.bin, still load from the dump, and a
// damaged one is still caught by its SHA-256.
func TestOldSidecarStillLoads(t *testing.T) {
	t.Run("dump alone", func(t *testing.T) {
		d, _, _ := treeCube(t)
		digest := oldSidecar(t, d)
		if got, err := d.Digest("cube"); err != nil || got != digest || !d.Has("cube") {
			t.Fatalf("Digest = %s, %v, Has %v; want the dump's SHA-256 %s", got, err, d.Has("cube"), digest)
		}
		for _, dg := range []string{digest, ""} {
			if _, _, st, _ := load(t, d, dg); st.Source != SourceDump {
				t.Errorf("digest %q: %+v, want the dump", dg, st)
			}
		}
		editDump(t, d, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
		got, _ := FileDigest(d.Path("cube", DumpFile))
		_, _, _, err := d.LoadLogged("cube", digest, nil)
		if want := fmt.Sprintf("%s has SHA-256 %s, its sidecar says %s (corrupt)", d.Path("cube", DumpFile), got, digest); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("load of a damaged old dump: %v, want %q", err, want)
		}
	})
	t.Run("beside pk.bin", func(t *testing.T) {
		d, _, digest := setupCube(t)
		oldSidecar(t, d)
		pk, _, st, log := load(t, d, digest)
		if st.Source != SourceDump || st.DumpWritten || strings.Contains(log, "WARN") {
			t.Errorf("%+v, want the dump, nothing rebuilt; log:\n%s", st, log)
		}
		if !bytes.Equal(raw(t, pk), raw(t, pkBinKey(t, d))) {
			t.Error("the key read from the old dump differs from pk.bin's")
		}
	})
}

// A load hashing a dump's chunks in parallel while it decodes them reports the bytes
// of both passes in order of arrival: the count only grows and ends at twice the
// dump's size (hashed and decoded), and both passes have progress lines.
func TestTreeLoadReportsProgress(t *testing.T) {
	d, digest, _ := treeCube(t)
	size := fileSize(d.Path("cube", DumpFile))
	var seen []int64
	var buf bytes.Buffer
	_, _, _, err := d.LoadWith("cube", digest, LoadOptions{
		Log:      slog.New(slog.NewTextHandler(&buf, nil)),
		Progress: func(r, total int64) { seen = append(seen, r) },
		progress: &progressLimits{minBytes: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(seen) || seen[len(seen)-1] != 2*size {
		t.Errorf("progress %v; want it growing to %d", seen, 2*size)
	}
	for _, pass := range []string{`reading="pk.dump (hash)"`, `reading=pk.dump `} {
		if !strings.Contains(buf.String(), pass) {
			t.Errorf("no progress line %s; logged:\n%s", pass, buf.String())
		}
	}
}
