package keys

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// BenchmarkKeyLoad compares reading a proving key from pk.bin (gnark ReadFrom of the
// compressed encoding with its digest check, the only path before pk.dump) with the
// dump path (sidecar checks, SHA-256 of the whole dump, ReadDump), and prints the
// ratio. Keys are random but valid points shaped like the circuits named in
// CUZK_KEYLOAD_BENCH (comma-separated; default synthetic-k16, as parsing pk.bin at
// synthetic-k18 takes minutes on 2 cores):
//
//	CUZK_KEYLOAD_BENCH=synthetic-k16,synthetic-k18 go test -run x -bench KeyLoad ./keys/
func BenchmarkKeyLoad(b *testing.B) {
	names := "synthetic-k16"
	if s := os.Getenv("CUZK_KEYLOAD_BENCH"); s != "" {
		names = s
	}
	reg := synth.NewRegistry(b.TempDir())
	for _, name := range strings.Split(names, ",") {
		compiled, err := reg.Get(context.Background(), name)
		if err != nil {
			b.Fatal(err)
		}
		pk, err := prover.RandomKeyFor(name, compiled.CS)
		if err != nil {
			b.Fatal(err)
		}
		d := Dir(b.TempDir())
		if err := os.MkdirAll(d.Path(name, ""), dirPerm); err != nil {
			b.Fatal(err)
		}
		if err := writeAtomic(d.Path(name, PKFile), func(w io.Writer) error { _, err := pk.WriteTo(w); return err }); err != nil {
			b.Fatal(err)
		}
		digest, err := FileDigest(d.Path(name, PKFile))
		if err != nil {
			b.Fatal(err)
		}
		if err := d.writeDump(name, pk, digest); err != nil {
			b.Fatal(err)
		}
		pk = nil

		var old, dump time.Duration
		b.Run(name+"/"+PKFile, func(b *testing.B) {
			for range b.N {
				if _, _, err := d.readPK(name, digest); err != nil {
					b.Fatal(err)
				}
			}
			old = b.Elapsed() / time.Duration(b.N)
		})
		b.Run(name+"/"+DumpFile, func(b *testing.B) {
			for range b.N {
				s, err := d.readSum(name, digest)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := d.readDump(name, s); err != nil {
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
