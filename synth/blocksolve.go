package synth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
)

// Block solving: gnark's solver runs the system level by level, each level a barrier
// across its workers, and PoRep-shaped circuits have thousands of levels. Here the
// instructions are split once per compiled circuit (newCompiled) into a prefix that
// everything may depend on, independent blocks, and a suffix that may depend on
// everything; the prefix is solved first on one goroutine, the blocks in parallel,
// each in instruction order (a dependency order: every wire is solved by the
// instruction that creates it) with no barrier between them, and the suffix last.
// Which wire an instruction solves does not depend on values, so the split is a
// property of the compiled system.

// blockPlan is the split of one compiled system's instructions.
type blockPlan struct {
	prefix, suffix int            // [0, prefix) first, [suffix, n) last
	tasks          [][]instrRange // groups of blocks, each solved in instruction order; largest first
	blocks         int            // independent blocks in [prefix, suffix)
	largest        int            // instructions in the largest block
	unknown        []r1cUnknown   // by instruction
}

// r1cUnknown is which term of an R1C instruction holds the wire it solves, so that
// the solve need not look up, term by term, whether each wire is solved yet (a read
// of a byte per term across all the wires, and most of porep's R1Cs only check):
// unknownNone for a check, side<<6 | index for the index-th term of L (side 1), R (2)
// or O (3), unknownAny where the index does not fit or the instruction is not a
// generic R1C, which the solve looks up as gnark's solver does.
type r1cUnknown uint8

const (
	unknownNone     r1cUnknown = 0
	unknownAny      r1cUnknown = 0xFF
	unknownMaxIndex            = 62 // side 3, index 63 would be unknownAny
)

type instrRange struct{ start, end int32 }

// minTaskShare groups blocks smaller than 1/minTaskShare of the middle into tasks of
// about that size: circuits of many tiny independent pieces would otherwise pay a
// scheduling step per constraint.
const minTaskShare = 1024

// useful: the split is used only if the prefix, the largest block and the suffix
// together (the part that cannot be spread across cores) are at most two thirds of
// all instructions; otherwise gnark's level-parallel solver may do better.
func (p *blockPlan) useful(n int) bool {
	return len(p.tasks) > 1 && 3*(p.prefix+p.largest+n-p.suffix) <= 2*n
}

// String describes the split, for logs and benchmarks.
func (p *blockPlan) String() string {
	return fmt.Sprintf("prefix %d, %d blocks in %d tasks (largest %d), suffix from %d",
		p.prefix, p.blocks, len(p.tasks), p.largest, p.suffix)
}

// SolvesInBlocks says whether SolveWitness solves c with the block solver, whose one
// solve uses many cores well (gnark's waits at a barrier per level).
func (c *Compiled) SolvesInBlocks() bool { return c.plan != nil }

// BlockSplit describes how SolveWitness solves c: its split into blocks, or that it
// uses gnark's solver.
func (c *Compiled) BlockSplit() string {
	if c.plan != nil {
		return "blocks: " + c.plan.String()
	}
	return "gnark's solver (no useful split into blocks)"
}

// instrWires decodes instructions' wires: what each reads and what it solves.
type instrWires struct {
	sys   *cs.R1CS
	r1c   constraint.R1C
	hm    constraint.HintMapping
	reads []uint32
}

// decode returns the wires instruction i reads, in order, constants left out (an
// R1C's unknown included, which the caller tells apart by its producer; the slice is
// reused by the next call), and i's hint outputs, or ok false for a blueprint other
// than gnark's R1C and hint ones. gnark's generic R1C and hint blueprints, all that its
// R1CS builder emits, are read straight from the calldata (layouts of
// constraint/blueprint_r1cs.go and blueprint_hint.go, gnark v0.14.0) rather than
// through Decompress, which copies every term.
func (d *instrWires) decode(i int) (reads []uint32, outStart, outEnd uint32, isHint, ok bool) {
	pi := d.sys.Instructions[i]
	cd := d.sys.CallData[pi.StartCallData:]
	reads = d.reads[:0]
	switch bp := d.sys.Blueprints[pi.BlueprintID].(type) {
	case *constraint.BlueprintGenericR1C:
		// size, len(L), len(R), len(O), then (coefficient, wire) pairs of L, R, O
		reads = appendWires(reads, cd[4:4+2*int(cd[1]+cd[2]+cd[3])])
		ok = true
	case *constraint.BlueprintGenericHint:
		// size, hint ID, len(inputs), each input's length and (coefficient, wire)
		// pairs, then the output range
		k := 3
		for range cd[2] {
			end := k + 1 + 2*int(cd[k])
			reads = appendWires(reads, cd[k+1:end])
			k = end
		}
		outStart, outEnd, isHint, ok = cd[k], cd[k+1], true, true
	case constraint.BlueprintR1C:
		bp.DecompressR1C(&d.r1c, pi.Unpack(&d.sys.System))
		for _, le := range [...]constraint.LinearExpression{d.r1c.L, d.r1c.R, d.r1c.O} {
			reads = appendTerms(reads, le)
		}
		ok = true
	case constraint.BlueprintHint:
		bp.DecompressHint(&d.hm, pi.Unpack(&d.sys.System))
		for _, le := range d.hm.Inputs {
			reads = appendTerms(reads, le)
		}
		outStart, outEnd, isHint, ok = d.hm.OutputRange.Start, d.hm.OutputRange.End, true, true
	}
	d.reads = reads
	return reads, outStart, outEnd, isHint, ok
}

