package keys

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// The proving key as gnark's WriteDump, a memory image that ReadDump copies back
// without decompressing or subgroup-checking a point: at 2^22 constraints parsing
// pk.bin took about 3 minutes, the dump a few seconds. Keys are written as the dump
// alone (its tree digest, or for keys written before it its SHA-256, is the circuit's
// pk_digest); beside an older directory's pk.bin (then the canonical key, whose SHA-256
// is the pk_digest) it is a load cache.
const (
	DumpFile    = "pk.dump"
	DumpSumFile = "pk.dump.sum"
)

// DumpFormat names the layout pk.dump is written in. ReadDump copies bytes into Go
// structs unchecked, so a dump from another gnark or gnark-crypto version (point or
// field layout) or another architecture (endianness, word size) must not be read: a
// different tag makes Load rebuild the dump. TestDumpFormatMatchesGoMod keeps the
// versions in step with go.mod.
const DumpFormat = "gnark v0.14.0 gnark-crypto v0.19.0 bls12-381 WriteDump " + runtime.GOARCH

// dumpSum is pk.dump.sum: what the dump is and which pk.bin it was made from. The
// dump's own digest is its tree digest (DumpTree, DumpChunk) or, in sidecars written
// before it, its SHA-256 (DumpSHA256); one of the two is set.
type dumpSum struct {
	Format     string   `json:"format"`
	PKDigest   string   `json:"pk_digest"`             // the key's digest: SHA-256 of the pk.bin the dump was made from, or the dump's digest when it is the key
	PKBytes    int64    `json:"pk_bytes,omitempty"`    // that pk.bin's size (0: none, or a sidecar written before it was kept)
	DumpSHA256 string   `json:"dump_sha256,omitempty"` // SHA-256 of pk.dump itself
	DumpTree   string   `json:"dump_tree,omitempty"`   // tree digest of pk.dump (treeTag)
	DumpChunk  int64    `json:"dump_chunk,omitempty"`  // its chunk size
	DumpChunks []string `json:"dump_chunks,omitempty"` // each chunk's SHA-256: names the chunks of a damaged dump
	DumpBytes  int64    `json:"dump_bytes"`
}

// dumpDigest is the dump's own digest, in whichever scheme the sidecar records.
func (s *dumpSum) dumpDigest() string {
	if s.DumpTree != "" {
		return s.DumpTree
	}
	return s.DumpSHA256
}

// digestName names the scheme of dumpDigest, for errors.
func (s *dumpSum) digestName() string {
	if s.DumpTree != "" {
		return "tree digest (" + treeTag + ")"
	}
	return "SHA-256"
}

// errNoDump: there is no usable sidecar at all (never written, or being replaced);
// not worth a warning.
var errNoDump = errors.New("no dump")

