package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/cuzk/cuzk/prover"
)

// Arm is one configuration of an A/B benchmark.
type Arm struct {
	Name    string         // "A" or "B"
	Backend prover.Backend // nil means the CPU backend
	Threads int            // GOMAXPROCS during the arm's runs; 0 leaves it as it is
}

// MeasureAB proves the case runs times with each arm, interleaved in one process and
// alternating which arm goes first, so that drift on the machine (thermal state, other
// load, page cache) falls on both alike: the A/B comparison of two configurations that
// separate runs cannot give. Each arm has one untimed warm-up.
func MeasureAB(ctx context.Context, c Case, arms [2]Arm, runs int, log io.Writer) ([2]*Result, error) {
	var res [2]*Result
	if c.CCS == nil || c.Witness == nil {
		return res, errors.New("bench: the case needs a constraint system and a full witness")
	}
	if runs <= 0 {
		return res, fmt.Errorf("bench: %d runs", runs)
	}
	if log == nil {
		log = io.Discard
	}
	gpk, random, err := caseKey(c, log)
	if err != nil {
		return res, err
	}
	var sides [2]*ourSide
	for i, a := range arms {
		b := a.Backend
		if b == nil {
			b = prover.NewCPU()
		}
		if sides[i], err = newOurs(ctx, c, gpk, random, b); err != nil {
			return res, fmt.Errorf("arm %s: %w", a.Name, err)
		}
		defer sides[i].close()
		res[i] = sides[i].result()
		fmt.Fprintf(log, "arm %s: backend %s, threads %d, key load %s\n", a.Name, res[i].Backend, threadsOf(a), ms(res[i].KeyLoad))
	}
	runArm := func(i int) (Sample, error) {
		if t := arms[i].Threads; t > 0 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(t))
		}
		return sides[i].run(ctx)
	}
	for i := range sides {
		if _, err := runArm(i); err != nil {
			return res, fmt.Errorf("bench: arm %s warm-up: %w", arms[i].Name, err)
		}
	}
	for r := range runs {
		order := [2]int{0, 1}
		if r%2 == 1 {
			order = [2]int{1, 0}
		}
		for _, i := range order {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			s, err := runArm(i)
			if err != nil {
				return res, fmt.Errorf("bench: arm %s run %d: %w", arms[i].Name, r+1, err)
			}
			res[i].Ours = append(res[i].Ours, s)
			fmt.Fprintf(log, "run %d %s: %s (solve %s, prove %s: ntt %s, msm %s)\n", r+1, arms[i].Name,
				ms(s.Total()), ms(s.Solve), ms(s.Prove), ms(s.Phases.NTT), ms(s.Phases.MSM))
		}
	}
	return res, nil
}

func threadsOf(a Arm) int {
	if a.Threads > 0 {
		return a.Threads
	}
	return runtime.GOMAXPROCS(0)
}