// appendWires appends the wires of (coefficient, wire) pairs, constants left out.
func appendWires(reads, pairs []uint32) []uint32 {
	for k := 1; k < len(pairs); k += 2 {
		if pairs[k] != math.MaxUint32 { // constraint.Term.IsConstant
			reads = append(reads, pairs[k])
		}
	}
	return reads
}

// appendTerms appends le's wires, constants left out.
func appendTerms(reads []uint32, le constraint.LinearExpression) []uint32 {
	for _, t := range le {
		if !t.IsConstant() {
			reads = append(reads, t.VID)
		}
	}
	return reads
}

// planBlocks finds sys's split, or nil where the solver below cannot solve sys the
// way gnark does (another blueprint, an R1C with two unknowns, a wire left unsolved).
//
// The prefix end p minimises p + (largest connected component of the instructions
// from p on, counting dependencies among them only), found by adding instructions
// from the last back in a union-find; the suffix start s likewise minimises
// (n - s) + (largest component of [p, s)), adding instructions forwards.
//
// Each instruction is decoded twice, in parallel over ranges of instructions: to find
// which instruction solves each wire, then to check it and list the instructions it
// depends on. The sweeps read the lists.
func planBlocks(sys *cs.R1CS) *blockPlan { return planBlocksIn(sys, planChunk) }

// planBlocksIn is planBlocks handing goroutines chunk instructions at a time.
func planBlocksIn(sys *cs.R1CS, chunk int) *blockPlan {
	n := len(sys.Instructions)
	producer := producers(sys, chunk)
	if producer == nil {
		return nil
	}
	off, deps := dependencies(sys, producer, chunk)
	if deps == nil {
		return nil
	}
	unknown := r1cUnknowns(sys, producer, chunk)
	producer = nil

	// Dependents of each instruction, for adding instructions from the last back.
	uoff, users := transpose(off, deps)
	uf := newUnionFind(n)
	p, best := n, n
	for i := n - 1; i >= 0; i-- {
		uf.add(i)
		for _, u := range users[uoff[i]:uoff[i+1]] {
			uf.union(int32(i), u)
		}
		if cost := i + uf.largest; cost <= best {
			p, best = i, cost
		}
	}
	users, uoff = nil, nil

	// forward adds [p, to) to a fresh union-find, calling f after each.
	forward := func(to int, f func(i int)) {
		uf.largest = 0 // add initialises each node
		for i := p; i < to; i++ {
			uf.add(i)
			for _, j := range deps[off[i]:off[i+1]] {
				if int(j) >= p {
					uf.union(int32(i), j)
				}
			}
			f(i)
		}
	}
	s, best := p, n-p
	forward(n, func(i int) {
		if cost := n - (i + 1) + uf.largest; cost <= best {
			s, best = i+1, cost
		}
	})
	if s == p {
		return &blockPlan{prefix: p, suffix: s, unknown: unknown}
	}
	if s < n { // the blocks of [p, s): rebuild up to s
		forward(s, func(int) {})
	}
	deps, off = nil, nil
	plan := uf.plan(p, s)
	plan.unknown = unknown
	return plan
}

// r1cUnknowns finds each instruction's r1cUnknown: the term whose wire the
// instruction produces (producers), over ranges of instructions in parallel. sys has
// passed dependencies' checks, so an R1C has at most one such term.
func r1cUnknowns(sys *cs.R1CS, producer []int32, chunk int) []r1cUnknown {
	unknown := make([]r1cUnknown, len(sys.Instructions))
	inParallel(len(sys.Instructions), chunk, func(from, to int) {
		for i := from; i < to; i++ {
			pi := sys.Instructions[i]
			unknown[i] = unknownAny
			if _, ok := sys.Blueprints[pi.BlueprintID].(*constraint.BlueprintGenericR1C); !ok {
				continue
			}
			unknown[i] = unknownNone
			l, r, o := genericR1C(sys.CallData[pi.StartCallData:])
			for side, le := range [...]constraint.LinearExpression{l, r, o} {
				for j, t := range le {
					if t.IsConstant() || producer[t.VID] != int32(i) {
						continue
					}
					unknown[i] = unknownAny
					if j <= unknownMaxIndex {
						unknown[i] = r1cUnknown(side+1)<<6 | r1cUnknown(j)
					}
				}
			}
		}
	})
	return unknown
}

