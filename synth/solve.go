package synth

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
)

// Solve parses inputs (see Compiled.Witness) and solves c on them. Bad inputs give an
// *InputError, and so do inputs that fail a constraint while a wire is solved. Where
// c has a block split, a constraint that solves no wire is not checked: the proof of
// a witness that fails one does not verify, and Check then names the constraint.
//
// Under WithTurn the block solver takes its cores from the turn's line (Cores).
//
// ctx is checked before each phase and between the block solver's blocks; gnark's
// solver itself cannot be interrupted, so a solve on it runs to completion (its memory
// stays in use until then). opts are gnark's solver options, e.g.
// solver.WithNbTasks(Tasks(cpus, solves)): the block solver takes its goroutine count
// and hints from them too.
func Solve(ctx context.Context, c *Compiled, inputs []byte, opts ...solver.Option) (*Solution, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := c.Witness(inputs)
	if err != nil {
		return nil, err
	}
	return SolveWitness(ctx, c, w, opts...)
}

// SolveLevels is Solve with gnark's own solver, level by level, whatever split c has:
// the reference that cuzk bench measures the block solver against.
func SolveLevels(ctx context.Context, c *Compiled, inputs []byte, opts ...solver.Option) (*Solution, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := c.Witness(inputs)
	if err != nil {
		return nil, err
	}
	vec, err := c.witnessVector(w)
	if err != nil {
		return nil, err
	}
	return gnarkSolve(c, w, vec, opts...)
}

// Tasks is how many goroutines each of solves concurrent solves should run on cpus
// cores: gnark's solver defaults to one per core for each solve, and solves that each
// run that many on shared cores spend their time switching instead of solving.
func Tasks(cpus, solves int) int {
	return max(1, cpus/max(1, solves))
}

// SolveWitness solves c on a gnark full witness, e.g. one from Compiled.Witness.
// Where c splits into independent blocks (see blocksolve.go) it solves them on
// solver.WithNbTasks goroutines (default one per core) with its own solver, whose
// result is gnark's for satisfying inputs and which leaves the constraints that solve
// no wire to Check; otherwise, and for the error of inputs that fail while a wire is
// solved, gnark's.
func SolveWitness(ctx context.Context, c *Compiled, w witness.Witness, opts ...solver.Option) (*Solution, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vec, err := c.witnessVector(w)
	if err != nil {
		return nil, err
	}
	if plan := c.plan; plan != nil {
		cfg, err := solver.NewConfig(guarded(opts)...)
		if err != nil {
			return nil, fmt.Errorf("solve %s: %w", c.Name, err)
		}
		sol, err := solveBlocks(ctx, c, plan, vec, cfg)
		if err == nil {
			return c.solution(sol, w, vec), nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		// Any other failure (an unsatisfied constraint, a failing hint): gnark's
		// solver below gives its exact error.
	}
	// gnark's solver takes no cores from the line: it cannot pause, so a solve ahead of
	// it in line (an urgent one) would wait for all of it.
	return gnarkSolve(c, w, vec, opts...)
}

// witnessVector is w's values, checked to be c's inputs.
func (c *Compiled) witnessVector(w witness.Witness) (fr.Vector, error) {
	vec, ok := w.Vector().(fr.Vector)
	if !ok {
		return nil, badInput("witness is %T, want a BLS12-381 witness", w.Vector())
	}
	if len(vec) != c.nbInputs() {
		return nil, badInput("witness has %d values, circuit %s takes %d", len(vec), c.Name, c.nbInputs())
	}
	return vec, nil
}

// gnarkSolve is SolveWitness with gnark's own solver.
func gnarkSolve(c *Compiled, w witness.Witness, vec fr.Vector, opts ...solver.Option) (*Solution, error) {
	res, err := c.CS.Solve(w, guarded(opts)...)
	if err != nil {
		if unsat, ok := asUnsatisfied(err); ok {
			// gnark's text prints values computed from the private inputs: the error
			// names the constraint only (UnsatisfiedError.Detail keeps the rest).
			return nil, &InputError{Msg: "inputs do not satisfy circuit " + c.Name, Err: c.unsatisfied(unsat)}
		}
		// Other solver errors (a failing hint, say) may quote values too.
		return nil, &solverError{circuit: c.Name, err: err}
	}
	sol, ok := res.(*cs.R1CSSolution)
	if !ok {
		return nil, fmt.Errorf("solve %s: gnark returned %T, want an R1CS solution", c.Name, res)
	}
	return c.solution(sol, w, vec), nil
}

func (c *Compiled) solution(sol *cs.R1CSSolution, w witness.Witness, vec fr.Vector) *Solution {
	return &Solution{
		Circuit:  c.Name,
		W:        sol.W,
		A:        sol.A,
		B:        sol.B,
		NbPublic: c.NbPublic(),
		Public:   publicWitness(vec[:c.NbPublic()-1]),
		Witness:  w,
	}
}

// solverError is a solver failure other than an unsatisfied constraint, its text
// scrubbed of anything that could be a value; Unwrap still gives gnark's error.
type solverError struct {
	circuit string
	err     error
}

func (e *solverError) Error() string { return "solve " + e.circuit + ": " + scrubValues(e.err.Error()) }
func (e *solverError) Unwrap() error { return e.err }

// publicWitness encodes public inputs exactly as gnark's witness.MarshalBinary does
// for a public witness: counts of public and secret values, then the vector.
func publicWitness(pub fr.Vector) []byte {
	buf := make([]byte, witnessHeaderSize+fr.Bytes*len(pub))
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(pub)))
	binary.BigEndian.PutUint32(buf[8:12], uint32(len(pub)))
	for i := range pub {
		fr.BigEndian.PutElement((*[fr.Bytes]byte)(buf[witnessHeaderSize+fr.Bytes*i:]), pub[i])
	}
	return buf
}