// writeDump writes pk.dump and its sidecar for a key whose pk.bin has pkDigest and
// pkBytes bytes. The old sidecar goes first, so a reader never pairs the new dump with
// the old sidecar (it would see no sidecar and read pk.bin instead); the new one goes
// last.
func (d Dir) writeDump(circuit string, pk *groth16bls.ProvingKey, pkDigest string, pkBytes int64) error {
	if err := os.Remove(d.Path(circuit, DumpSumFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s, err := d.writeDumpFile(circuit, treeChunk, pk.WriteDump)
	if err != nil {
		return err
	}
	s.PKDigest, s.PKBytes = pkDigest, max(pkBytes, 0)
	return d.writeSum(circuit, s)
}

// writeDumpFile writes pk.dump with dump and returns its sidecar, with the dump's tree
// digest in chunks of chunk bytes, without the key's digest.
func (d Dir) writeDumpFile(circuit string, chunk int, dump func(io.Writer) error) (dumpSum, error) {
	s := dumpSum{Format: DumpFormat, DumpChunk: int64(chunk)}
	err := writeAtomic(d.Path(circuit, DumpFile), func(w io.Writer) error {
		tw := newTreeWriter(w, chunk)
		err := dump(tw)
		s.DumpTree, s.DumpChunks = tw.finish()
		s.DumpBytes = tw.n
		return err
	})
	if err != nil {
		return s, fmt.Errorf("write %s of %s: %w", DumpFile, circuit, err)
	}
	return s, nil
}

// writeSum writes circuit's sidecar.
func (d Dir) writeSum(circuit string, s dumpSum) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := writeAtomic(d.Path(circuit, DumpSumFile), func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return fmt.Errorf("write %s of %s: %w", DumpSumFile, circuit, err)
	}
	return nil
}

// dumpOnly is circuit's sidecar when it describes a key written as the dump alone
// (the digest it names is the dump's own, no pk.bin size); nil otherwise.
func (d Dir) dumpOnly(circuit string) *dumpSum {
	s := d.rawSum(circuit)
	if s == nil || s.PKBytes != 0 || s.PKDigest == "" || s.PKDigest != s.dumpDigest() {
		return nil
	}
	return s
}

// loadDumpOnly loads a key written as the dump alone: its sidecar s must have this
// build's format and name digest (when set), and the dump must hash to it (in the
// sidecar's scheme). There is no pk.bin to fall back on, so any failure fails the
// load.
func (d Dir) loadDumpOnly(circuit, digest string, s *dumpSum, o LoadOptions, log *slog.Logger) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, LoadStats, error) {
	start := time.Now()
	st := LoadStats{Source: SourceDump, Bytes: fileSize(d.Path(circuit, DumpFile))}
	path := d.Path(circuit, DumpFile)
	switch {
	case digest != "" && s.PKDigest != digest:
		return nil, nil, st, fmt.Errorf("proving key %s has %s %s (%s), but cuzk.circuits.pk_digest of %s is %s: not the registered key (run cuzk setup again or fix --keys-dir)",
			path, s.digestName(), s.PKDigest, DumpSumFile, circuit, digest)
	case s.Format != DumpFormat:
		return nil, nil, st, fmt.Errorf("proving key %s is in dump format %q, this build reads %q: make the key again (cuzk setup --force)", path, s.Format, DumpFormat)
	}
	log.Info("loading proving key", "circuit", circuit, "from", st.Source, "dump_bytes", st.Bytes)
	prog := newLoadProgress(circuit, log, o.Progress, o.progress)
	prog.expect(2 * st.Bytes)
	pk, err := d.readDump(circuit, s, prog)
	if err != nil {
		return nil, nil, st, d.damagedDump(circuit, digest, s, err)
	}
	vk := groth16.NewVerifyingKey(ecc.BLS12_381).(*groth16bls.VerifyingKey)
	if err := readFile(d.Path(circuit, VKFile), func(r io.Reader) error { _, err := vk.ReadFrom(r); return err }); err != nil {
		return nil, nil, st, fmt.Errorf("load verifying key of %s: %w", circuit, err)
	}
	st.Duration = time.Since(start)
	log.Info("proving key loaded", "circuit", circuit, "from", st.Source, "bytes", st.Bytes, "ms", st.Duration.Milliseconds(),
		"mb_per_s", mbPerSecond(st.Bytes, st.Duration), "dump_written", false)
	return pk, vk, st, nil
}

// damagedDump is the error of a key written as the dump alone that cannot be read: the
// file, its size against the sidecar's, and the registered digest, as damagedPK says
// them for a pk.bin. A missing file keeps its os.ErrNotExist.
func (d Dir) damagedDump(circuit, digest string, s *dumpSum, err error) error {
	path := d.Path(circuit, DumpFile)
	size := fileSize(path)
	if size < 0 {
		return fmt.Errorf("load proving key of %s: %w", circuit, err)
	}
	what := fmt.Sprintf("%d bytes", size)
	if s.DumpBytes != size {
		what += fmt.Sprintf(", %d expected (%s)", s.DumpBytes, DumpSumFile)
	}
	if digest != "" {
		what += ", cuzk.circuits.pk_digest " + digest
	}
	return fmt.Errorf("proving key %s of %s is truncated or damaged (%s): %w", path, circuit, what, err)
}

// readSum reads circuit's sidecar and checks that it describes a dump this build can
// read and that was made from the pk.bin with digest pkDigest, of pkBytes bytes (a
// pk.bin of another size is not the one the dump was made from: it is then read, and
// its damage reported, rather than hidden behind a good dump).
func (d Dir) readSum(circuit, pkDigest string, pkBytes int64) (*dumpSum, error) {
	b, err := os.ReadFile(d.Path(circuit, DumpSumFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoDump
	}
	if err != nil {
		return nil, err
	}
	var s dumpSum
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", DumpSumFile, err)
	}
	switch {
	case s.PKBytes > 0 && s.PKBytes != pkBytes:
		return nil, fmt.Errorf("%s has %d bytes, the dump was made from one of %d", d.Path(circuit, PKFile), pkBytes, s.PKBytes)
	case s.Format != DumpFormat:
		return nil, fmt.Errorf("dump format %q, this build reads %q", s.Format, DumpFormat)
	case s.PKDigest != pkDigest:
		return nil, fmt.Errorf("dump was made from proving key %.16s, want %.16s", s.PKDigest, pkDigest)
	case len(s.dumpDigest()) != 2*sha256.Size || s.DumpBytes <= 0 || (s.DumpTree != "" && s.DumpChunk <= 0):
		return nil, fmt.Errorf("%s: no dump digest or size", DumpSumFile)
	}
	return &s, nil
}

