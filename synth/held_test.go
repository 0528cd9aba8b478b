package synth

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestHeldBytes checks a compiled circuit's HeldBytes against the live heap it adds
// when read from its cache file: never below it (a budget must not under-reserve what
// it keeps) and at most 1.5 times it.
func TestHeldBytes(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"synthetic-k14", "merkle-poseidon2-d24-c8", "sha256-preimage-b200", "porep-k16"} {
		path := filepath.Join(dir, name+".r1cs")
		if _, err := writeR1CSFile(path, mustCompile(t, name).CS); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		sys, _, err := readR1CSFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := newCompiled(name, sys, true)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		got := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		held := c.HeldBytes()
		runtime.KeepAlive(c)
		t.Logf("%-24s constraints=%8d held=%10d measured=%10d ratio=%.3f", name, c.NbConstraints(), held, got, float64(held)/float64(got))
		if held < got {
			t.Errorf("%s: HeldBytes %d below the measured %d", name, held, got)
		}
		if float64(held) > 1.5*float64(got) {
			t.Errorf("%s: HeldBytes %d more than 1.5 times the measured %d", name, held, got)
		}
	}
}
