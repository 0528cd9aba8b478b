package synth

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint/solver"
)

// BenchmarkSolvePorep is Solve on the PoRep-shaped circuits, with the process's CPU
// time per solve next to the wall time: on a machine whose cores other work shares,
// the wall time of one run says little (compare arms with solveAB instead).
//
//	go test ./synth/ -run '^$' -bench SolvePorep/porep-k20 -benchtime 5x
func BenchmarkSolvePorep(b *testing.B) {
	for _, name := range []string{"porep-k18", "porep-k20", "porep-k22"} {
		b.Run(name, func(b *testing.B) {
			c := mustCompile(b, name)
			in := mustInputs(b, name, 1)
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				if _, err := Solve(context.Background(), c, in); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(float64(c.NbConstraints())*float64(b.N)/b.Elapsed().Seconds(), "constraints/s")
			b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// solveArm is one side of solveAB: a compiled circuit and how to solve it.
type solveArm struct {
	name  string
	c     *Compiled
	solve func(*Compiled) error // nil: Solve on the inputs with gnark's defaults
}

// solveAB solves with both arms in turn, b.N rounds alternating which goes first,
// so that whatever else the machine does falls on both alike, and reports each arm's
// median wall and CPU time per solve and the ratios B/A.
func solveAB(b *testing.B, in []byte, arms [2]solveArm) {
	run := func(a solveArm) (wall, cpu time.Duration, faults int64) {
		t0, c0, f0 := time.Now(), cpuTime(b), pageFaults(b)
		var err error
		if a.solve != nil {
			err = a.solve(a.c)
		} else {
			_, err = Solve(context.Background(), a.c, in)
		}
		if err != nil {
			b.Fatalf("%s: %v", a.name, err)
		}
		return time.Since(t0), cpuTime(b) - c0, pageFaults(b) - f0
	}
	for _, a := range arms { // warm-up
		run(a)
	}
	var wall, cpu [2][]time.Duration
	var faults [2]int64
	r := 0
	for b.Loop() {
		for j := range 2 {
			i := (r + j) % 2
			w, c, f := run(arms[i])
			wall[i], cpu[i], faults[i] = append(wall[i], w), append(cpu[i], c), faults[i]+f
		}
		r++
	}
	var mw, mc [2]time.Duration
	for i, a := range arms {
		mw[i], mc[i] = medianDur(wall[i]), medianDur(cpu[i])
		b.ReportMetric(float64(mw[i])/1e6, "ms-wall-"+a.name)
		b.ReportMetric(float64(mc[i])/1e6, "ms-cpu-"+a.name)
	}
	b.ReportMetric(float64(mw[1])/float64(mw[0]), "wall-B/A")
	b.ReportMetric(float64(mc[1])/float64(mc[0]), "cpu-B/A")
	fmt.Printf("%s (%d constraints), median of %d: A %s: wall %s, cpu %s, %d page faults; B %s: wall %s (%.3f×A), cpu %s (%.3f×A), %d page faults\n",
		b.Name(), arms[0].c.NbConstraints(), r,
		arms[0].name, mw[0].Round(time.Millisecond), mc[0].Round(time.Millisecond), faults[0]/int64(max(r, 1)),
		arms[1].name, mw[1].Round(time.Millisecond), float64(mw[1])/float64(mw[0]), mc[1].Round(time.Millisecond), float64(mc[1])/float64(mc[0]), faults[1]/int64(max(r, 1)))
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pageFaults is the minor page faults this process has taken: a solve whose vectors
// come fresh from the kernel pays one per page touched, one on reused memory none.
func pageFaults(tb testing.TB) int64 {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return ru.Minflt
}

// BenchmarkSolveGC is the A/B of the garbage collector's settings during a solve of
// porep-k<K>: A as the runtime runs by default (GOGC 100, no memory limit); B "off",
// collection off (debug.SetGCPercent(-1)) for the solve, which bounds what the
// collector costs it; B "limit", a memory limit of what the process holds before the
// solve plus the solve's estimate and a quarter, as a worker's limit near its budget
// would be, which makes the collector run as the solve's vectors fill the heap.
//
//	go test ./synth/ -run '^$' -bench SolveGC -benchtime 10x
func BenchmarkSolveGC(b *testing.B) {
	for _, k := range []int{20, 22} {
		name := fmt.Sprintf("porep-k%d", k)
		c := mustCompile(b, name)
		in := mustInputs(b, name, 1)
		solveWith := func(set func()) func(*Compiled) error {
			return func(c *Compiled) error {
				gc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
				defer func() {
					debug.SetGCPercent(gc)
					debug.SetMemoryLimit(limit)
				}()
				set()
				_, err := Solve(context.Background(), c, in)
				return err
			}
		}
		off := solveWith(func() { debug.SetGCPercent(-1) })
		tight := solveWith(func() {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + c.Estimate().Total()*5/4)
		})
		b.Run(name+"/off", func(b *testing.B) {
			solveAB(b, in, [2]solveArm{{name: "default", c: c}, {name: "off", c: c, solve: off}})
		})
		b.Run(name+"/limit", func(b *testing.B) {
			solveAB(b, in, [2]solveArm{{name: "default", c: c}, {name: "limit", c: c, solve: tight}})
		})
	}
}

// BenchmarkSolveBlocks is the A/B of the solver on n goroutines: A gnark's
// (solver.WithNbTasks(n)), B the block solver SolveWitness uses (blocksolve.go).
//
//	go test ./synth/ -run '^$' -bench SolveBlocks/porep-k20 -benchtime 3x
func BenchmarkSolveBlocks(b *testing.B) {
	for _, name := range []string{"porep-k20", "porep-k22"} {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/tasks-%d", name, n), func(b *testing.B) {
				c := mustCompile(b, name)
				in := mustInputs(b, name, 1)
				w, err := c.Witness(in)
				if err != nil {
					b.Fatal(err)
				}
				vec := w.Vector().(fr.Vector)
				if c.plan == nil {
					b.Fatalf("%s: no useful split", name)
				}
				t0 := time.Now()
				planBlocks(c.CS) // as the Registry does, timed
				fmt.Printf("%s: %d instructions, split in %s: %s\n", name, len(c.CS.Instructions),
					time.Since(t0).Round(time.Millisecond), c.plan)
				gnark := func(c *Compiled) error {
					_, err := gnarkSolve(c, w, vec, solver.WithNbTasks(n))
					return err
				}
				blocks := func(c *Compiled) error {
					_, err := SolveWitness(context.Background(), c, w, solver.WithNbTasks(n))
					return err
				}
				solveAB(b, in, [2]solveArm{{name: "gnark", c: c, solve: gnark}, {name: "blocks", c: c, solve: blocks}})
			})
		}
	}
}