// rawSum is circuit's sidecar as it is, unchecked; nil when there is none readable.
func (d Dir) rawSum(circuit string) *dumpSum {
	b, err := os.ReadFile(d.Path(circuit, DumpSumFile))
	if err != nil {
		return nil
	}
	var s dumpSum
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return &s
}

// readDump reads pk.dump, checked against its sidecar s.
//
// No byte reaches ReadDump's decoding before it is verified: ReadDump allocates every
// slice at the length the file states, so a flipped bit in a length could ask for
// terabytes (a panic we recover) or for tens of gigabytes (an allocation that may
// succeed and get the process OOM-killed) long before a hash of the whole file could
// be compared. A sidecar that lists its chunks' SHA-256 lets the decoding follow the
// hash chunk by chunk (verified.go); otherwise the whole file is hashed first and
// decoded in a second pass, from the page cache. A tree digest is hashed on every
// core (hashTree); a sidecar's whole-file SHA-256 on one.
func (d Dir) readDump(circuit string, s *dumpSum, prog *loadProgress) (*groth16bls.ProvingKey, error) {
	path := d.Path(circuit, DumpFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() != s.DumpBytes {
		return nil, fmt.Errorf("%s has %d bytes, its sidecar says %d (truncated or replaced)", path, st.Size(), s.DumpBytes)
	}
	v := newVerifiedPrefix(s)
	hashed := make(chan error, 1)
	if v == nil {
		if err := checkDump(f, s, prog); err != nil {
			return nil, err
		}
		hashed <- nil
	} else {
		var read func(int64)
		if prog != nil {
			read = func(n int64) { prog.add(n, DumpFile+" (hash)") }
		}
		go func() { hashed <- v.hash(f, read) }()
	}
	var pk *groth16bls.ProvingKey
	err = decodeWith(func() (err error) {
		r := newDumpReader(f, st.Size(), v, prog)
		if pk, err = readDumpKZ(r); err != nil {
			return err
		}
		if n, _ := io.Copy(io.Discard, r); n != 0 {
			return fmt.Errorf("%d bytes after the key", n)
		}
		return nil
	})
	if herr := <-hashed; herr != nil {
		if errors.Is(herr, errChunkDiffers) {
			// The whole file's digest, and which chunks differ, say what is damaged.
			if cerr := checkDump(f, s, prog); cerr != nil {
				return nil, cerr
			}
		}
		return nil, fmt.Errorf("read %s: %w", path, herr)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return pk, nil
}

// checkDump hashes f, the dump of s.DumpBytes bytes, in the scheme its sidecar s
// records and compares the digest with the sidecar's, telling prog what it reads.
func checkDump(f *os.File, s *dumpSum, prog *loadProgress) error {
	const what = DumpFile + " (hash)"
	if s.DumpTree == "" {
		h := sha256.New()
		var r io.Reader = bufio.NewReaderSize(f, bufSize)
		if prog != nil {
			r = prog.reader(r, what)
		}
		if _, err := io.Copy(h, r); err != nil {
			return fmt.Errorf("read %s: %w", f.Name(), err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != s.DumpSHA256 {
			return fmt.Errorf("%s has SHA-256 %s, its sidecar says %s (corrupt)", f.Name(), got, s.DumpSHA256)
		}
		_, err := f.Seek(0, io.SeekStart)
		return err
	}
	var read func(int64)
	if prog != nil {
		read = func(n int64) { prog.add(n, what) }
	}
	sums, err := hashTree(f, s.DumpChunk, s.DumpBytes, read)
	if err != nil {
		return err
	}
	if got := treeRoot(s.DumpChunk, s.DumpBytes, sums); got != s.DumpTree {
		return fmt.Errorf("%s has tree digest %s, its sidecar says %s (corrupt: %s)", f.Name(), got, s.DumpTree,
			treeMismatch(s.DumpChunk, s.DumpBytes, sums, s.DumpChunks))
	}
	return nil
}