// plan is the split with prefix p and suffix s, uf holding the components of [p, s):
// the blocks, as tasks in order of their first instruction, small ones grouped.
func (uf *unionFind) plan(p, s int) *blockPlan {
	n := len(uf.parent)
	plan := &blockPlan{prefix: p, suffix: s, largest: uf.largest}
	minTask := int32(max(1, (s-p)/minTaskShare))
	taskOf := make([]int32, n) // by block root
	for i := range taskOf {
		taskOf[i] = -1
	}
	var sizes []int32
	for i := p; i < s; i++ {
		r := uf.find(int32(i))
		if taskOf[r] >= 0 {
			continue
		}
		plan.blocks++
		if t := len(sizes) - 1; t >= 0 && sizes[t] < minTask {
			taskOf[r], sizes[t] = int32(t), sizes[t]+uf.size[r]
		} else {
			taskOf[r] = int32(len(sizes))
			sizes = append(sizes, uf.size[r])
		}
	}
	tasks := make([][]instrRange, len(sizes))
	for i := p; i < s; i++ {
		rs := &tasks[taskOf[uf.find(int32(i))]]
		if k := len(*rs) - 1; k >= 0 && (*rs)[k].end == int32(i) {
			(*rs)[k].end++
		} else {
			*rs = append(*rs, instrRange{int32(i), int32(i + 1)})
		}
	}
	// Largest first, so the last tasks to start are the short ones.
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(sizes[b] - sizes[a]) })
	for _, t := range order {
		plan.tasks = append(plan.tasks, tasks[t])
	}
	return plan
}

// producers finds which instruction solves each wire, as gnark's solver would: where
// gnark's solver accepts the system, a wire that is not an input is solved by the
// first instruction that reads it (an R1C's unknown) or outputs it (a hint), so that
// is each wire's smallest such instruction, found over ranges of instructions in
// parallel. Inputs get -1. It is nil where gnark's solver would refuse sys (checked
// by dependencies) or the solver here cannot run it.
func producers(sys *cs.R1CS, chunk int) []int32 {
	inputs := len(sys.Public) + len(sys.Secret)
	producer := make([]int32, inputs+sys.NbInternalVariables)
	for w := range producer {
		producer[w] = -1
		if w >= inputs {
			producer[w] = math.MaxInt32 // none yet
		}
	}
	var failed atomic.Bool
	first := func(w uint32, i int32) {
		for p := &producer[w]; ; {
			old := atomic.LoadInt32(p)
			if old <= i || atomic.CompareAndSwapInt32(p, old, i) {
				return
			}
		}
	}
	inParallel(len(sys.Instructions), chunk, func(from, to int) {
		d := &instrWires{sys: sys}
		for i := from; i < to && !failed.Load(); i++ {
			reads, outStart, outEnd, _, ok := d.decode(i)
			if !ok {
				failed.Store(true)
				return
			}
			for _, w := range reads {
				first(w, int32(i)) // an input keeps its -1
			}
			for w := outStart; w < outEnd; w++ {
				first(w, int32(i)) // one solved before, an input included, fails dependencies' check
			}
		}
	})
	if failed.Load() || slices.Contains(producer, math.MaxInt32) {
		return nil // another blueprint, or a wire nothing solves
	}
	return producer
}

// dependencies checks each instruction as gnark's solver would (an R1C solves at
// most one wire, a hint only its outputs) and lists the instructions it reads a wire
// of, i and inputs left out, in order, repeats dropped (depsWindow):
// deps[off[i]:off[i+1]] for instruction i. Both are nil where a check fails. Ranges
// of instructions are checked and their lists counted in parallel, then listed in
// parallel into their place: decoding again costs less than holding the lists twice.
func dependencies(sys *cs.R1CS, producer []int32, chunk int) (off, deps []int32) {
	n := len(sys.Instructions)
	off = make([]int32, n+1)
	var failed atomic.Bool
	inParallel(n, chunk, func(from, to int) {
		d := &instrWires{sys: sys}
		var list []int32
		for i := from; i < to; i++ {
			reads, outStart, outEnd, isHint, _ := d.decode(i)
			var unknowns int
			list, unknowns = appendDeps(list[:0], i, reads, producer)
			ownOutputs := true // not solved by an instruction before
			for w := outStart; w < outEnd; w++ {
				ownOutputs = ownOutputs && producer[w] == int32(i)
			}
			if unknowns > 1 || (isHint && unknowns > 0) || !ownOutputs {
				failed.Store(true)
				return
			}
			off[i+1] = int32(len(list))
		}
	})
	if failed.Load() {
		return nil, nil
	}
	for i := range n {
		off[i+1] += off[i]
	}
	deps = make([]int32, off[n])
	inParallel(n, chunk, func(from, to int) {
		d := &instrWires{sys: sys}
		for i := from; i < to; i++ {
			reads, _, _, _, _ := d.decode(i)
			appendDeps(deps[off[i]:off[i]:off[i+1]], i, reads, producer)
		}
	})
	return off, deps
}

