package synth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// TestReadR1CSFileIsGnarks writes and reads cache files of every family: the file is
// gnark's own encoding of the system byte for byte, then the trailer, and the system
// read equals gnark's own decoding of the same bytes: its call data, and its whole
// encoding written again, byte for byte.
func TestReadR1CSFileIsGnarks(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"synthetic-k1", "synthetic-k14", "merkle-poseidon2-d8-c4", "sha256-preimage-b200", "porep-k16"} {
		path := filepath.Join(dir, name+".r1cs")
		sys := mustCompile(t, name).CS
		if _, err := writeR1CSFile(path, sys); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var enc bytes.Buffer
		if _, err := sys.WriteTo(&enc); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(enc.Bytes())
		if !bytes.Equal(raw, slices.Concat(enc.Bytes(), []byte(trailerMagic), sum[:])) {
			t.Fatalf("%s: the file is not gnark's encoding and its checksum trailer", name)
		}
		got, _, err := readR1CSFile(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := new(cs.R1CS)
		if _, err := want.ReadFrom(bytes.NewReader(raw[:len(raw)-trailerSize])); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.CallData, want.CallData) {
			t.Fatalf("%s: call data differs from gnark's decoding", name)
		}
		var a, b bytes.Buffer
		if _, err := got.WriteTo(&a); err != nil {
			t.Fatal(err)
		}
		if _, err := want.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("%s: re-encoded system differs from gnark's decoding of the same file", name)
		}
		t.Logf("%s: %d call-data words, %d bytes: as gnark's", name, len(got.CallData), len(raw))
	}
}

// TestReadR1CSFileDamage: a damaged file is refused as corrupt wherever the damage
// sits, and the decode alone refuses call data that does not hold what it announces.
func TestReadR1CSFileDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.r1cs")
	if _, err := writeR1CSFile(path, mustCompile(t, "sha256-preimage-b200").CS); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	levels, insts := le.Uint64(raw[32:]), le.Uint64(raw[40:])
	callsAt := 64 + int(levels+insts)
	for _, at := range []int{0, 8, 40, 48, callsAt, callsAt + 9, callsAt + 1000, len(raw) - trailerSize - 1, len(raw) - 1} {
		bad := slices.Clone(raw)
		bad[at] ^= 0x80
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readR1CSFile(path); !errors.Is(err, errCorrupt) {
			t.Errorf("byte %d flipped: %v, want errCorrupt", at, err)
		}
	}
	for _, n := range []int{0, 10, 64, callsAt + 3, len(raw) - trailerSize, len(raw) - 1} {
		if err := os.WriteFile(path, raw[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readR1CSFile(path); !errors.Is(err, errCorrupt) {
			t.Errorf("truncated to %d bytes: %v, want errCorrupt", n, err)
		}
	}
	// The checksum aside: the call data's count one too many, then its last varint cut.
	gnark := raw[:len(raw)-trailerSize]
	for name, edit := range map[string]func([]byte){
		"count":       func(b []byte) { le.PutUint64(b[callsAt:], le.Uint64(b[callsAt:])+1) },
		"last varint": func(b []byte) { b[callsAt+int(le.Uint64(b[48:]))-1] |= 0x80 },
	} {
		bad := slices.Clone(gnark)
		edit(bad)
		if _, err := decodeR1CSAt(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: %v, want errCorrupt", name, err)
		}
	}
}

// TestUvarints32 checks the parallel encode and decode against encoding/binary on
// values at the varint length edges, on 1 to 16 goroutines, and the decode's refusals.
func TestUvarints32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	edges := []uint32{0, 1, 127, 128, 1<<14 - 1, 1 << 14, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, math.MaxUint32}
	for _, n := range []int{0, 1, 5, 1000, 1 << 16, 1<<18 + 3} {
		vals := make([]uint32, n)
		var buf []byte
		for i := range vals {
			if rng.IntN(4) == 0 {
				vals[i] = edges[rng.IntN(len(edges))]
			} else {
				vals[i] = rng.Uint32() >> rng.IntN(32)
			}
			buf = binary.AppendUvarint(buf, uint64(vals[i]))
		}
		for _, tasks := range []int{1, 2, 3, 16} {
			if enc := putUvarints32(vals, tasks); !bytes.Equal(enc, buf) {
				t.Fatalf("%d values, %d tasks: encoding differs from binary.AppendUvarint's", n, tasks)
			}
			got, err := uvarints32(buf, uint64(n), tasks)
			if err != nil {
				t.Fatalf("%d values, %d tasks: %v", n, tasks, err)
			}
			if !slices.Equal(got, vals) {
				t.Fatalf("%d values, %d tasks: values differ", n, tasks)
			}
		}
	}
	for name, c := range map[string]struct {
		buf   []byte
		count uint64
	}{
		"count too high":    {binary.AppendUvarint(nil, 300), 2},
		"count too low":     {binary.AppendUvarint(binary.AppendUvarint(nil, 1), 2), 1},
		"cut last varint":   {[]byte{0x80}, 1},
		"six bytes":         {binary.AppendUvarint(nil, 1<<35), 1},
		"above 2^32":        {binary.AppendUvarint(nil, 1<<32), 1},
		"more than the buf": {[]byte{1}, 5},
	} {
		if _, err := uvarints32(c.buf, c.count, 4); !errors.Is(err, errCallData) {
			t.Errorf("%s: %v, want errCallData", name, err)
		}
	}
}

