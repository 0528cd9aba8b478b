package synth

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
)

// panickyDouble is a hint as a faulty one behaves: it doubles its input, and panics
// on 13 (as big.Int division by zero or an index out of range would on some input).
func panickyDouble(_ *big.Int, in, out []*big.Int) error {
	if in[0].Cmp(big.NewInt(13)) == 0 {
		var none []int
		_ = none[in[0].Int64()] // index out of range
	}
	out[0].Lsh(in[0], 1)
	return nil
}

func init() { solver.RegisterHint(panickyDouble) }

// hintBlocks computes each Y[i] = 2 X[i] through panickyDouble: independent blocks.
type hintBlocks struct {
	X [16]frontend.Variable
	Y [16]frontend.Variable `gnark:",public"`
}

func (c *hintBlocks) Define(api frontend.API) error {
	for i := range c.X {
		d, err := api.Compiler().NewHint(panickyDouble, 1, c.X[i])
		if err != nil {
			return err
		}
		api.AssertIsEqual(d[0], c.Y[i])
		api.AssertIsEqual(api.Mul(c.X[i], 2), d[0])
	}
	return nil
}

// A hint that panics on a submitter's inputs fails that solve with an error, on the
// block solver (its goroutines) and on gnark's (its own): it must not end the process
// and every other request in it.
func TestHintPanicFailsTheSolve(t *testing.T) {
	c, err := compileCircuit("hint-blocks", &hintBlocks{})
	if err != nil {
		t.Fatal(err)
	}
	if c.plan == nil {
		c.plan = planBlocks(c.CS)
	}
	if c.plan == nil || len(c.plan.tasks) < 2 {
		t.Fatalf("no split into blocks: %v", c.plan)
	}
	witness := func(bad int) []byte {
		var a hintBlocks
		for i := range a.X {
			x := 100 + i
			if i == bad {
				x = 13
			}
			a.X[i], a.Y[i] = x, 2*x
		}
		w, err := frontend.NewWitness(&a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		return mustMarshal(t, w)
	}
	good := witness(-1)
	for _, bad := range []int{0, 9, 15} {
		for name, solve := range map[string]func(context.Context, *Compiled, []byte, ...solver.Option) (*Solution, error){
			"blocks": Solve, "levels": SolveLevels,
		} {
			for _, tasks := range []int{1, 4} {
				_, err := solve(t.Context(), c, witness(bad), solver.WithNbTasks(tasks))
				if err == nil || !strings.HasSuffix(err.Error(), "hint github.com/cuzk/cuzk/synth.panickyDouble panicked") {
					t.Errorf("%s, %d goroutines, X[%d] = 13: %v, want the hint's panic as an error", name, tasks, bad, err)
				}
				var in *InputError
				if errors.As(err, &in) {
					t.Errorf("%s: a hint's fault is not the inputs' (InputError): %v", name, err)
				}
			}
		}
	}
	// The same circuit on good inputs still solves, through both solvers.
	for name, solve := range map[string]func(context.Context, *Compiled, []byte, ...solver.Option) (*Solution, error){
		"blocks": Solve, "levels": SolveLevels,
	} {
		sol, err := solve(t.Context(), c, good, solver.WithNbTasks(4))
		if err != nil {
			t.Fatalf("%s, good inputs: %v", name, err)
		}
		var want fr.Element
		want.SetUint64(2 * 103)
		found := false
		for i := range sol.W {
			if sol.W[i].Equal(&want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no wire holds 2·103", name)
		}
	}
}