// appendDeps appends to list the instructions that instruction i (reading reads)
// depends on, as dependencies lists them, and counts i's reads of wires it solves
// itself: an R1C's unknown, each read of it (gnark refuses one read twice).
func appendDeps(list []int32, i int, reads []uint32, producer []int32) (_ []int32, unknowns int) {
	start := len(list)
	for _, w := range reads {
		switch j := producer[w]; {
		case j == int32(i):
			unknowns++
		case j >= 0 && !kept(list, start, j):
			list = append(list, j)
		}
	}
	return list, unknowns
}

// depsWindow: an instruction's dependency is not listed again if it is among the last
// depsWindow listed, which bounds the cost of an instruction that reads many wires and
// still drops most repeats (porep-k22: 13.5M dependencies listed, 12.0M distinct,
// 21.3M with only consecutive repeats dropped). Repeats cost only memory and unions;
// the split is the same.
const depsWindow = 8

// kept reports whether j is among the last depsWindow of deps[start:].
func kept(deps []int32, start int, j int32) bool {
	for _, k := range deps[max(start, len(deps)-depsWindow):] {
		if k == j {
			return true
		}
	}
	return false
}

// transpose reverses the lists deps[off[i]:off[i+1]]: users[uoff[j]:uoff[j+1]] are
// the instructions whose lists hold j, in order. Each goroutine takes the users of a
// range of instructions j, scanning every list: the scattered writes are what cost.
func transpose(off, deps []int32) (uoff, users []int32) {
	n := len(off) - 1
	uoff = make([]int32, n+1)
	users = make([]int32, len(deps))
	part := max(1, (n+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0))
	inParallel(n, part, func(from, to int) {
		for _, j := range deps {
			if int(j) >= from && int(j) < to {
				uoff[j+1]++
			}
		}
	})
	for i := range n {
		uoff[i+1] += uoff[i]
	}
	inParallel(n, part, func(from, to int) {
		for i := range n {
			for _, j := range deps[off[i]:off[i+1]] {
				if int(j) >= from && int(j) < to {
					users[uoff[j]] = int32(i)
					uoff[j]++
				}
			}
		}
	})
	copy(uoff[1:], uoff[:n]) // uoff[j] had moved on to j's end, j+1's start
	uoff[0] = 0
	return uoff, users
}

// planChunk is how many instructions planBlocks hands a goroutine at a time: enough
// to make taking one negligible, few enough to even out the goroutines' shares.
const planChunk = 1 << 14

// inParallel calls f on consecutive ranges of [0, n), chunk long, on up to
// GOMAXPROCS goroutines.
func inParallel(n, chunk int, f func(from, to int)) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk) {
		wg.Go(func() {
			for {
				from := int(next.Add(int64(chunk)) - int64(chunk))
				if from >= n {
					return
				}
				f(from, min(from+chunk, n))
			}
		})
	}
	wg.Wait()
}

// unionFind over instructions, with component sizes and the largest one.
type unionFind struct {
	parent, size []int32
	largest      int
}

func newUnionFind(n int) *unionFind {
	return &unionFind{parent: make([]int32, n), size: make([]int32, n)}
}

func (u *unionFind) add(i int) {
	u.parent[i], u.size[i] = int32(i), 1
	u.largest = max(u.largest, 1)
}

func (u *unionFind) find(i int32) int32 {
	for u.parent[i] != i {
		u.parent[i] = u.parent[u.parent[i]]
		i = u.parent[i]
	}
	return i
}

func (u *unionFind) union(a, b int32) {
	a, b = u.find(a), u.find(b)
	if a == b {
		return
	}
	if u.size[a] < u.size[b] {
		a, b = b, a
	}
	u.parent[b] = a
	u.size[a] += u.size[b]
	u.largest = max(u.largest, int(u.size[a]))
}

// errBlockSolve is any failure of solveBlocks other than ctx's: SolveWitness then
// runs gnark's solver for its exact error.
var errBlockSolve = errors.New("block solve failed")

// blockSolve is the state of one solveBlocks call, shared by its goroutines; each
// goroutine writes only the wires and constraints of its own instructions.
type blockSolve struct {
	sys    *cs.R1CS
	kinds  []coeffKind // by coefficient ID
	words  []uint64    // by coefficient ID, the kindWord ones' values
	values []fr.Element
	solved []bool
	a, b   fr.Vector

	unknown []r1cUnknown // the plan's, by instruction
	hints   map[solver.HintID]solver.Hint
	fast    map[solver.HintID]fieldHint // of hints, those with a field form
	q       *big.Int
}

// fieldHint is a hint that reads and writes field elements: the block solver calls it
// instead of the hint's big.Int form (which gnark's solver keeps calling), without
// converting each input and output.
type fieldHint func(in, out []fr.Element) error

