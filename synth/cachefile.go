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
	"runtime"

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

// writeR1CSFile writes sys to path atomically (writeFileAtomic) and returns the
// checksum in its trailer. Concurrent writers of the same circuit each rename a
// complete file, so readers never see a partial one.
func writeR1CSFile(path string, sys *cs.R1CS) ([]byte, error) {
	segs, err := r1csSegments(sys)
	if err != nil {
		return nil, fmt.Errorf("encode R1CS: %w", err)
	}
	var digest []byte
	err = writeFileAtomic(path, func(f *os.File) (err error) {
		// The checksum is computed beside the write, over the same segments.
		sum := sha256.New()
		hashed := make(chan struct{})
		go func() {
			defer close(hashed)
			for _, s := range segs {
				sum.Write(s)
			}
		}()
		for _, s := range segs {
			if _, err = f.Write(s); err != nil {
				break
			}
		}
		<-hashed
		if err == nil {
			digest = sum.Sum(nil)
			_, err = f.Write(append([]byte(trailerMagic), digest...))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return digest, nil
}

// writeFileAtomic writes path through write: into a temporary file in the same
// directory, synced, then renamed over path.
func writeFileAtomic(path string, write func(f *os.File) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	return nil
}

// r1csSegments returns sys's gnark encoding, byte for byte what sys.WriteTo writes,
// as consecutive segments. gnark encodes the call data (most of the encoding at
// Filecoin sizes) on one goroutine into a buffer of five bytes a word, then copies
// every section into one more buffer. Here gnark encodes a shallow copy of sys without
// its call data, putUvarints32 encodes the call data on every core, and the headers
// of the first encoding are patched to count it.
func r1csSegments(sys *cs.R1CS) ([][]byte, error) {
	shell := *sys // shares sys's slices and maps; neither is modified
	shell.CallData = nil
	var head bytes.Buffer
	if _, err := shell.WriteTo(&head); err != nil {
		return nil, err
	}
	e, le := head.Bytes(), binary.LittleEndian
	// gnark's header, the section lengths (levels, instructions, call data, body), the
	// sections, the coefficients; an empty call-data section is its count alone.
	if len(e) < 2*gnarkHeaderSize || le.Uint64(e[48:]) != 8 {
		return nil, fmt.Errorf("gnark's encoding without call data is not laid out as expected (%d bytes)", len(e))
	}
	callsAt := uint64(2*gnarkHeaderSize) + le.Uint64(e[32:]) + le.Uint64(e[40:])
	if callsAt+8 > uint64(len(e)) {
		return nil, fmt.Errorf("gnark's encoding without call data is not laid out as expected (%d bytes)", len(e))
	}
	calls := putUvarints32(sys.CallData, runtime.GOMAXPROCS(0))
	le.PutUint64(e[:8], le.Uint64(e[:8])+uint64(len(calls)))
	le.PutUint64(e[48:], 8+uint64(len(calls)))
	le.PutUint64(e[callsAt:], uint64(len(sys.CallData)))
	return [][]byte{e[:callsAt+8], calls, e[callsAt+8:]}, nil
}

// readR1CSFile reads a file written by writeR1CSFile and returns the checksum in its
// trailer with it. A missing file gives an error satisfying errors.Is(err,
// fs.ErrNotExist); any damage gives errCorrupt. The checksum is computed on its own
// goroutine, one pass over the file beside the decode, and is checked before the
// decode's result is used.
func readR1CSFile(path string) (*cs.R1CS, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size() - int64(trailerSize)
	if size < 2*gnarkHeaderSize {
		return nil, nil, fmt.Errorf("%s: %w: %d bytes", path, errCorrupt, st.Size())
	}
	type checked struct {
		sum []byte
		err error
	}
	sumDone := make(chan checked, 1)
	go func() {
		sum, err := checkFileSum(f, size)
		sumDone <- checked{sum, err}
	}()
	sys, err := decodeR1CSAt(f, size)
	c := <-sumDone
	if c.err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, c.err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return sys, c.sum, nil
}

// checkFileSum checks the trailer after the first size bytes of r against their
// SHA-256, and returns it.
func checkFileSum(r io.ReaderAt, size int64) ([]byte, error) {
	sum := sha256.New()
	if _, err := io.Copy(sum, bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<20)); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	trailer := make([]byte, trailerSize)
	if _, err := r.ReadAt(trailer, size); err != nil {
		return nil, fmt.Errorf("%w: trailer: %v", errCorrupt, err)
	}
	if err := checkTrailer(trailer, sum); err != nil {
		return nil, err
	}
	return trailer[len(trailerMagic):], nil
}

// decodeR1CSAt decodes the gnark-encoded BLS12-381 R1CS in the first size bytes of r.
// gnark decodes the call data (most of the file at Filecoin sizes: one varint per
// term of every constraint) on one goroutine; here gnark decodes a copy of the
// encoding whose call-data section is empty, while uvarints32 decodes the real one on
// every core, and the result takes those values.
func decodeR1CSAt(r io.ReaderAt, size int64) (*cs.R1CS, error) {
	var hdr [2 * gnarkHeaderSize]byte // gnark's header, then its sections' lengths
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("%w: header: %v", errCorrupt, err)
	}
	le := binary.LittleEndian
	payload := le.Uint64(hdr[:8])
	if payload != uint64(size-gnarkHeaderSize) {
		return nil, fmt.Errorf("%w: header announces %d payload bytes, file holds %d", errCorrupt, payload, size-gnarkHeaderSize)
	}
	levels, insts, calls, body := le.Uint64(hdr[32:]), le.Uint64(hdr[40:]), le.Uint64(hdr[48:]), le.Uint64(hdr[56:])
	rest := payload - gnarkHeaderSize // the sections and the coefficients after them
	if levels > rest || insts > rest-levels || calls > rest-levels-insts || body > rest-levels-insts-calls || calls < 8 {
		return nil, fmt.Errorf("%w: section lengths %d, %d, %d, %d exceed the payload", errCorrupt, levels, insts, calls, body)
	}
	callsAt := int64(2*gnarkHeaderSize) + int64(levels+insts)
	data := make([]byte, calls)
	if _, err := r.ReadAt(data, callsAt); err != nil {
		return nil, fmt.Errorf("%w: call data: %v", errCorrupt, err)
	}
	// The headers become those of the same encoding with an empty call-data section
	// (its count alone, zero).
	le.PutUint64(hdr[:8], payload-calls+8)
	le.PutUint64(hdr[48:], 8)
	tail := size - callsAt - int64(calls) // the body and the coefficients
	var callData []uint32
	var callErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		callData, callErr = uvarints32(data[8:], le.Uint64(data[:8]), runtime.GOMAXPROCS(0))
	}()
	sys, err := decodeR1CS(io.MultiReader(bytes.NewReader(hdr[:]),
		io.NewSectionReader(r, 2*gnarkHeaderSize, int64(levels+insts)), bytes.NewReader(make([]byte, 8)),
		io.NewSectionReader(r, callsAt+int64(calls), tail)), size-int64(calls)+8, 0)
	<-done
	if err != nil {
		return nil, err
	}
	if callErr != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, callErr)
	}
	sys.CallData = callData
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
