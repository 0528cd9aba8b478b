package keys

import (
	"encoding/binary"
	"fmt"
	"io"
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
	if pk.G1.A, _, err = dump.ReadSlice[[]curve.G1Affine](r); err != nil {
		return nil, fmt.Errorf("read G1.A: %w", err)
	}
	if pk.G1.B, _, err = dump.ReadSlice[[]curve.G1Affine](r); err != nil {
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
	if pk.G2.B, _, err = dump.ReadSlice[[]curve.G2Affine](r); err != nil {
		return nil, fmt.Errorf("read G2.B: %w", err)
	}
	for i := range int(nbCommitments) {
		var c pedersen.ProvingKey
		if c.Basis, _, err = dump.ReadSlice[[]curve.G1Affine](r); err != nil {
			return nil, fmt.Errorf("read commitment basis %d: %w", i, err)
		}
		if c.BasisExpSigma, _, err = dump.ReadSlice[[]curve.G1Affine](r); err != nil {
			return nil, fmt.Errorf("read commitment basisExpSigma %d: %w", i, err)
		}
		pk.CommitmentKeys = append(pk.CommitmentKeys, c)
	}
	return pk, nil
}

// readSliceInto reads a slice as dump.WriteSlice wrote it (its length, then its
// elements' memory) into the slice that alloc gives for that length.
func readSliceInto[E any](r io.Reader, alloc func(n uint64) []E) ([]E, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(b[:])
	if n == 0 {
		return make([]E, 0), nil
	}
	s := alloc(n)
	var e E
	if _, err := io.ReadFull(r, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), int(unsafe.Sizeof(e))*len(s))); err != nil {
		return nil, err
	}
	return s, nil
}