// fieldHints are the field forms of cuzk's own hints, by the ID of their big.Int form.
func fieldHints() map[solver.HintID]fieldHint {
	return map[solver.HintID]fieldHint{solver.GetHintID(porepRoundHint): porepRoundFieldHint}
}

// coeffKind says how accumulate applies a coefficient other than 0, ±1 and 2 (which
// gnark's IDs already name): by a product; for the ones porep's bit checks use on
// about one term in seven, by a halving or a doubling, each about as cheap as an
// addition where the product costs about ten; for integers below 2^62 (Poseidon2's
// powers of 3), by mulWord, about 0.6 of a product.
type coeffKind uint8

const (
	kindMul     coeffKind = iota
	kindHalf              // 1/2
	kindNegHalf           // −1/2
	kindNegTwo            // −2
	kindWord              // below 2^62: multiplied as a word (mulWord)
)

// coeffKinds classifies a system's coefficients for accumulate, and gives the
// kindWord ones' values by coefficient ID.
func coeffKinds(coeffs []fr.Element) ([]coeffKind, []uint64) {
	var half, negHalf, negTwo fr.Element
	half.SetUint64(2)
	half.Inverse(&half)
	negHalf.Neg(&half)
	negTwo.SetInt64(-2)
	k, words := make([]coeffKind, len(coeffs)), make([]uint64, len(coeffs))
	for i := range coeffs {
		switch v := coeffs[i].Bits(); {
		case coeffs[i].Equal(&half):
			k[i] = kindHalf
		case coeffs[i].Equal(&negHalf):
			k[i] = kindNegHalf
		case coeffs[i].Equal(&negTwo):
			k[i] = kindNegTwo
		case v[1] == 0 && v[2] == 0 && v[3] == 0 && v[0] <= maxWordCoeff:
			k[i], words[i] = kindWord, v[0]
		}
	}
	return k, words
}

// solveBlocks solves c on witness vec (public inputs after the one wire, then
// secret) with plan over cfg.NbTasks goroutines, producing exactly gnark's W, A and B
// (C, which gnark's solver also returns, is A∘B and left nil), and checking the
// constraints that solve a wire as gnark's solver does (the others: Compiled.Check).
func solveBlocks(ctx context.Context, c *Compiled, plan *blockPlan, vec fr.Vector, cfg solver.Config) (*cs.R1CSSolution, error) {
	sys := c.CS
	nbWires, nbCons := c.NbWires(), c.NbConstraints()
	if len(vec) != len(sys.Public)-1+len(sys.Secret) {
		return nil, errBlockSolve
	}
	values, a, b := solutionVectors(nbWires, nbCons)
	kinds, words := coeffKinds(sys.Coefficients)
	s := &blockSolve{
		sys:    sys,
		kinds:  kinds,
		words:  words,
		values: values,
		solved: make([]bool, nbWires),
		a:      a,
		b:      b,

		unknown: plan.unknown,
		hints:   cfg.HintFunctions,
		fast:    fieldHints(),
		q:       fr.Modulus(),
	}
	s.values[0].SetOne()
	copy(s.values[1:], vec)
	for i := range len(vec) + 1 {
		s.solved[i] = true
	}
	solvedWires := int64(len(vec) + 1)

	n := len(sys.Instructions)
	var main blockWorker
	if err := s.run(&main, 0, plan.prefix); err != nil {
		return nil, err
	}
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	// In a line of solves (WithTurn) each goroutine holds a core while it solves and
	// passes it on between tasks to a solve ahead of its own; the line bounds how many
	// run, so a solve starts one goroutine per core of the line.
	turn := turnFrom(ctx)
	goroutines := cfg.NbTasks
	if turn != nil {
		goroutines = turn.c.Size()
	}
	// work solves tasks until none is left; in a line, with a core held but while
	// yield waits for another (after an error in that wait it holds none).
	work := func(w *blockWorker) {
		holding := false
		if turn != nil {
			if turn.acquire(ctx) != nil {
				failed.Store(true)
				return
			}
			holding = true
			defer func() {
				if holding {
					turn.release()
				}
			}()
		}
		for !failed.Load() {
			if holding && turn.yield(ctx) != nil {
				holding = false
				failed.Store(true)
				return
			}
			t := int(next.Add(1) - 1)
			if t >= len(plan.tasks) {
				return
			}
			if ctx.Err() != nil {
				failed.Store(true)
				return
			}
			for _, r := range plan.tasks[t] {
				if s.run(w, int(r.start), int(r.end)) != nil {
					failed.Store(true)
					return
				}
			}
		}
	}
	workers := make([]blockWorker, max(1, min(goroutines, len(plan.tasks)))-1)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(&workers[i])
		}()
	}
	work(&main)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if failed.Load() {
		return nil, errBlockSolve
	}
	if err := s.run(&main, plan.suffix, n); err != nil {
		return nil, err
	}
	solvedWires += main.solved
	for _, w := range workers {
		solvedWires += w.solved
	}
	if solvedWires != int64(nbWires) { // gnark's "didn't assign a value to all wires"
		return nil, errBlockSolve
	}
	return &cs.R1CSSolution{W: s.values, A: s.a, B: s.b}, nil
}

