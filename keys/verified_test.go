package keys

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// decodeVerified decodes the cube's dump in d while hashing it against its sidecar's
// chunk list, the vectors in pieces of 64 bytes, and returns the key, the decoder's
// offset when it stopped, and the decoder's and the hash's errors.
func decodeVerified(t *testing.T, d Dir) (*groth16bls.ProvingKey, int64, error, error) {
	t.Helper()
	s := readSumFile(t, d)
	v := newVerifiedPrefix(&s)
	if v == nil {
		t.Fatal("the sidecar's chunk list was not taken")
	}
	f, err := os.Open(d.Path("cube", DumpFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hashed := make(chan error, 1)
	go func() { hashed <- v.hash(f, nil) }()
	r := newDumpReader(f, s.DumpBytes, v, nil)
	r.chunk = 64
	var pk *groth16bls.ProvingKey
	derr := decodeWith(func() (err error) { pk, err = readDumpKZ(r); return err })
	return pk, r.off, derr, <-hashed
}

// The decoding that follows the hash gets the key gnark reads from the dump, and never
// reads past a chunk that differs from its sidecar's list: a bit flipped in a point,
// which the decoder would take as it is, stops it at that chunk's start.
func TestVerifiedDecodeStopsAtDamagedChunk(t *testing.T) {
	d, _, chunk := treeCube(t)
	b, err := os.ReadFile(d.Path("cube", DumpFile))
	if err != nil {
		t.Fatal(err)
	}
	var want groth16bls.ProvingKey
	if err := want.ReadDump(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	got, off, derr, herr := decodeVerified(t, d)
	if derr != nil || herr != nil {
		t.Fatalf("intact dump: decode %v, hash %v", derr, herr)
	}
	if off != int64(len(b)) || !bytes.Equal(raw(t, got), raw(t, &want)) {
		t.Fatalf("intact dump: decoded to byte %d of %d, equal to gnark's reading: %v", off, len(b), bytes.Equal(raw(t, got), raw(t, &want)))
	}
	for k := range (len(b) + chunk - 1) / chunk {
		t.Run(fmt.Sprintf("chunk %d", k), func(t *testing.T) {
			d, _, _ := treeCube(t)
			at := min(k*chunk+chunk/2, len(b)-1)
			editDump(t, d, func(b []byte) []byte { b[at] ^= 0x10; return b })
			_, off, derr, herr := decodeVerified(t, d)
			if !errors.Is(herr, errChunkDiffers) {
				t.Fatalf("hash error %v, want %v", herr, errChunkDiffers)
			}
			if derr == nil || !errors.Is(derr, errChunkDiffers) {
				t.Errorf("decode error %v, want it stopped by the damaged chunk", derr)
			}
			if off > int64(k*chunk) {
				t.Errorf("the decoder reached byte %d, past the start of damaged chunk %d (byte %d)", off, k, k*chunk)
			}
		})
	}
}
