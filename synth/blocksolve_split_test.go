package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
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
// core; it prints each one's median wall and CPU time (the process's, GC included),
// its peak heap above the heap it started with, and the ratios (new / reference), and
// fails if the splits differ. CUZK_CACHE_DIR, if set, keeps the compiled circuits
// between runs (compiling porep-k24 takes minutes and about 10 GB).
//
//	CUZK_CACHE_DIR=/tmp/cuzk-cache go test ./synth/ -run '^$' -bench 'PlanBlocks/porep-k2[02]' -benchtime 7x
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
				var refBytes, fastBytes uint64
				for b.Loop() {
					var want, got *blockPlan
					refBytes = max(refBytes, heapPeak(func() {
						t0, c0 := time.Now(), cpuTime(b)
						want = planBlocksRef(c.CS)
						ref, refCPU = append(ref, time.Since(t0)), append(refCPU, cpuTime(b)-c0)
					}))
					fastBytes = max(fastBytes, heapPeak(func() {
						t0, c0 := time.Now(), cpuTime(b)
						got = planBlocks(c.CS)
						fast, fastCPU = append(fast, time.Since(t0)), append(fastCPU, cpuTime(b)-c0)
					}))
					if !reflect.DeepEqual(got, want) {
						b.Fatalf("split %v, reference %v", got, want)
					}
				}
				r, f := medianDur(ref), medianDur(fast)
				b.ReportMetric(float64(f)/float64(r), "new/ref")
				rc, fc := medianDur(refCPU), medianDur(fastCPU)
				fmt.Printf("%s, GOMAXPROCS %d: %d instructions, median of %d: reference %s (CPU %s, heap +%d MB), new %s (CPU %s, heap +%d MB), new/ref %.3f (CPU %.3f)\n",
					name, procs, len(c.CS.Instructions), len(ref), r.Round(time.Millisecond), rc.Round(time.Millisecond), refBytes>>20,
					f.Round(time.Millisecond), fc.Round(time.Millisecond), fastBytes>>20, float64(f)/float64(r), float64(fc)/float64(rc))
			})
		}
	}
}

// TestPlanBlocksRandomSystems: on small random systems, valid and not (an R1C with
// two unknowns or its unknown read twice, a hint reading an unsolved wire or solving
// one already solved, a wire left unsolved, other blueprints), planBlocks agrees
// with planBlocksRef, both nil or the same split and unknowns, with ranges of one or
// a few instructions per goroutine so that wires cross ranges.
func TestPlanBlocksRandomSystems(t *testing.T) {
	var plans, refused, pastIndex int
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		sys := randomSystem(rng)
		chunk := 1 + rng.IntN(5)
		got, want := planBlocksIn(sys, chunk), planBlocksRef(sys)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d, %d instructions, chunk %d: split %v, reference %v", seed, len(sys.Instructions), chunk, got, want)
		}
		if want == nil {
			refused++
			continue
		}
		plans++
		for i, u := range want.unknown {
			pi := sys.Instructions[i]
			if _, ok := sys.Blueprints[pi.BlueprintID].(*constraint.BlueprintGenericR1C); ok && u == unknownAny {
				pastIndex++
			}
		}
	}
	t.Logf("%d systems split, %d refused; %d unknowns past an r1cUnknown's index", plans, refused, pastIndex)
	if plans < 1000 || refused < 300 || pastIndex < 10 {
		t.Errorf("%d systems split, %d refused, %d unknowns past the index: the generator should give plenty of each", plans, refused, pastIndex)
	}
}

// wrappedR1C and wrappedHint are gnark's generic blueprints under other types, which
// planBlocks decodes through gnark's interfaces rather than from the calldata.
type (
	wrappedR1C  struct{ constraint.BlueprintGenericR1C }
	wrappedHint struct {
		constraint.BlueprintGenericHint
	}
)

