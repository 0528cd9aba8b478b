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
				a, b, v := c.evalLinear(l, w), c.evalLinear(r, w), c.evalLinear(o, w)
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
				text := c.logValue(sys.DebugInfo[d], w)
				u.DebugInfo = &text
			}
			return &InputError{Msg: "inputs do not satisfy circuit " + c.Name, Err: c.unsatisfied(u)}
		}
	}
	return nil
}

// checkChunk is how many instructions Check evaluates between looks at its context.
const checkChunk = 1 << 16

// evalLinear is the value of le on w.
func (c *Compiled) evalLinear(le constraint.LinearExpression, w []fr.Element) fr.Element {
	var sum fr.Element
	for _, t := range le {
		if t.IsConstant() {
			sum.Add(&sum, &c.CS.Coefficients[t.CID])
			continue
		}
		v := &w[t.VID]
		switch t.CID {
		case constraint.CoeffIdZero:
		case constraint.CoeffIdOne:
			sum.Add(&sum, v)
		case constraint.CoeffIdMinusOne:
			sum.Sub(&sum, v)
		default:
			var m fr.Element
			m.Mul(&c.CS.Coefficients[t.CID], v)
			sum.Add(&sum, &m)
		}
	}
	return sum
}

// logValue is gnark's text of a constraint's debug information (its solver's
// logValue) with every wire of w known: the assertion's format filled with the values
// of its expressions, then the call stack, a function and "\tfile:line" per frame.
func (c *Compiled) logValue(log constraint.LogEntry, w []fr.Element) string {
	args := make([]any, 0, len(log.ToResolve)+1)
	for _, le := range log.ToResolve {
		v := c.evalLinear(le, w)
		args = append(args, v.String())
	}
	if len(log.Stack) > 0 {
		var sb strings.Builder
		for _, id := range log.Stack {
			loc := c.CS.SymbolTable.Locations[id]
			fn := c.CS.SymbolTable.Functions[loc.FunctionID]
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
