package synth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// Cache files are gnark's own R1CS encoding (readable by gnark's ReadFrom as is)
// followed by a trailer: trailerMagic and the SHA-256 of the gnark bytes. The
// checksum turns a truncated or damaged file into a clean miss instead of a wrong
// constraint system.
const (
	trailerMagic = "cuzk-r1cs-sha256"
	trailerSize  = len(trailerMagic) + sha256.Size
	// gnarkHeaderSize is gnark's R1CS header: payload length, then major, minor and
	// patch of the writing gnark version, each a little-endian uint64.
	gnarkHeaderSize = 4 * 8
)

// errCorrupt marks a cache file that exists but cannot be trusted.
var errCorrupt = errors.New("corrupt R1CS file")

// writeR1CSFile writes sys to path atomically: a temporary file in the same
// directory, synced, then renamed over path. Concurrent writers of the same circuit
// each rename a complete file, so readers never see a partial one.
func writeR1CSFile(path string, sys *cs.R1CS) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create cache file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if _, err = sys.WriteTo(io.MultiWriter(bw, sum)); err != nil {
		return fmt.Errorf("encode R1CS: %w", err)
	}
	bw.WriteString(trailerMagic)
	bw.Write(sum.Sum(nil))
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("publish cache file: %w", err)
	}
	return nil
}

// readR1CSFile reads a file written by writeR1CSFile. A missing file gives an error
// satisfying errors.Is(err, fs.ErrNotExist); any damage gives errCorrupt.
func readR1CSFile(path string) (*cs.R1CS, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	br := bufio.NewReaderSize(f, 1<<20)
	sys, err := decodeR1CS(io.TeeReader(br, sum), st.Size(), int64(trailerSize))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	trailer := make([]byte, trailerSize)
	if _, err := io.ReadFull(br, trailer); err != nil {
		return nil, fmt.Errorf("%s: %w: trailer: %v", path, errCorrupt, err)
	}
	if err := checkTrailer(trailer, sum); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sys, nil
}

func checkTrailer(trailer []byte, sum hash.Hash) error {
	if string(trailer[:len(trailerMagic)]) != trailerMagic {
		return fmt.Errorf("%w: no checksum trailer", errCorrupt)
	}
	if !bytes.Equal(trailer[len(trailerMagic):], sum.Sum(nil)) {
		return fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	return nil
}

// decodeR1CS decodes one gnark-encoded BLS12-381 R1CS of which size bytes (plus
// extra bytes after it) remain in r. The length in gnark's header is checked against
// size first: gnark allocates whatever length the header claims.
func decodeR1CS(r io.Reader, size, extra int64) (sys *cs.R1CS, err error) {
	var hdr [gnarkHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", errCorrupt, err)
	}
	payload := binary.LittleEndian.Uint64(hdr[:8])
	if want := uint64(size - extra - gnarkHeaderSize); size < extra+gnarkHeaderSize || payload != want {
		return nil, fmt.Errorf("%w: header announces %d payload bytes, file holds %d", errCorrupt, payload, size-extra-gnarkHeaderSize)
	}
	// gnark's decoder may panic on damaged input.
	defer func() {
		if p := recover(); p != nil {
			sys, err = nil, fmt.Errorf("%w: %v", errCorrupt, p)
		}
	}()
	sys = new(cs.R1CS) // zero value: NewR1CS presets fields the decoder cannot overwrite
	if _, err := sys.ReadFrom(io.MultiReader(bytes.NewReader(hdr[:]), r)); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return sys, nil
}