// BenchmarkReadR1CSFile reads a circuit's cache file (CUZK_R1CS_BENCH, default
// porep-k18) with readR1CSFile against gnark's own decoding behind the same
// checksum, alternating, and reports the ratio of their medians.
func BenchmarkReadR1CSFile(b *testing.B) {
	name := os.Getenv("CUZK_R1CS_BENCH")
	if name == "" {
		name = "porep-k18"
	}
	path := filepath.Join(b.TempDir(), name+".r1cs")
	if _, err := writeR1CSFile(path, mustCompile(b, name).CS); err != nil {
		b.Fatal(err)
	}
	// The read before: gnark's ReadFrom of the file through a hashing reader.
	gnark := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		sum := sha256.New()
		br := bufio.NewReaderSize(f, 1<<20)
		if _, err := decodeR1CS(io.TeeReader(br, sum), st.Size(), int64(trailerSize)); err != nil {
			return err
		}
		trailer := make([]byte, trailerSize)
		if _, err := io.ReadFull(br, trailer); err != nil {
			return err
		}
		return checkTrailer(trailer, sum)
	}
	var ours, ref []time.Duration
	for range b.N {
		runtime.GC()
		t0 := time.Now()
		if _, _, err := readR1CSFile(path); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(t0))
		runtime.GC()
		t0 = time.Now()
		if err := gnark(); err != nil {
			b.Fatal(err)
		}
		ref = append(ref, time.Since(t0))
	}
	slices.Sort(ours)
	slices.Sort(ref)
	mo, mr := ours[len(ours)/2], ref[len(ref)/2]
	b.ReportMetric(float64(mo.Milliseconds()), "ms/read")
	fmt.Printf("r1cs read %s (%d cores): parallel call data %v, gnark's decode %v, %.2fx\n", name, runtime.GOMAXPROCS(0), mo, mr, float64(mr)/float64(mo))
}

// BenchmarkWriteR1CSFile writes a circuit's cache file (CUZK_R1CS_BENCH, default
// porep-k18) with writeR1CSFile against gnark's own encoding behind the same checksum
// and sync, alternating, and reports the ratio of their medians.
func BenchmarkWriteR1CSFile(b *testing.B) {
	name := os.Getenv("CUZK_R1CS_BENCH")
	if name == "" {
		name = "porep-k18"
	}
	sys := mustCompile(b, name).CS
	dir := b.TempDir()
	// The write before: gnark's WriteTo through a buffer and the hash.
	gnark := func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sum := sha256.New()
		bw := bufio.NewWriterSize(f, 1<<20)
		if _, err := sys.WriteTo(io.MultiWriter(bw, sum)); err != nil {
			return err
		}
		bw.WriteString(trailerMagic)
		bw.Write(sum.Sum(nil))
		if err := bw.Flush(); err != nil {
			return err
		}
		return f.Sync()
	}
	var ours, ref []time.Duration
	for i := range b.N {
		runtime.GC()
		t0 := time.Now()
		if _, err := writeR1CSFile(filepath.Join(dir, fmt.Sprintf("ours-%d", i)), sys); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(t0))
		runtime.GC()
		t0 = time.Now()
		if err := gnark(filepath.Join(dir, fmt.Sprintf("gnark-%d", i))); err != nil {
			b.Fatal(err)
		}
		ref = append(ref, time.Since(t0))
	}
	mo, mr := medianDur(ours), medianDur(ref)
	b.ReportMetric(float64(mo.Milliseconds()), "ms/write")
	fmt.Printf("r1cs write %s (%d cores): parallel call data %v, gnark's encode %v, %.2fx\n", name, runtime.GOMAXPROCS(0), mo, mr, float64(mr)/float64(mo))
}