// solutionVectors allocates a solve's wire values and its A and B, A and B with
// capacity for the FFT domain, as gnark's (a prover may extend them in place). Each
// is allocated on a goroutine of its own: memory the heap reuses is zeroed by the
// allocating goroutine, and at Filecoin sizes (A and B of 2 GiB each) that is most
// of a second on one core (BenchmarkSolutionVectors).
func solutionVectors(nbWires, nbCons int) (values []fr.Element, a, b fr.Vector) {
	domain := ecc.NextPowerOfTwo(uint64(nbCons))
	var wg sync.WaitGroup
	wg.Go(func() { a = make(fr.Vector, nbCons, domain) })
	wg.Go(func() { b = make(fr.Vector, nbCons, domain) })
	values = make([]fr.Element, nbWires)
	wg.Wait()
	return values, a, b
}

// blockWorker is one goroutine's scratch space, reused across its instructions.
type blockWorker struct {
	r1c         constraint.R1C
	hm          constraint.HintMapping
	ins, outs   []*big.Int   // a hint's in its big.Int form
	fins, fouts []fr.Element // a hint's inputs and outputs
	q           *big.Int
	solved      int64

	_ [128]byte // workers sit side by side in a slice: keep their hot fields apart
}

// accumulateWide adds t's value to acc: accumulate's terms, each added unreduced.
// Both stay: on a side shorter than wideTerms accumulate's reduced additions cost less
// than one reduction at the end (sumSolved).
func (s *blockSolve) accumulateWide(t constraint.Term, acc *wide) {
	if t.IsConstant() {
		acc.add(&s.sys.Coefficients[t.CID])
		return
	}
	v := &s.values[t.VID]
	switch t.CID {
	case constraint.CoeffIdZero:
	case constraint.CoeffIdOne:
		acc.add(v)
	case constraint.CoeffIdTwo:
		acc.add(v)
		acc.add(v)
	case constraint.CoeffIdMinusOne:
		acc.sub(v)
	default:
		var m fr.Element
		switch s.kinds[t.CID] {
		case kindWord:
			acc.addWord(v, s.words[t.CID])
		case kindHalf:
			m = *v
			m.Halve()
			acc.add(&m)
		case kindNegHalf:
			m = *v
			m.Halve()
			acc.sub(&m)
		case kindNegTwo:
			acc.sub(v)
			acc.sub(v)
		default:
			m.Mul(&s.sys.Coefficients[t.CID], v)
			acc.add(&m)
		}
	}
}

// accumulate adds t's value to r, as gnark's accumulateInto.
func (s *blockSolve) accumulate(t constraint.Term, r *fr.Element) {
	if t.IsConstant() {
		r.Add(r, &s.sys.Coefficients[t.CID])
		return
	}
	switch t.CID {
	case constraint.CoeffIdZero:
	case constraint.CoeffIdOne:
		r.Add(r, &s.values[t.VID])
	case constraint.CoeffIdTwo:
		var d fr.Element
		d.Double(&s.values[t.VID])
		r.Add(r, &d)
	case constraint.CoeffIdMinusOne:
		r.Sub(r, &s.values[t.VID])
	default:
		var m fr.Element
		switch s.kinds[t.CID] {
		case kindHalf:
			m = s.values[t.VID]
			m.Halve()
			r.Add(r, &m)
		case kindNegHalf:
			m = s.values[t.VID]
			m.Halve()
			r.Sub(r, &m)
		case kindNegTwo:
			m.Double(&s.values[t.VID])
			r.Sub(r, &m)
		case kindWord:
			mulWord(&m, &s.values[t.VID], s.words[t.CID])
			r.Add(r, &m)
		default:
			m.Mul(&s.sys.Coefficients[t.CID], &s.values[t.VID])
			r.Add(r, &m)
		}
	}
}

