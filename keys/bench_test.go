package keys

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// benchDir holds a key shaped like circuit (random but valid points) with its dump,
// generated on first use into a directory under os.TempDir that later runs reuse:
// making a 2^20 key takes minutes on 2 cores. It returns the dir and the pk digest.
func benchDir(b *testing.B, circuit string) (Dir, string) {
	b.Helper()
	root := filepath.Join(os.TempDir(), "cuzk-bench-keys")
	d := Dir(filepath.Join(root, "keys"))
	if fileSize(d.Path(circuit, DumpSumFile)) > 0 {
		digest, err := FileDigest(d.Path(circuit, PKFile))
		if err != nil {
			b.Fatal(err)
		}
		return d, digest
	}
	compiled, err := synth.NewRegistry(filepath.Join(root, "circuits")).Get(context.Background(), circuit)
	if err != nil {
		b.Fatal(err)
	}
	pk, err := prover.RandomKeyFor(circuit, compiled.CS)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(d.Path(circuit, ""), dirPerm); err != nil {
		b.Fatal(err)
	}
	if err := writeAtomic(d.Path(circuit, PKFile), func(w io.Writer) error { _, err := pk.WriteTo(w); return err }); err != nil {
		b.Fatal(err)
	}
	digest, err := FileDigest(d.Path(circuit, PKFile))
	if err != nil {
		b.Fatal(err)
	}
	// Load reads a verifying key too: one with the key's points (no proof is made).
	vk := new(groth16bls.VerifyingKey)
	vk.G1.Alpha, vk.G1.Beta, vk.G1.Delta = pk.G1.Alpha, pk.G1.Beta, pk.G1.Delta
	vk.G2.Beta, vk.G2.Delta, vk.G2.Gamma = pk.G2.Beta, pk.G2.Delta, pk.G2.Delta
	vk.G1.K = pk.G1.A[:compiled.NbPublic()]
	if err := writeAtomic(d.Path(circuit, VKFile), func(w io.Writer) error { _, err := vk.WriteTo(w); return err }); err != nil {
		b.Fatal(err)
	}
	if err := d.writeDump(circuit, pk, digest, fileSize(d.Path(circuit, PKFile))); err != nil {
		b.Fatal(err)
	}
	return d, digest
}

// BenchmarkLoadKey is a worker's key load (LoadWith from pk.dump: sidecar checks,
// the whole dump's digest, ReadDump) at 2^16, 2^18 and 2^20 constraints, reported
// per byte of the dump so that one sees it scale linearly. 2^20 runs only with
// CUZK_BENCH_LARGE=1 (its key takes minutes to make the first time):
//
//	go test -run '^$' -bench LoadKey ./keys/
//	CUZK_BENCH_LARGE=1 go test -run '^$' -bench LoadKey ./keys/
func BenchmarkLoadKey(b *testing.B) {
	for _, k := range []int{16, 18, 20} {
		name := fmt.Sprintf("synthetic-k%d", k)
		b.Run(name, func(b *testing.B) {
			if k >= 20 && os.Getenv("CUZK_BENCH_LARGE") != "1" {
				b.Skip("2^20: set CUZK_BENCH_LARGE=1")
			}
			d, digest := benchDir(b, name)
			size := fileSize(d.Path(name, DumpFile))
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				if _, _, st, err := d.LoadWith(name, digest, LoadOptions{}); err != nil || st.Source != SourceDump {
					b.Fatalf("load: %+v, %v", st, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*size), "ns/byte")
		})
	}
}

