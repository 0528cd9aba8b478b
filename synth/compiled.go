package synth

import (
	"errors"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// Compiled is a BLS12-381 R1CS ready to solve. It is immutable and safe to share
// between any number of concurrent Solve calls.
type Compiled struct {
	Name string
	CS   *cs.R1CS

	// Builtin is false for circuits imported from an externally compiled R1CS.
	Builtin bool

	est    MemEstimate
	held   int64
	schema *inputSchema

	plan *blockPlan // nil: SolveWitness uses gnark's solver (blocksolve.go)
}

// NbConstraints is the number of R1CS constraints (len of Solution.A, B, C).
func (c *Compiled) NbConstraints() int { return c.CS.GetNbConstraints() }

// NbWires is the length of Solution.W.
func (c *Compiled) NbWires() int {
	internal, secret, public := c.CS.GetNbVariables()
	return internal + secret + public
}

// NbPublic counts public wires including the constant one wire, as Solution.NbPublic.
func (c *Compiled) NbPublic() int { return len(c.CS.Public) }

// NbSecret counts secret input wires.
func (c *Compiled) NbSecret() int { return len(c.CS.Secret) }

// Circuit returns the gnark circuit definition of a built-in circuit, sized for name
// and without values: what frontend.Compile takes.
func Circuit(name string) (frontend.Circuit, error) {
	return lookupBuiltin(name)
}

// compileBuiltin compiles a built-in circuit with gnark's R1CS builder.
func compileBuiltin(name string) (*Compiled, error) {
	circuit, err := lookupBuiltin(name)
	if err != nil {
		return nil, err
	}
	return compileCircuit(name, circuit)
}

// sizedAhead is a built-in circuit that knows its compiled size ahead: gnark's
// builder appends every instruction to a few slices, and from empty their regrowth
// (copying gigabytes at 2^26, and faulting in each new copy) was a third of
// porep's compile. compileCapacity is the frontend.WithCapacity that holds them.
type sizedAhead interface {
	compileCapacity() int
}

// compileCircuit compiles circuit as the built-in name.
func compileCircuit(name string, circuit frontend.Circuit) (*Compiled, error) {
	var opts []frontend.CompileOption
	if s, ok := circuit.(sizedAhead); ok {
		opts = append(opts, frontend.WithCapacity(s.compileCapacity()))
	}
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, circuit, opts...)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", name, err)
	}
	sys, ok := ccs.(*cs.R1CS)
	if !ok {
		return nil, fmt.Errorf("compile %s: gnark returned %T, want a BLS12-381 R1CS", name, ccs)
	}
	return newCompiled(name, sys, true)
}

// newCompiled checks that sys is something our prover can handle and precomputes
// what Solve and the memory budget need.
func newCompiled(name string, sys *cs.R1CS, builtin bool) (*Compiled, error) {
	if sys.Type != constraint.SystemR1CS {
		return nil, fmt.Errorf("circuit %s: not an R1CS", name)
	}
	if sys.ScalarField != fr.Modulus().Text(16) {
		return nil, fmt.Errorf("circuit %s: scalar field %s is not BLS12-381's", name, sys.ScalarField)
	}
	if sys.CommitmentInfo != nil && len(sys.CommitmentInfo.CommitmentIndexes()) > 0 {
		return nil, fmt.Errorf("circuit %s: has %d BSB22 commitment(s), which the prover does not support",
			name, len(sys.CommitmentInfo.CommitmentIndexes()))
	}
	if sys.GkrInfo.Is() {
		return nil, fmt.Errorf("circuit %s: uses GKR, which the prover does not support", name)
	}
	if len(sys.Public) == 0 || sys.Public[0] != "1" {
		return nil, errors.New("circuit " + name + ": first public wire is not the constant one")
	}
	if missing := missingHints(sys); len(missing) > 0 {
		return nil, fmt.Errorf("circuit %s: needs solver hints not linked into this binary (docs/operating.md, Keys and versions, says how to add one): %v", name, missing)
	}
	c := &Compiled{Name: name, CS: sys, Builtin: builtin}
	c.schema = newInputSchema(sys.Public[1:], sys.Secret)
	c.est = estimate(c)
	c.held = heldBytes(c)
	return c, nil
}

// splitBlocks finds c's split into blocks for SolveWitness (blocksolve.go). It is
// done as the circuit is compiled or loaded rather than at its first solve, whose
// memory estimate the split's working memory (about 46 bytes per instruction at
// porep, docs/circuits.md) would exceed; a circuit without it solves with gnark's
// solver.
func (c *Compiled) splitBlocks() *Compiled {
	c.usePlan(c.findPlan())
	return c
}

// findPlan is c's block plan, nil when it has no useful one.
func (c *Compiled) findPlan() *blockPlan {
	if p := planBlocks(c.CS); p != nil && p.useful(len(c.CS.Instructions)) {
		return p
	}
	return nil
}

// usePlan makes c solve with the block solver on p (nil: with gnark's).
func (c *Compiled) usePlan(p *blockPlan) {
	if p == nil {
		return
	}
	c.plan = p
	c.est = estimate(c) // the block solver keeps no C
	c.held += allocSize(int64(cap(p.unknown)))
}

// splitBlocksKept is splitBlocks for a circuit whose constraint system was read from
// or cached in file: the plan kept beside that file when it is whole and of that
// system, else one found afresh and kept there for the next load.
func (c *Compiled) splitBlocksKept(file r1csFile) *Compiled {
	path, sum := file.path, file.sum
	n := len(c.CS.Instructions)
	if p, used, err := readPlanFile(planFile(path), sum, n); err == nil {
		if used {
			c.usePlan(p)
		}
		return c
	}
	p := c.findPlan()
	c.usePlan(p)
	// A plan that cannot be kept (a read-only cache) is found again next time.
	_ = writePlanFile(planFile(path), sum, n, p)
	return c
}

func missingHints(sys *cs.R1CS) []string {
	known := map[solver.HintID]bool{}
	for _, h := range solver.GetRegisteredHints() {
		known[solver.GetHintID(h)] = true
	}
	var missing []string
	for id, name := range sys.MHintsDependencies {
		if !known[id] {
			missing = append(missing, name)
		}
	}
	return missing
}
