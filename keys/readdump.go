package keys

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/pedersen"
	dump "github.com/consensys/gnark-crypto/utils/unsafe"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// readDumpKZ is gnark's ProvingKey.ReadDump (of the version DumpFormat names) with one
// difference: the K and Z bases are read into one allocation, K right before Z. The
// prover takes them as one vector K‖Z (prover.NewProvingKey), and apart it copies them
// together, which at 2^26 is about 8 GB more memory and seconds of copying per load.
// The dump writes Z before K, and K's length (the private wires) is known only after
// Z: Z goes to the end of a vector with room for every wire before it, and K fills the
// room back from Z. Everything else is read exactly as ReadDump reads it.
func readDumpKZ(r io.Reader) (*groth16bls.ProvingKey, error) {
	pk := new(groth16bls.ProvingKey)
	if err := dump.ReadMarker(r); err != nil {
		return nil, fmt.Errorf("read marker: %w", err)
	}
	if _, err := pk.Domain.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("read domain: %w", err)
	}
	dec := curve.NewDecoder(r, curve.NoSubgroupChecks())
	var nbWires uint64
	var nbCommitments uint32
	for i, v := range []any{&pk.G1.Alpha, &pk.G1.Beta, &pk.G1.Delta, &pk.G2.Beta, &pk.G2.Delta,
		&nbWires, &pk.NbInfinityA, &pk.NbInfinityB} {
		if err := dec.Decode(v); err != nil {
			return nil, fmt.Errorf("read field %d: %w", i, err)
		}
	}
	pk.InfinityA = make([]bool, nbWires)
	pk.InfinityB = make([]bool, nbWires)
	if err := dec.Decode(&pk.InfinityA); err != nil {
		return nil, fmt.Errorf("read InfinityA: %w", err)
	}
	if err := dec.Decode(&pk.InfinityB); err != nil {
		return nil, fmt.Errorf("read InfinityB: %w", err)
	}
	if err := dec.Decode(&nbCommitments); err != nil {
		return nil, fmt.Errorf("read nbCommitments: %w", err)
	}

	var err error
	if pk.G1.A, err = readSliceInto(r, makeSlice[curve.G1Affine]); err != nil {
		return nil, fmt.Errorf("read G1.A: %w", err)
	}
	if pk.G1.B, err = readSliceInto(r, makeSlice[curve.G1Affine]); err != nil {
		return nil, fmt.Errorf("read G1.B: %w", err)
	}
	var kz []curve.G1Affine
	pk.G1.Z, err = readSliceInto(r, func(n uint64) []curve.G1Affine {
		kz = make([]curve.G1Affine, nbWires+n)
		return kz[nbWires:]
	})
	if err != nil {
		return nil, fmt.Errorf("read G1.Z: %w", err)
	}
	pk.G1.K, err = readSliceInto(r, func(n uint64) []curve.G1Affine {
		if kz == nil || n > nbWires {
			return make([]curve.G1Affine, n) // no Z, or not a key cuzk makes: K apart
		}
		return kz[nbWires-n : nbWires]
	})
	if err != nil {
		return nil, fmt.Errorf("read G1.K: %w", err)
	}
	if pk.G2.B, err = readSliceInto(r, makeSlice[curve.G2Affine]); err != nil {
		return nil, fmt.Errorf("read G2.B: %w", err)
	}
	for i := range int(nbCommitments) {
		var c pedersen.ProvingKey
		if c.Basis, err = readSliceInto(r, makeSlice[curve.G1Affine]); err != nil {
			return nil, fmt.Errorf("read commitment basis %d: %w", i, err)
		}
		if c.BasisExpSigma, err = readSliceInto(r, makeSlice[curve.G1Affine]); err != nil {
			return nil, fmt.Errorf("read commitment basisExpSigma %d: %w", i, err)
		}
		pk.CommitmentKeys = append(pk.CommitmentKeys, c)
	}
	return pk, nil
}

// makeSlice is readSliceInto's alloc for a vector of its own.
func makeSlice[E any](n uint64) []E { return make([]E, n) }

// readSliceInto reads a slice as dump.WriteSlice wrote it (its length, then its
// elements' memory) into the slice that alloc gives for that length. From a
// dumpReader, a length beyond the file's end is an error before anything is allocated.
func readSliceInto[E any](r io.Reader, alloc func(n uint64) []E) ([]E, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(b[:])
	if n == 0 {
		return make([]E, 0), nil
	}
	var e E
	size := uint64(unsafe.Sizeof(e))
	d, bulk := r.(*dumpReader)
	if bulk && n > uint64(d.size-d.off)/size {
		return nil, fmt.Errorf("a vector of %d elements of %d bytes runs past the file's end (%d bytes left)", n, size, d.size-d.off)
	}
	s := alloc(n)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), int(size)*len(s))
	if bulk {
		return s, d.readBulk(mem)
	}
	_, err := io.ReadFull(r, mem)
	return s, err
}

// dumpReader reads pk.dump from its start: the small fields through a buffer, and the
// point vectors (readBulk, gigabytes at Filecoin sizes) with positioned reads on every
// core, so that copying them out of the page cache and faulting in their fresh pages
// is not one goroutine's work. With v it reads only what v has verified (verified.go).
type dumpReader struct {
	f     *os.File
	v     *verifiedPrefix // nil: the file was checked before
	src   *gatedFile      // what br reads
	br    *bufio.Reader
	off   int64 // the file offset of the next byte the decoder gets
	size  int64
	prog  *loadProgress
	chunk int64 // what one goroutine of readBulk reads at a time
}

func newDumpReader(f *os.File, size int64, v *verifiedPrefix, prog *loadProgress) *dumpReader {
	src := &gatedFile{f: f, v: v}
	return &dumpReader{f: f, v: v, src: src, br: bufio.NewReaderSize(src, bufSize), size: size, prog: prog, chunk: bulkChunk}
}

func (d *dumpReader) Read(p []byte) (int, error) {
	n, err := d.br.Read(p)
	d.off += int64(n)
	if n > 0 && d.prog != nil {
		d.prog.add(int64(n), DumpFile)
	}
	return n, err
}

// bulkChunk is what one goroutine of readBulk reads at a time.
const bulkChunk = 16 << 20

// readBulk fills dst with the next len(dst) bytes of the file.
func (d *dumpReader) readBulk(dst []byte) error {
	if int64(len(dst)) < 2*d.chunk {
		_, err := io.ReadFull(d, dst)
		return err
	}
	n, err := io.ReadFull(d, dst[:min(len(dst), d.br.Buffered())])
	if err != nil {
		return err
	}
	rest, start := dst[n:], d.off
	var progress func(int64)
	if d.prog != nil {
		progress = func(m int64) { d.prog.add(m, DumpFile) }
	}
	err = onEveryCore((int64(len(rest))+d.chunk-1)/d.chunk, func(k int64, _ []byte, report func(int64)) error {
		chunk := rest[k*d.chunk : min((k+1)*d.chunk, int64(len(rest)))]
		if d.v != nil {
			if _, err := d.v.wait(start + k*d.chunk + int64(len(chunk))); err != nil {
				return err
			}
		}
		if _, err := d.f.ReadAt(chunk, start+k*d.chunk); err != nil {
			return fmt.Errorf("read %s at %d: %w", d.f.Name(), start+k*d.chunk, err)
		}
		report(int64(len(chunk)))
		return nil
	}, 0, progress)
	if err != nil {
		return err
	}
	d.off = start + int64(len(rest))
	d.src.off = d.off
	d.br.Reset(d.src)
	return nil
}
