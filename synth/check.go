package synth

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// Check evaluates every constraint of c on the wire values w (a Solution's W) and
// returns nil when all hold, else the error gnark's solver gives for the first that
// does not: an InputError around an UnsatisfiedError (IsBadInput). The block solver
// leaves the constraints that solve no wire to the proof's verification; Check is what
// tells, once a proof has failed it, whether the inputs were at fault. It runs on
// tasks goroutines and allocates nothing of w's size.
func (c *Compiled) Check(ctx context.Context, w []fr.Element, tasks int) error {
	if len(w) != c.NbWires() {
		return fmt.Errorf("check %s: %d wire values, the circuit has %d", c.Name, len(w), c.NbWires())
	}
	sys := c.CS
	n := len(sys.Instructions)
	tasks = max(1, min(tasks, n/checkChunk+1))
	ev := c.evaluator(w)
	type found struct {
		cid     uint32
		a, b, o fr.Element
		err     error
	}
	results := make([]*found, tasks)
	var wg sync.WaitGroup
	for t := range tasks {
		from, to := n*t/tasks, n*(t+1)/tasks
		wg.Go(func() {
			var r1c constraint.R1C
			for i := from; i < to; i++ {
				if (i-from)%checkChunk == 0 && ctx.Err() != nil {
					results[t] = &found{err: ctx.Err()}
					return
				}
				pi := &sys.Instructions[i]
				var l, r, o constraint.LinearExpression
				switch bp := sys.Blueprints[pi.BlueprintID].(type) {
				case *constraint.BlueprintGenericR1C:
					l, r, o = genericR1C(sys.CallData[pi.StartCallData:])
				case constraint.BlueprintR1C:
					bp.DecompressR1C(&r1c, pi.Unpack(&sys.System))
					l, r, o = r1c.L, r1c.R, r1c.O
				case constraint.BlueprintHint:
					continue // its outputs are wires of w; the constraints on them are checked
				default:
					results[t] = &found{err: fmt.Errorf("check %s: instruction %d has blueprint %T", c.Name, i, bp)}
					return
				}
				a, b, v := ev.eval(l), ev.eval(r), ev.eval(o)
				var ab fr.Element
				if !ab.Mul(&a, &b).Equal(&v) {
					results[t] = &found{cid: pi.ConstraintOffset, a: a, b: b, o: v}
					return
				}
			}
		})
	}
	wg.Wait()
	for _, f := range results { // in instruction order: the first failing constraint
		switch {
		case f == nil:
		case f.err != nil:
			return f.err
		default:
			u := &cs.UnsatisfiedConstraintError{CID: int(f.cid),
				Err: fmt.Errorf("%s ⋅ %s != %s", f.a.String(), f.b.String(), f.o.String())}
			if d, ok := sys.MDebug[int(f.cid)]; ok {
				text := ev.logValue(sys.DebugInfo[d])
				u.DebugInfo = &text
			}
			return &InputError{Msg: "inputs do not satisfy circuit " + c.Name, Err: c.unsatisfied(u)}
		}
	}
	return nil
}

// checkChunk is how many instructions Check evaluates between looks at its context.
const checkChunk = 1 << 16

// evaluator sums linear expressions over the wire values w with the block solver's
// arithmetic (sumSolved reads only, so its goroutines share one).
func (c *Compiled) evaluator(w []fr.Element) *blockSolve {
	kinds, words := coeffKinds(c.CS.Coefficients)
	return &blockSolve{sys: c.CS, kinds: kinds, words: words, values: w}
}

// eval is the value of le.
func (s *blockSolve) eval(le constraint.LinearExpression) fr.Element {
	var v fr.Element
	s.sumSolved(le, &v)
	return v
}

// logValue is gnark's text of a constraint's debug information (its solver's
// logValue) with every wire known: the assertion's format filled with the values
// of its expressions, then the call stack, a function and "\tfile:line" per frame.
func (s *blockSolve) logValue(log constraint.LogEntry) string {
	args := make([]any, 0, len(log.ToResolve)+1)
	for _, le := range log.ToResolve {
		v := s.eval(le)
		args = append(args, v.String())
	}
	if len(log.Stack) > 0 {
		var sb strings.Builder
		for _, id := range log.Stack {
			loc := s.sys.SymbolTable.Locations[id]
			fn := s.sys.SymbolTable.Functions[loc.FunctionID]
			sb.WriteString(fn.Name)
			sb.WriteString("\n\t")
			sb.WriteString(fn.Filename)
			sb.WriteByte(':')
			sb.WriteString(strconv.Itoa(int(loc.Line)))
			sb.WriteByte('\n')
		}
		args = append(args, sb.String())
	}
	return fmt.Sprintf(log.Format, args...)
}