// BenchmarkKeyLoad compares reading a proving key from pk.bin (gnark ReadFrom of the
// compressed encoding with its digest check, the only path before pk.dump) with the
// dump path (sidecar checks, the whole dump's digest, ReadDump), and prints the
// ratio. Keys are those of BenchmarkLoadKey, shaped like the circuits named in
// CUZK_KEYLOAD_BENCH (comma-separated; default synthetic-k16, as parsing pk.bin at
// synthetic-k18 takes minutes on 2 cores):
//
//	CUZK_KEYLOAD_BENCH=synthetic-k16,synthetic-k18 go test -run x -bench KeyLoad ./keys/
func BenchmarkKeyLoad(b *testing.B) {
	names := "synthetic-k16"
	if s := os.Getenv("CUZK_KEYLOAD_BENCH"); s != "" {
		names = s
	}
	for _, name := range strings.Split(names, ",") {
		d, digest := benchDir(b, name)
		var old, dump time.Duration
		b.Run(name+"/"+PKFile, func(b *testing.B) {
			for range b.N {
				if _, _, err := d.readPK(name, digest, nil); err != nil {
					b.Fatal(err)
				}
			}
			old = b.Elapsed() / time.Duration(b.N)
		})
		b.Run(name+"/"+DumpFile, func(b *testing.B) {
			for range b.N {
				s, err := d.readSum(name, digest, fileSize(d.Path(name, PKFile)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := d.readDump(name, s, nil); err != nil {
					b.Fatal(err)
				}
			}
			dump = b.Elapsed() / time.Duration(b.N)
		})
		if old > 0 && dump > 0 {
			fmt.Printf("key load %s: pk.bin %d bytes %v, pk.dump %d bytes %v: %.1fx faster\n", name,
				fileSize(d.Path(name, PKFile)), old.Round(time.Millisecond),
				fileSize(d.Path(name, DumpFile)), dump.Round(time.Millisecond), float64(old)/float64(dump))
		}
	}
}

// BenchmarkDumpHash is the load's digest check of a dump (checkDump: the file is in the
// page cache, nothing decoded) in both schemes a sidecar may record: the whole-file
// SHA-256 of keys written before the tree digest, one core, and the tree digest, one
// goroutine per core. It prints both rates and their ratio for each -cpu; the ratio
// grows with GOMAXPROCS until the page cache's read bandwidth is the bound. The file is
// CUZK_BENCH_HASH_BYTES bytes (default 2 GiB), hashed in chunks of
// CUZK_BENCH_HASH_CHUNK bytes (default the chunk size dumps are written with):
//
//	go test -run '^$' -bench DumpHash -benchtime 3x -cpu 1,4,16 ./keys/
func BenchmarkDumpHash(b *testing.B) {
	size, chunk := int64(2<<30), int64(treeChunk)
	for v, p := range map[string]*int64{"CUZK_BENCH_HASH_BYTES": &size, "CUZK_BENCH_HASH_CHUNK": &chunk} {
		if s := os.Getenv(v); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive byte count", v, s)
			}
			*p = n
		}
	}
	d := Dir(b.TempDir())
	if err := os.MkdirAll(d.Path("h", ""), dirPerm); err != nil {
		b.Fatal(err)
	}
	tree, err := d.writeDumpFile("h", int(chunk), func(w io.Writer) error {
		buf := make([]byte, 4<<20)
		r := rand.NewChaCha8([32]byte{1})
		for left := size; left > 0; left -= int64(len(buf)) {
			_, _ = r.Read(buf)
			if _, err := w.Write(buf[:min(int64(len(buf)), left)]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	whole, err := FileDigest(d.Path("h", DumpFile))
	if err != nil {
		b.Fatal(err)
	}
	old := dumpSum{DumpSHA256: whole, DumpBytes: size}
	rate := map[int]map[string]float64{} // by GOMAXPROCS (-cpu), then scheme
	for _, c := range []struct {
		name string
		sum  *dumpSum
	}{{"sha256", &old}, {"tree", &tree}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				f, err := os.Open(d.Path("h", DumpFile))
				if err != nil {
					b.Fatal(err)
				}
				err = checkDump(f, c.sum, nil)
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			procs := runtime.GOMAXPROCS(0)
			if rate[procs] == nil {
				rate[procs] = map[string]float64{}
			}
			rate[procs][c.name] = float64(int64(b.N)*size) / b.Elapsed().Seconds() / 1e6
		})
	}
	for _, procs := range slices.Sorted(maps.Keys(rate)) {
		if r := rate[procs]; r["sha256"] > 0 && r["tree"] > 0 {
			fmt.Printf("dump hash %d bytes, chunk %d, GOMAXPROCS %d: sha256 %.0f MB/s, tree %.0f MB/s: %.2fx\n",
				size, chunk, procs, r["sha256"], r["tree"], r["tree"]/r["sha256"])
		}
	}
}

// BenchmarkReadDumpKZ is the A/B of decoding a dump into the prover's key: gnark's
// ReadDump, whose K and Z NewProvingKey then copies into one vector, against
// readDumpKZ, which reads them into one vector in the first place. The dump of the key
// shaped like CUZK_DUMP_BENCH (default synthetic-k18) is read from memory, the two
// alternating, and both medians and their ratio are printed:
//
//	go test -run '^$' -bench ReadDumpKZ -benchtime 1x ./keys/
func BenchmarkReadDumpKZ(b *testing.B) {
	name := cmp.Or(os.Getenv("CUZK_DUMP_BENCH"), "synthetic-k18")
	d, _ := benchDir(b, name)
	dump, err := os.ReadFile(d.Path(name, DumpFile))
	if err != nil {
		b.Fatal(err)
	}
	arms := [2]func() (*groth16bls.ProvingKey, error){
		func() (*groth16bls.ProvingKey, error) {
			pk := new(groth16bls.ProvingKey)
			return pk, pk.ReadDump(bytes.NewReader(dump))
		},
		func() (*groth16bls.ProvingKey, error) { return readDumpKZ(bytes.NewReader(dump)) },
	}
	var t [2][]time.Duration
	for range 5 * b.N {
		for i, read := range arms {
			runtime.GC()
			t0 := time.Now()
			pk, err := read()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := prover.NewProvingKey(name, pk, int(pk.Domain.Cardinality)); err != nil {
				b.Fatal(err)
			}
			t[i] = append(t[i], time.Since(t0))
		}
	}
	for i := range t {
		slices.Sort(t[i])
	}
	a, kz := t[0][len(t[0])/2], t[1][len(t[1])/2]
	fmt.Printf("dump to prover key %s (%d bytes): ReadDump and copy %v, K and Z read as one %v: %.2fx\n",
		name, len(dump), a.Round(time.Millisecond), kz.Round(time.Millisecond), float64(a)/float64(kz))
}