// run solves instructions [from, to) in order on w.
func (s *blockSolve) run(w *blockWorker, from, to int) error {
	sys := s.sys
	for i := from; i < to; i++ {
		pi := &sys.Instructions[i]
		var err error
		switch bp := sys.Blueprints[pi.BlueprintID].(type) {
		case *constraint.BlueprintGenericR1C:
			// Its calldata gives its own lengths (genericR1C): no Unpack, whose
			// CalldataSize is a call through the blueprint's interface.
			l, r, o := genericR1C(sys.CallData[pi.StartCallData:])
			err = s.solveR1C(w, pi.ConstraintOffset, l, r, o, s.unknown[i])
		case constraint.BlueprintR1C:
			bp.DecompressR1C(&w.r1c, pi.Unpack(&sys.System))
			err = s.solveR1C(w, pi.ConstraintOffset, w.r1c.L, w.r1c.R, w.r1c.O, unknownAny)
		case constraint.BlueprintHint:
			bp.DecompressHint(&w.hm, pi.Unpack(&sys.System))
			err = s.solveHint(w)
		default:
			err = errBlockSolve
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// genericR1C is the L, R and O of a BlueprintGenericR1C instruction as views of its
// calldata, without DecompressR1C's copy (about a tenth of a solve): CompressR1C
// writes 4 header words (size, len L, len R, len O) and then each term as its
// coefficient ID and wire ID, which is a Term's layout (TestGenericR1CViews).
func genericR1C(cd []uint32) (l, r, o constraint.LinearExpression) {
	// A Term is two uint32s, its coefficient ID first: else this does not compile.
	var _ = [1]struct{}{}[unsafe.Sizeof(constraint.Term{})-8+unsafe.Offsetof(constraint.Term{}.VID)-4]
	nl, nr, no := int(cd[1]), int(cd[2]), int(cd[3])
	terms := cd[4 : 4+2*(nl+nr+no)]
	if len(terms) == 0 {
		return nil, nil, nil
	}
	all := unsafe.Slice((*constraint.Term)(unsafe.Pointer(&terms[0])), nl+nr+no)
	return all[:nl:nl], all[nl : nl+nr : nl+nr], all[nl+nr:]
}

// solveR1C is gnark's solveR1C (constraint/bls12-381/solver.go): solve the one
// unknown wire, if any, with the same arithmetic, so the same A and B (and a·b = c
// for every constraint of a satisfying witness, which is why C is not kept). u says
// where the unknown is. An R1C that the plan knows to solve nothing is not checked
// (95% of porep's; the check was a tenth of its solve); one whose unknown is looked
// up is checked as gnark's.
func (s *blockSolve) solveR1C(w *blockWorker, id uint32, l, r, o constraint.LinearExpression, u r1cUnknown) error {
	var a, b, c fr.Element
	var unknown constraint.Term
	if u == unknownAny {
		loc := 0
		if !s.sum(l, &a, 1, &unknown, &loc) || !s.sum(r, &b, 2, &unknown, &loc) || !s.sum(o, &c, 3, &unknown, &loc) {
			return errBlockSolve
		}
		return s.settleR1C(w, id, &a, &b, &c, loc, unknown)
	}
	// The unknown's side is summed before its term, then after it with the others.
	loc, j := int(u>>6), int(u&63)
	switch loc {
	case 1:
		unknown = l[j]
		s.sumSolved(l[:j], &a)
		l = l[j+1:]
	case 2:
		unknown = r[j]
		s.sumSolved(r[:j], &b)
		r = r[j+1:]
	case 3:
		unknown = o[j]
		s.sumSolved(o[:j], &c)
		o = o[j+1:]
	}
	s.sumSolved(l, &a)
	s.sumSolved(r, &b)
	if loc == 0 {
		// Nothing to solve: only a·b = c to check, which the proof's verification does
		// (a proof of a witness that fails it does not verify) and Compiled.Check
		// then pins to its constraint. C is not kept, so O is not summed.
		s.a[id], s.b[id] = a, b
		return nil
	}
	s.sumSolved(o, &c)
	return s.settleR1C(w, id, &a, &b, &c, loc, unknown)
}

// settleR1C solves the unknown in side loc (none: 0) from the sums of the other terms,
// or checks a·b = c, and stores A and B.
func (s *blockSolve) settleR1C(w *blockWorker, id uint32, a, b, c *fr.Element, loc int, unknown constraint.Term) error {
	var x, check fr.Element
	switch loc {
	case 0:
		// A field has no zero divisors: with c = 0 (every bit check) a·b = c needs no
		// product.
		if c.IsZero() {
			if !a.IsZero() && !b.IsZero() {
				return errBlockSolve
			}
		} else if !check.Mul(a, b).Equal(c) {
			return errBlockSolve
		}
	case 1, 2: // the unknown in a (b): x = c/b - a (c/a - b)
		known, solving := b, a
		if loc == 2 {
			known, solving = a, b
		}
		if known.IsZero() { // gnark leaves x zero and only checks
			if !check.Mul(a, b).Equal(c) {
				return errBlockSolve
			}
		} else {
			x.Div(c, known).Sub(&x, solving)
			solving.Add(solving, &x)
		}
	case 3:
		x.Mul(a, b).Sub(&x, c)
		c.Add(c, &x)
	}
	s.a[id], s.b[id] = *a, *b
	if loc == 0 {
		return nil
	}
	// x is coefficient × value; gnark's divByCoeff.
	switch unknown.CID {
	case constraint.CoeffIdOne:
	case constraint.CoeffIdMinusOne:
		x.Neg(&x)
	case constraint.CoeffIdZero:
		return errBlockSolve // gnark panics: division by zero
	default:
		x.Div(&x, &s.sys.Coefficients[unknown.CID])
	}
	s.values[unknown.VID], s.solved[unknown.VID] = x, true
	w.solved++
	return nil
}

// sum adds le's solved terms into v; its unsolved term, if any, goes to *unknown with
// *loc = side, and false means a second unsolved term in the constraint.
func (s *blockSolve) sum(le constraint.LinearExpression, v *fr.Element, side int, unknown *constraint.Term, loc *int) bool {
	for _, t := range le {
		if !t.IsConstant() {
			if !s.solved[t.VID] {
				if *loc != 0 {
					return false
				}
				*unknown, *loc = t, side
				continue
			}
			if t.CID == constraint.CoeffIdOne { // most terms: no call
				v.Add(v, &s.values[t.VID])
				continue
			}
		}
		s.accumulate(t, v)
	}
	return true
}

// wideTerms is the length from which sumSolved sums a linear expression unreduced
// (wide) and reduces once: a reduction costs about as much as the modular additions
// of a few terms saves.
const wideTerms = 8

// sumSolved adds le's terms, each a constant or a solved wire's, into v.
func (s *blockSolve) sumSolved(le constraint.LinearExpression, v *fr.Element) {
	if len(le) >= wideTerms {
		var acc wide
		acc.set(v)
		for _, t := range le {
			// Coefficients 1 and -1 (most terms) are summed here, without a call.
			if t.CID == constraint.CoeffIdOne && !t.IsConstant() {
				acc.add(&s.values[t.VID])
				continue
			}
			if t.CID == constraint.CoeffIdMinusOne && !t.IsConstant() {
				acc.sub(&s.values[t.VID])
				continue
			}
			s.accumulateWide(t, &acc)
		}
		acc.reduce(v)
		return
	}
	for _, t := range le {
		if t.CID == constraint.CoeffIdOne && !t.IsConstant() {
			v.Add(v, &s.values[t.VID])
			continue
		}
		if t.CID == constraint.CoeffIdMinusOne && !t.IsConstant() {
			v.Sub(v, &s.values[t.VID])
			continue
		}
		s.accumulate(t, v)
	}
}

// solveHint is gnark's solveWithHint: the inputs are summed into field elements, the
// hint is called in its field form where it has one (fieldHints), else in its big.Int
// form (callBigInt), and its outputs become solved wires.
func (s *blockSolve) solveHint(w *blockWorker) error {
	f, ok := s.hints[w.hm.HintID]
	if !ok {
		return errBlockSolve
	}
	nIn, nOut := len(w.hm.Inputs), int(w.hm.OutputRange.End-w.hm.OutputRange.Start)
	w.fins = slices.Grow(w.fins[:0], nIn)[:nIn]
	w.fouts = slices.Grow(w.fouts[:0], nOut)[:nOut]
	for i, le := range w.hm.Inputs {
		v := &w.fins[i]
		v.SetZero()
		for _, t := range le {
			s.accumulate(t, v)
		}
	}
	clear(w.fouts)
	var err error
	if fh, ok := s.fast[w.hm.HintID]; ok {
		err = fh(w.fins, w.fouts)
	} else {
		err = w.callBigInt(f, s.q, w.fins, w.fouts)
	}
	if err != nil {
		return errBlockSolve
	}
	for i := range w.fouts {
		id := w.hm.OutputRange.Start + uint32(i)
		if s.solved[id] {
			return errBlockSolve
		}
		s.values[id] = w.fouts[i]
		s.solved[id] = true
	}
	w.solved += int64(nOut)
	return nil
}

// callBigInt calls f, a hint's big.Int form, on in and out through the worker's
// big.Ints (gnark's solver takes them from a pool) and a copy of q per call, as gnark
// makes: a hint may change it.
func (w *blockWorker) callBigInt(f solver.Hint, q *big.Int, in, out []fr.Element) error {
	for len(w.ins) < len(in) {
		w.ins = append(w.ins, new(big.Int))
	}
	for len(w.outs) < len(out) {
		w.outs = append(w.outs, new(big.Int))
	}
	if w.q == nil {
		w.q = new(big.Int)
	}
	w.q.Set(q)
	ins, outs := w.ins[:len(in)], w.outs[:len(out)]
	// Most hints' inputs and outputs are bits: 0 and 1 need no conversion out of or
	// into Montgomery form.
	for i := range in {
		switch {
		case in[i].IsZero():
			ins[i].SetUint64(0)
		case in[i].IsOne():
			ins[i].SetUint64(1)
		default:
			in[i].BigInt(ins[i])
		}
	}
	for _, o := range outs {
		o.SetUint64(0)
	}
	if err := f(w.q, ins, outs); err != nil {
		return err
	}
	for i, o := range outs {
		switch {
		case o.Sign() == 0:
			out[i].SetZero()
		case o.IsUint64() && o.Uint64() == 1:
			out[i].SetOne()
		default:
			out[i].SetBigInt(o)
		}
	}
	return nil
}
