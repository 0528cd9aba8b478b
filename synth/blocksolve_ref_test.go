package synth

import (
	"slices"

	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// refInstrWires decodes instructions' wires through gnark's Decompress.
type refInstrWires struct {
	sys *cs.R1CS
	r1c constraint.R1C
	hm  constraint.HintMapping
}

// visit calls read for every wire instruction i reads (an R1C's unknown included,
// which the caller tells apart by its producer) and returns i's hint outputs, or
// ok false for a blueprint other than gnark's R1C and hint ones.
func (d *refInstrWires) visit(i int, read func(w uint32)) (outStart, outEnd uint32, isHint, ok bool) {
	pi := d.sys.Instructions[i]
	inst := pi.Unpack(&d.sys.System)
	switch bp := d.sys.Blueprints[pi.BlueprintID].(type) {
	case constraint.BlueprintR1C:
		bp.DecompressR1C(&d.r1c, inst)
		for _, le := range [...]constraint.LinearExpression{d.r1c.L, d.r1c.R, d.r1c.O} {
			for _, t := range le {
				if !t.IsConstant() {
					read(t.VID)
				}
			}
		}
		return 0, 0, false, true
	case constraint.BlueprintHint:
		bp.DecompressHint(&d.hm, inst)
		for _, le := range d.hm.Inputs {
			for _, t := range le {
				if !t.IsConstant() {
					read(t.VID)
				}
			}
		}
		return d.hm.OutputRange.Start, d.hm.OutputRange.End, true, true
	}
	return 0, 0, false, false
}

// planBlocksRef is planBlocks as first written: sequential, decoding each
// instruction once per pass (producers, counting dependents, filling them, each
// forward sweep). It is the reference the faster planBlocks must agree with.
func planBlocksRef(sys *cs.R1CS) *blockPlan {
	n := len(sys.Instructions)
	nbWires := len(sys.Public) + len(sys.Secret) + sys.NbInternalVariables
	d := &refInstrWires{sys: sys}

	// Which instruction solves each wire: gnark's solved set, simulated.
	producer := make([]int32, nbWires)
	inputs := len(sys.Public) + len(sys.Secret)
	for w := range producer {
		producer[w] = -1
		if w >= inputs {
			producer[w] = -2 // unsolved
		}
	}
	for i := range n {
		unknowns := 0
		outStart, outEnd, isHint, ok := d.visit(i, func(w uint32) {
			if producer[w] == -2 {
				producer[w] = int32(i)
				unknowns++
			} else if producer[w] == int32(i) {
				unknowns++ // the unknown twice: gnark refuses this too
			}
		})
		if !ok || unknowns > 1 || (isHint && unknowns > 0) {
			return nil
		}
		for w := outStart; w < outEnd; w++ {
			if producer[w] != -2 {
				return nil
			}
			producer[w] = int32(i)
		}
	}
	if slices.Contains(producer, -2) {
		return nil
	}
	// deps calls f for each instruction that i reads a wire of, i excluded.
	deps := func(i int, f func(j int32)) {
		last := int32(-1)
		d.visit(i, func(w uint32) {
			if j := producer[w]; j >= 0 && j != int32(i) && j != last {
				last = j
				f(j)
			}
		})
	}

	// Dependents of each instruction, for adding instructions from the last back.
	off := make([]int32, n+1)
	for i := range n {
		deps(i, func(j int32) { off[j+1]++ })
	}
	for i := range n {
		off[i+1] += off[i]
	}
	users := make([]int32, off[n])
	fill := slices.Clone(off[:n])
	for i := range n {
		deps(i, func(j int32) { users[fill[j]] = int32(i); fill[j]++ })
	}
	fill = nil

	uf := newUnionFind(n)
	p, best := n, n
	for i := n - 1; i >= 0; i-- {
		uf.add(i)
		for _, u := range users[off[i]:off[i+1]] {
			uf.union(int32(i), u)
		}
		if cost := i + uf.largest; cost <= best {
			p, best = i, cost
		}
	}
	users, off = nil, nil

	// forward adds [p, to) to a fresh union-find, calling f after each.
	forward := func(to int, f func(i int)) {
		uf.largest = 0 // add initialises each node
		for i := p; i < to; i++ {
			uf.add(i)
			deps(i, func(j int32) {
				if int(j) >= p {
					uf.union(int32(i), j)
				}
			})
			f(i)
		}
	}
	s, best := p, n-p
	forward(n, func(i int) {
		if cost := n - (i + 1) + uf.largest; cost <= best {
			s, best = i+1, cost
		}
	})
	var plan *blockPlan
	if s == p {
		plan = &blockPlan{prefix: p, suffix: s}
	} else {
		if s < n { // the blocks of [p, s): rebuild up to s
			forward(s, func(int) {})
		}
		plan = uf.plan(p, s)
	}

	// Where each R1C's unknown is: its term whose wire it produces, read through
	// gnark's DecompressR1C.
	plan.unknown = make([]r1cUnknown, n)
	for i := range n {
		plan.unknown[i] = unknownAny
		pi := sys.Instructions[i]
		bp, ok := sys.Blueprints[pi.BlueprintID].(*constraint.BlueprintGenericR1C)
		if !ok {
			continue
		}
		bp.DecompressR1C(&d.r1c, pi.Unpack(&sys.System))
		plan.unknown[i] = unknownNone
		for side, le := range [...]constraint.LinearExpression{d.r1c.L, d.r1c.R, d.r1c.O} {
			for j, t := range le {
				if !t.IsConstant() && producer[t.VID] == int32(i) && j < 63 {
					plan.unknown[i] = r1cUnknown((side+1)<<6 + j)
				} else if !t.IsConstant() && producer[t.VID] == int32(i) {
					plan.unknown[i] = unknownAny
				}
			}
		}
	}
	return plan
}
