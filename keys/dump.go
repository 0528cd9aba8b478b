package keys

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// The load cache beside pk.bin. pk.bin stays the canonical key (its SHA-256 is the
// circuit's pk_digest); pk.dump is the same key as gnark's WriteDump, a memory image
// that ReadDump copies back without decompressing or subgroup-checking a point: at
// 2^22 constraints parsing pk.bin took about 3 minutes, the dump a few seconds.
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

// dumpSum is pk.dump.sum: what the dump is and which pk.bin it was made from.
type dumpSum struct {
	Format     string `json:"format"`
	PKDigest   string `json:"pk_digest"`          // SHA-256 of the pk.bin the dump was made from
	PKBytes    int64  `json:"pk_bytes,omitempty"` // its size (0 in sidecars written before it was kept)
	DumpSHA256 string `json:"dump_sha256"`        // SHA-256 of pk.dump itself
	DumpBytes  int64  `json:"dump_bytes"`
}

// errNoDump: there is no usable sidecar at all (never written, or being replaced);
// not worth a warning.
var errNoDump = errors.New("no dump")

// writeDump writes pk.dump and its sidecar for a key whose pk.bin has pkDigest and
// pkBytes bytes. The
// old sidecar goes first, so a reader never pairs the new dump with the old sidecar
// (it would see no sidecar and read pk.bin instead); the new one goes last.
func (d Dir) writeDump(circuit string, pk *groth16bls.ProvingKey, pkDigest string, pkBytes int64) error {
	sumPath := d.Path(circuit, DumpSumFile)
	if err := os.Remove(sumPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s := dumpSum{Format: DumpFormat, PKDigest: pkDigest, PKBytes: max(pkBytes, 0)}
	err := writeAtomic(d.Path(circuit, DumpFile), func(w io.Writer) error {
		h := sha256.New()
		cw := &countingWriter{w: io.MultiWriter(w, h)}
		if err := pk.WriteDump(cw); err != nil {
			return err
		}
		s.DumpSHA256, s.DumpBytes = hex.EncodeToString(h.Sum(nil)), cw.n
		return nil
	})
	if err != nil {
		return fmt.Errorf("write %s of %s: %w", DumpFile, circuit, err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := writeAtomic(sumPath, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return fmt.Errorf("write %s of %s: %w", DumpSumFile, circuit, err)
	}
	return nil
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
	case len(s.DumpSHA256) != 2*sha256.Size || s.DumpBytes <= 0:
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

// readDump reads pk.dump after checking it against its sidecar s.
//
// The whole file is hashed BEFORE ReadDump sees a byte, not while it reads: ReadDump
// allocates every slice at the length the file states, so a flipped bit in a length
// could ask for terabytes (a panic we recover) or for tens of gigabytes (an allocation
// that may succeed and get the process OOM-killed) long before a hash taken while
// reading could be compared. The second pass reads from the page cache; at 2^22 (a
// 2.4 GB dump) hashing costs about 1.5 s, against minutes for parsing pk.bin.
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
	h := sha256.New()
	var r io.Reader = bufio.NewReaderSize(f, bufSize)
	if prog != nil {
		r = prog.reader(r, DumpFile+" (hash)")
	}
	if _, err := io.Copy(h, r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.DumpSHA256 {
		return nil, fmt.Errorf("%s has SHA-256 %s, its sidecar says %s (corrupt)", path, got, s.DumpSHA256)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	pk := new(groth16bls.ProvingKey)
	err = decode(f, func(r io.Reader) error {
		if prog != nil {
			r = prog.reader(r, DumpFile)
		}
		if err := pk.ReadDump(r); err != nil {
			return err
		}
		if n, _ := io.Copy(io.Discard, r); n != 0 {
			return fmt.Errorf("%d bytes after the key", n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return pk, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
