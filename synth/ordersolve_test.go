package synth

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/constraint/solver"
)

// orderSolve solves c on one goroutine in instruction order rather than level by
// level, with gnark's arithmetic (solveR1C, solveWithHint in gnark's
// constraint/bls12-381/solver.go): the experiment behind docs/circuits.md's "What
// would help next". Instruction order is a dependency order, as every wire is solved
// by the instruction that creates it; levels interleave the challenges round by
// round, this order solves one challenge after the other. For inputs that satisfy c
// only: unlike gnark it does not check a constraint whose wire it solves.
func orderSolve(c *Compiled, in []byte) (w, a, b, cc []fr.Element, err error) {
	wit, err := c.Witness(in)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	vec := wit.Vector().(fr.Vector)
	sys := c.CS
	values := make([]fr.Element, c.NbWires())
	solved := make([]bool, len(values))
	values[0].SetOne()
	copy(values[1:], vec)
	for i := range len(vec) + 1 {
		solved[i] = true
	}
	n := c.NbConstraints()
	a, b, cc = make([]fr.Element, n), make([]fr.Element, n), make([]fr.Element, n)
	hints := map[solver.HintID]solver.Hint{}
	for _, h := range solver.GetRegisteredHints() {
		hints[solver.GetHintID(h)] = h
	}
	coeffs := sys.Coefficients
	acc := func(t constraint.Term, r *fr.Element) {
		if t.IsConstant() {
			r.Add(r, &coeffs[t.CID])
			return
		}
		switch t.CID {
		case constraint.CoeffIdZero:
		case constraint.CoeffIdOne:
			r.Add(r, &values[t.VID])
		case constraint.CoeffIdTwo:
			var d fr.Element
			d.Double(&values[t.VID])
			r.Add(r, &d)
		case constraint.CoeffIdMinusOne:
			r.Sub(r, &values[t.VID])
		default:
			var m fr.Element
			m.Mul(&coeffs[t.CID], &values[t.VID])
			r.Add(r, &m)
		}
	}
	q := fr.Modulus()
	var r1c constraint.R1C
	var hm constraint.HintMapping
	for _, pi := range sys.Instructions {
		inst := pi.Unpack(&sys.System)
		switch bp := sys.Blueprints[pi.BlueprintID].(type) {
		case constraint.BlueprintR1C:
			bp.DecompressR1C(&r1c, inst)
			id := inst.ConstraintOffset
			var unknown constraint.Term
			loc := 0
			for side, le := range [...]constraint.LinearExpression{r1c.L, r1c.R, r1c.O} {
				v := [...]*fr.Element{&a[id], &b[id], &cc[id]}[side]
				for _, t := range le {
					if !t.IsConstant() && !solved[t.VID] {
						unknown, loc = t, side+1
						continue
					}
					acc(t, v)
				}
			}
			var x fr.Element
			switch loc {
			case 0:
				var check fr.Element
				if !check.Mul(&a[id], &b[id]).Equal(&cc[id]) {
					return nil, nil, nil, nil, fmt.Errorf("constraint %d not satisfied", id)
				}
				continue
			case 1:
				x.Div(&cc[id], &b[id]).Sub(&x, &a[id])
				a[id].Add(&a[id], &x)
			case 2:
				x.Div(&cc[id], &a[id]).Sub(&x, &b[id])
				b[id].Add(&b[id], &x)
			case 3:
				x.Mul(&a[id], &b[id]).Sub(&x, &cc[id])
				cc[id].Add(&cc[id], &x)
			}
			switch unknown.CID {
			case constraint.CoeffIdOne:
			case constraint.CoeffIdMinusOne:
				x.Neg(&x)
			default:
				x.Div(&x, &coeffs[unknown.CID])
			}
			values[unknown.VID], solved[unknown.VID] = x, true
		case constraint.BlueprintHint:
			bp.DecompressHint(&hm, inst)
			ins := make([]*big.Int, len(hm.Inputs))
			for i, le := range hm.Inputs {
				var v fr.Element
				for _, t := range le {
					acc(t, &v)
				}
				ins[i] = v.BigInt(new(big.Int))
			}
			outs := make([]*big.Int, hm.OutputRange.End-hm.OutputRange.Start)
			for i := range outs {
				outs[i] = new(big.Int)
			}
			if err := hints[hm.HintID](q, ins, outs); err != nil {
				return nil, nil, nil, nil, err
			}
			for i, o := range outs {
				id := hm.OutputRange.Start + uint32(i)
				values[id].SetBigInt(o)
				solved[id] = true
			}
		default:
			return nil, nil, nil, nil, errors.New("unsupported blueprint")
		}
	}
	return values, a, b, cc, nil
}

// TestOrderSolveMatchesGnark checks orderSolve against gnark's solver, entry by entry.
func TestOrderSolveMatchesGnark(t *testing.T) {
	c := mustCompile(t, "porep-k16")
	in := mustInputs(t, "porep-k16", 2)
	sol := mustSolve(t, c, in)
	w, a, b, cc, err := orderSolve(c, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [...][2][]fr.Element{{w, sol.W}, {a, sol.A}, {b, sol.B}, {cc, sol.C}} {
		for i := range p[0] {
			if !p[0][i].Equal(&p[1][i]) {
				t.Fatalf("entry %d: orderSolve %s, gnark %s", i, p[0][i].String(), p[1][i].String())
			}
		}
	}
}

// BenchmarkSolvePorepOrder is the A/B of the order of a solve on one goroutine: A
// gnark's solver (level by level), B orderSolve (instruction order).
//
//	go test ./synth/ -run '^$' -bench SolvePorepOrder -benchtime 8x
func BenchmarkSolvePorepOrder(b *testing.B) {
	for _, name := range []string{"porep-k20", "porep-k22"} {
		b.Run(name, func(b *testing.B) {
			c := mustCompile(b, name)
			in := mustInputs(b, name, 1)
			one := func(c *Compiled) error {
				_, err := Solve(context.Background(), c, in, solver.WithNbTasks(1))
				return err
			}
			ours := func(c *Compiled) error {
				_, _, _, _, err := orderSolve(c, in)
				return err
			}
			solveAB(b, in, [2]solveArm{{name: "levels", c: c, solve: one}, {name: "order", c: c, solve: ours}})
		})
	}
}