// randomSystem is a small system of R1Cs and hints over 1–3 inputs, in blueprints
// planBlocks decodes either way, each reading a few wires solved not long before; in
// half of them, rarely, an instruction gnark's solver would refuse.
func randomSystem(rng *rand.Rand) *cs.R1CS {
	sys := cs.NewR1CS(0)
	r1cs := []constraint.BlueprintID{sys.AddBlueprint(&constraint.BlueprintGenericR1C{}), sys.AddBlueprint(&wrappedR1C{})}
	hints := []constraint.BlueprintID{sys.AddBlueprint(&constraint.BlueprintGenericHint{}), sys.AddBlueprint(&wrappedHint{})}
	sparse := sys.AddBlueprint(&constraint.BlueprintSparseR1CMul[constraint.U64]{})
	inputs := 1 + rng.IntN(3)
	sys.Public, sys.Secret = []string{"1"}, make([]string, inputs-1)
	nbWires := inputs + 1 + rng.IntN(60)
	sys.NbInternalVariables = nbWires - inputs
	order := rng.Perm(nbWires - inputs) // internal wires in the order R1Cs solve them
	solved := make([]uint32, 0, nbWires)
	for w := range inputs {
		solved = append(solved, uint32(w))
	}
	isSolved := func(w uint32) bool { return slices.Contains(solved, w) }
	unsolved := func() (uint32, bool) {
		for _, o := range order {
			if w := uint32(inputs + o); !isSolved(w) {
				return w, true
			}
		}
		return 0, false
	}
	faulty := rng.IntN(2) == 0 // the other half are all valid
	fault := func() bool { return faulty && rng.IntN(40) == 0 }
	// recent is a solved wire, from the last few solved, or a constant.
	recent := func() constraint.Term {
		if rng.IntN(6) == 0 {
			return constraint.Term{CID: constraint.CoeffIdOne, VID: math.MaxUint32}
		}
		k := len(solved) - 1 - rng.IntN(min(len(solved), 1+rng.IntN(8)))
		return constraint.Term{CID: uint32(rng.IntN(4)), VID: solved[k]}
	}
	terms := func(n int) constraint.LinearExpression {
		le := make(constraint.LinearExpression, n)
		for k := range le {
			le[k] = recent()
		}
		return le
	}
	var buf []uint32
	add := func(id constraint.BlueprintID) {
		sys.Instructions = append(sys.Instructions, constraint.PackedInstruction{StartCallData: uint64(len(sys.CallData)), BlueprintID: id})
		sys.CallData = append(sys.CallData, buf...)
	}
	for {
		w, open := unsolved()
		if !open && rng.IntN(3) == 0 || fault() && rng.IntN(3) == 0 { // the latter may leave wires unsolved
			break
		}
		buf = buf[:0]
		switch {
		case fault() && rng.IntN(4) == 0:
			buf = append(buf, 0, 0, 0, 0)
			add(sparse)
		case open && rng.IntN(3) == 0: // a hint solving the next few wires
			end := int(w) + 1
			for end < nbWires && !isSolved(uint32(end)) && rng.IntN(2) == 0 {
				end++
			}
			start := int(w)
			if fault() { // outputs a solved wire
				start = int(solved[rng.IntN(len(solved))])
				end = max(end, start+1)
			}
			in := make([]constraint.LinearExpression, rng.IntN(3))
			for k := range in {
				in[k] = terms(rng.IntN(3))
				if fault() { // reads an unsolved wire
					in[k] = append(in[k], constraint.Term{CID: 1, VID: w})
				}
			}
			hm := constraint.HintMapping{HintID: 1, Inputs: in}
			hm.OutputRange.Start, hm.OutputRange.End = uint32(start), uint32(end)
			(&constraint.BlueprintGenericHint{}).CompressHint(hm, &buf)
			for v := start; v < end; v++ {
				if !isSolved(uint32(v)) {
					solved = append(solved, uint32(v))
				}
			}
			add(hints[rng.IntN(2)])
		default: // an R1C, solving w if open
			// Now and then a side long enough that its unknown's index may not fit
			// an r1cUnknown.
			width := func() int {
				if rng.IntN(12) == 0 {
					return 58 + rng.IntN(10)
				}
				return rng.IntN(3)
			}
			r := constraint.R1C{L: terms(width()), R: terms(width()), O: terms(width())}
			if open && rng.IntN(4) != 0 {
				les := [...]*constraint.LinearExpression{&r.L, &r.R, &r.O}
				le := les[rng.IntN(3)]
				*le = slices.Insert(*le, rng.IntN(len(*le)+1), constraint.Term{CID: constraint.CoeffIdOne, VID: w})
				if fault() { // reads w twice
					*le = append(*le, constraint.Term{CID: constraint.CoeffIdOne, VID: w})
				}
				solved = append(solved, w)
				if w2, open := unsolved(); open && fault() { // a second unknown
					r.O = append(r.O, constraint.Term{CID: constraint.CoeffIdOne, VID: w2})
					solved = append(solved, w2)
				}
			}
			(&constraint.BlueprintGenericR1C{}).CompressR1C(&r, &buf)
			add(r1cs[rng.IntN(2)])
		}
	}
	return sys
}

// heapPeak runs f and returns the most the heap's objects (garbage not yet collected
// included) grew above their bytes at its start, sampled every millisecond.
func heapPeak(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base, peak := read(), uint64(0)
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	<-sampled
	return max(peak, base) - base
}
