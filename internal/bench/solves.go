package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/consensys/gnark/constraint/solver"

	"github.com/cuzk/cuzk/synth"
)

// SolveRate is the solver's throughput with Concurrency solves running at once.
type SolveRate struct {
	Concurrency int
	Rounds      []time.Duration // wall time of each round of Concurrency solves
	First       []time.Duration // each round's start to its first solution
}

// Median is the median round's wall time.
func (r SolveRate) Median() time.Duration { return Median(r.Rounds) }

// ConstraintsPerSec is the constraints solved per second across the concurrent
// solves of a median round, for a circuit of n constraints.
func (r SolveRate) ConstraintsPerSec(n int) float64 {
	return float64(n) * float64(r.Concurrency) / r.Median().Seconds()
}

// Sharing is how concurrent solves share the cores.
type Sharing int

const (
	// ShareNone: each solve runs gnark's default of one goroutine per core.
	ShareNone Sharing = iota
	// ShareSplit: each of n solves at once runs synth.Tasks(GOMAXPROCS, n) goroutines.
	ShareSplit
	// ShareLine: the solves take the cores in line, in the order they start
	// (synth.Cores), as the worker's do; gnark's solver on the split's goroutines.
	ShareLine
)

func (s Sharing) String() string {
	switch s {
	case ShareNone:
		return "off"
	case ShareSplit:
		return "on"
	case ShareLine:
		return "line"
	}
	return fmt.Sprintf("Sharing(%d)", int(s))
}

// MeasureSolves times solve of c on inputs, for each entry of concurrency in turn:
// rounds rounds of that many solves started together, each round timed from the
// first start to the first and to the last finish. Solutions are dropped as they
// come and the heap collected between rounds, so a round holds at most its own
// solutions. share says how the solves of a round share the cores.
func MeasureSolves(ctx context.Context, c *synth.Compiled, inputs []byte, concurrency []int, rounds int, share Sharing, solve SolveFunc) ([]SolveRate, error) {
	if rounds < 1 {
		return nil, errors.New("measure solves: rounds must be at least 1")
	}
	for _, n := range concurrency {
		if n < 1 {
			return nil, fmt.Errorf("measure solves: concurrency %d, want at least 1", n)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	var rates []SolveRate
	for _, n := range concurrency {
		rate := SolveRate{Concurrency: n}
		var opts []solver.Option
		if share != ShareNone {
			opts = append(opts, solver.WithNbTasks(synth.Tasks(procs, n)))
		}
		for range rounds {
			runtime.GC()
			errs := make([]error, n)
			var cores *synth.Cores
			if share == ShareLine {
				cores = synth.NewCores(procs)
			}
			var (
				wg    sync.WaitGroup
				first sync.Once
				at    time.Duration
			)
			start := time.Now()
			for i := range n {
				sctx := ctx
				if cores != nil {
					sctx = synth.WithTurn(ctx, cores.Turn(false)) // in start order
				}
				wg.Go(func() {
					_, errs[i] = solve(sctx, c, inputs, opts...)
					first.Do(func() { at = time.Since(start) })
				})
			}
			wg.Wait()
			rate.Rounds = append(rate.Rounds, time.Since(start))
			rate.First = append(rate.First, at)
			if err := errors.Join(errs...); err != nil {
				return nil, fmt.Errorf("solve %s (%d at once): %w", c.Name, n, err)
			}
		}
		rates = append(rates, rate)
	}
	return rates, nil
}

// SolveFunc is a solver MeasureSolves times: synth.Solve, or synth.SolveLevels.
type SolveFunc func(ctx context.Context, c *synth.Compiled, inputs []byte, opts ...solver.Option) (*synth.Solution, error)

// PeakRSS is the process's peak resident set size in bytes (VmHWM in
// /proc/self/status, Linux only).
func PeakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak RSS: VmHWM %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	return 0, errors.New("peak RSS: no VmHWM in /proc/self/status")
}
