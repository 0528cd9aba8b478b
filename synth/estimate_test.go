package synth

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// measureSolve returns the bytes one Solve allocates with the garbage collector off:
// then nothing is freed during the call, so this is the most it can add to the heap.
func measureSolve(t *testing.T, c *Compiled, inputs []byte) int64 {
	t.Helper()
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sol, err := Solve(context.Background(), c, inputs)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(sol)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// TestEstimateBytes checks the estimate against measurement: never below it (the
// budget must not under-reserve) and at most 30% above. The fixed allowances (64 KiB
// overhead, 1 KiB per input) dominate only tiny circuits, which are exempt from the
// upper bound below 1 MiB.
func TestEstimateBytes(t *testing.T) {
	if raceDetector {
		t.Skip("built with -race: the detector's own allocations count in the measurement, not in Solve's")
	}
	names := []string{"synthetic-k10", "synthetic-k16", "merkle-poseidon2-d8-c4", "merkle-poseidon2-d24-c8", "sha256-preimage-b1", "sha256-preimage-b200", "porep-k16"}
	for _, name := range names {
		c := mustCompile(t, name)
		in := mustInputs(t, name, 1)
		w, err := c.Witness(in)
		if err != nil {
			t.Fatal(err)
		}
		bin, _ := w.MarshalBinary()
		est := EstimateBytes(c)
		for form, data := range map[string][]byte{"json": in, "binary": bin} {
			measureSolve(t, c, data) // warm up pools and lazily built state
			got := measureSolve(t, c, data)
			ratio := float64(est) / float64(got)
			t.Logf("%-26s %-6s constraints=%8d estimate=%10d measured=%10d ratio=%.3f", name, form, c.NbConstraints(), est, got, ratio)
			if est < got {
				t.Errorf("%s (%s): estimate %d below measured %d", name, form, est, got)
			}
			if got > 1<<20 && ratio > 1.3 {
				t.Errorf("%s (%s): estimate %d more than 1.3x measured %d", name, form, est, got)
			}
		}
	}
}

// TestEstimateBytesAtSize is TestEstimateBytes at the sizes where memory matters, up
// to 2^20 constraints, with each circuit's HeldBytes beside its measured heap. It
// compiles circuits of a million constraints: set CUZK_SIZE_TESTS=1 to run it.
func TestEstimateBytesAtSize(t *testing.T) {
	if os.Getenv("CUZK_SIZE_TESTS") == "" {
		t.Skip("set CUZK_SIZE_TESTS=1 to compile and solve circuits of up to 2^20 constraints")
	}
	if raceDetector {
		t.Skip("built with -race: the detector's own allocations count in the measurement, not in Solve's")
	}
	for _, name := range []string{"porep-k17", "porep-k18", "porep-k19", "porep-k20", "synthetic-k18", "synthetic-k20"} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := mustCompile(t, name)
		runtime.GC()
		runtime.ReadMemStats(&after)
		in := mustInputs(t, name, 1)
		est := EstimateBytes(c)
		got := measureSolve(t, c, in)
		t.Logf("%-14s constraints=%8d estimate=%11d measured=%11d ratio=%.3f held=%11d heap after compile=%11d",
			name, c.NbConstraints(), est, got, float64(est)/float64(got), c.HeldBytes(), int64(after.HeapAlloc)-int64(before.HeapAlloc))
		if est < got {
			t.Errorf("%s: estimate %d below measured %d", name, est, got)
		}
		if float64(est) > 1.3*float64(got) {
			t.Errorf("%s: estimate %d more than 1.3x measured %d", name, est, got)
		}
	}
}
