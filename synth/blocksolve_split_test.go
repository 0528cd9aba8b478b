package synth

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestPlanBlocksMatchesRef: planBlocks finds exactly planBlocksRef's split (prefix,
// suffix, blocks, largest block, tasks and their order) for every built-in family.
func TestPlanBlocksMatchesRef(t *testing.T) {
	names := append(slices.Clone(blockCircuits), "synthetic-k5", "merkle-poseidon2-d2-c3",
		"sha256-preimage-b1", "porep-k19")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c := mustCompile(t, name)
			got, want := planBlocks(c.CS), planBlocksRef(c.CS)
			if want == nil {
				t.Fatal("no reference split")
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("split %v, reference %v", got, want)
			}
			t.Logf("%d instructions: %s", len(c.CS.Instructions), got)
		})
	}
}

// BenchmarkPlanBlocks times planBlocks against planBlocksRef, the sequential split it
// replaced, alternating on the same compiled circuit, with GOMAXPROCS 1 and then every
// core; it prints each one's median wall and CPU time (the process's, GC included)
// and their ratios (new / reference), and fails if the splits differ. CUZK_CACHE_DIR, if set, keeps the compiled circuits between runs.
//
//	CUZK_CACHE_DIR=/tmp/cuzk-cache go test ./synth/ -run '^$' -bench 'PlanBlocks/porep-k2[02]' -benchtime 5x
func BenchmarkPlanBlocks(b *testing.B) {
	reg := NewRegistry(os.Getenv("CUZK_CACHE_DIR"))
	for _, name := range []string{"porep-k20", "porep-k22", "porep-k24"} {
		for _, procs := range slices.Compact([]int{1, runtime.NumCPU()}) {
			b.Run(fmt.Sprintf("%s/procs-%d", name, procs), func(b *testing.B) {
				c, err := reg.Get(b.Context(), name)
				if err != nil {
					b.Fatal(err)
				}
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				var ref, fast, refCPU, fastCPU []time.Duration
				for b.Loop() {
					t0, c0 := time.Now(), cpuTime(b)
					want := planBlocksRef(c.CS)
					t1, c1 := time.Now(), cpuTime(b)
					got := planBlocks(c.CS)
					ref, fast = append(ref, t1.Sub(t0)), append(fast, time.Since(t1))
					refCPU, fastCPU = append(refCPU, c1-c0), append(fastCPU, cpuTime(b)-c1)
					if !reflect.DeepEqual(got, want) {
						b.Fatalf("split %v, reference %v", got, want)
					}
				}
				r, f := medianDur(ref), medianDur(fast)
				b.ReportMetric(float64(f)/float64(r), "new/ref")
				rc, fc := medianDur(refCPU), medianDur(fastCPU)
				fmt.Printf("%s, GOMAXPROCS %d: %d instructions, median of %d: reference %s (CPU %s), new %s (CPU %s), new/ref %.3f (CPU %.3f)\n",
					name, procs, len(c.CS.Instructions), len(ref), r.Round(time.Millisecond), rc.Round(time.Millisecond),
					f.Round(time.Millisecond), fc.Round(time.Millisecond), float64(f)/float64(r), float64(fc)/float64(rc))
			})
		}
	}
}
