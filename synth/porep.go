package synth

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
)

const (
	minPorepK = 16
	maxPorepK = 27
	// porepChallengeLog sizes the independent sub-computations: one challenge per
	// 2^16 constraints, so 2^(K-16) challenges solve side by side.
	porepChallengeLog = 16
	// porepParents is how many parent labels one challenge's labelling reads; its
	// rounds take their 8 words each in turn, again and again, as SDR repeats its
	// parents to fill the hashed message.
	porepParents = 4
	// porepDepth is the depth of the Poseidon2 tree that commits to the replica.
	porepDepth = 16
	// porepLabelBits is the width of a label: a field element below 2^254, as
	// Filecoin truncates its SHA-256 labels to 254 bits.
	porepLabelBits = 254

	// Constraint counts the sizing relies on (TestPorepShape checks them):
	// a labelling round, a Poseidon2 compression, a challenge without its rounds,
	// and the rest (the seed's bits, the CommD check).
	porepRoundConstraints     = 1120
	poseidon2Constraints      = 186
	porepChallengeConstraints = porepParents*(porepLabelBits+1) + porepDepth + 1 + porepDepth*(1+poseidon2Constraints) + 1
	porepFixedConstraints     = porepLabelBits + 1 + 1
)

// porepCircuit is shaped like one partition of a Filecoin PoRep (stacked DRG): for
// each of 2^(K-16) challenged nodes it recomputes the node's label from its parents'
// labels with a SHA-256-style compression over bits, and proves with a Poseidon2
// inclusion path that label + data is the replica leaf under the public CommR. The
// challenged nodes' data leaves form a Poseidon2 tree whose root is the public CommD;
// the public Seed (a replica ID) is the compression's initial state. Labelling rounds
// fill the circuit to just under 2^K constraints, so the FFT domain is 2^K.
//
// The labelling works on bits the solver computes through one hint call per round;
// each gate is then checked in constraints that add no variable: a majority (or an
// AND, the majority with a zero) by its booleanity and its four linear bounds
// (x+y+z−2m, x+y−m, y+z−m, x+z−m each 0 or 1), an XOR of three as x+y+z−2·maj. That
// makes about five constraints per bit variable, as bit-heavy proving circuits have.
//
// A round over the state (a…h) and a message word w (with round constant k) is
//
//	t1 = Σ1(e) ⊕ Ch(e,f,g) ⊕ w ⊕ k,  e' = d ⊕ t1 ⊕ h,  a' = t1 ⊕ Σ0(a) ⊕ Maj(a,b,c)
//
// SHA-256's round with its additions replaced by XOR (a carry chain would cost a
// constraint per bit and variable). The label is the final state's first 254 bits.
type porepCircuit struct {
	CommD frontend.Variable `gnark:",public"`
	CommR frontend.Variable `gnark:",public"`
	Seed  frontend.Variable `gnark:",public"`

	Parents [][]frontend.Variable // per challenge, porepParents labels below 2^254
	Data    []frontend.Variable   // per challenge, its data leaf
	Index   []frontend.Variable   // per challenge, its leaf index in the CommR tree
	Path    [][]frontend.Variable // per challenge, porepDepth siblings, leaf level first

	rounds []int `gnark:"-"` // labelling rounds per challenge
	k      int   `gnark:"-"` // its domain is 2^k
}

// porepCallData is about how many words of gnark's call data a porep instruction
// takes (24.2 at 2^20).
const porepCallData = 25

// compileCapacity sizes gnark's slices for 2^k instructions of porepCallData words:
// WithCapacity(c) holds c instructions and 8c words.
func (c *porepCircuit) compileCapacity() int { return (1 << c.k) * porepCallData / 8 }

func newPorep(p []int) builtin {
	k := p[0]
	challenges := 1 << (k - porepChallengeLog)
	c := &porepCircuit{
		Parents: make([][]frontend.Variable, challenges),
		Data:    make([]frontend.Variable, challenges),
		Index:   make([]frontend.Variable, challenges),
		Path:    make([][]frontend.Variable, challenges),
		rounds:  porepRounds(k),
		k:       k,
	}
	for i := range challenges {
		c.Parents[i] = make([]frontend.Variable, porepParents)
		c.Path[i] = make([]frontend.Variable, porepDepth)
	}
	return c
}

// porepRounds spreads the most rounds that keep the circuit below 2^k constraints
// over its challenges, the first ones taking one more.
func porepRounds(k int) []int {
	challenges := 1 << (k - porepChallengeLog)
	free := 1<<k - 1 - porepFixedConstraints - (challenges-1)*poseidon2Constraints - challenges*porepChallengeConstraints
	total := free / porepRoundConstraints
	rounds := make([]int, challenges)
	for i := range rounds {
		rounds[i] = total / challenges
		if i < total%challenges {
			rounds[i]++
		}
	}
	return rounds
}

// porepConstraints is the constraint count of porep-k<k>, from the counts above.
func porepConstraints(k int) int {
	challenges := 1 << (k - porepChallengeLog)
	n := porepFixedConstraints + (challenges-1)*poseidon2Constraints + challenges*porepChallengeConstraints
	for _, r := range porepRounds(k) {
		n += r * porepRoundConstraints
	}
	return n
}

func (c *porepCircuit) Define(api frontend.API) error {
	h, err := newGadgetCompressor(api)
	if err != nil {
		return fmt.Errorf("poseidon2 gadget: %w", err)
	}
	g := newBitGates(api, &roundHint{api: api})
	// Also range-checks Seed below 2^254.
	iv := labelWords(api.ToBinary(c.Seed, porepLabelBits))
	for i := range c.Parents {
		var msg []word
		for _, p := range c.Parents[i] {
			ws := labelWords(api.ToBinary(p, porepLabelBits))
			msg = append(msg, ws[:]...)
		}
		state := iv
		for r := range c.rounds[i] {
			state = g.round(state, msg[r%len(msg)], sha256K[r%len(sha256K)])
		}
		label := packLabel(api, state)
		leaf := api.Add(label, c.Data[i])
		// Also range-checks the index to [0, 2^porepDepth).
		right := api.ToBinary(c.Index[i], porepDepth)
		api.AssertIsEqual(merkleRoot(api, h, leaf, right, c.Path[i]), c.CommR)
	}
	nodes := c.Data
	for len(nodes) > 1 {
		next := make([]frontend.Variable, len(nodes)/2)
		for i := range next {
			next[i] = h.Compress(nodes[2*i], nodes[2*i+1])
		}
		nodes = next
	}
	api.AssertIsEqual(nodes[0], c.CommD)
	return nil
}

// labelWords splits a label's bits into the 8 words of a compression state or
// message block, the last word's two top bits zero.
func labelWords(b []frontend.Variable) [8]word {
	var ws [8]word
	for i := range 8 * 32 {
		if i < len(b) {
			ws[i/32][i%32] = b[i]
		} else {
			ws[i/32][i%32] = 0
		}
	}
	return ws
}

// packLabel is the label as a field element: the state's first 254 bits.
func packLabel(api frontend.API, s [8]word) frontend.Variable {
	terms := make([]frontend.Variable, porepLabelBits)
	for i := range terms {
		terms[i] = api.Mul(s[i/32][i%32], new(big.Int).Lsh(big.NewInt(1), uint(i)))
	}
	return api.Add(terms[0], terms[1], terms[2:]...)
}

func (c *porepCircuit) assign(rng *rand.Rand) frontend.Circuit {
	n := len(c.Parents)
	a := &porepCircuit{
		Parents: make([][]frontend.Variable, n),
		Data:    make([]frontend.Variable, n),
		Index:   make([]frontend.Variable, n),
		Path:    make([][]frontend.Variable, n),
		rounds:  c.rounds,
	}
	seed := randomLabel(rng)
	a.Seed = seed
	iv := labelState(seed)
	h := newNativeCompressor()

	data := make([]fr.Element, n)
	leaves := make(map[uint64]fr.Element, n)
	indices := make([]uint64, n)
	for i := range n {
		var msg []uint32
		a.Parents[i] = make([]frontend.Variable, porepParents)
		for j := range a.Parents[i] {
			p := randomLabel(rng)
			a.Parents[i][j] = p
			ws := labelState(p)
			msg = append(msg, ws[:]...)
		}
		state := iv
		for r := range c.rounds[i] {
			state = porepRound(state, msg[r%len(msg)], sha256K[r%len(sha256K)])
		}
		var leaf fr.Element
		leaf.SetBigInt(stateLabel(state))
		data[i] = randomElement(rng)
		leaf.Add(&leaf, &data[i])
		a.Data[i] = data[i].BigInt(new(big.Int))
		for { // distinct leaves: two challenges cannot share one
			indices[i] = rng.Uint64N(1 << porepDepth)
			if _, taken := leaves[indices[i]]; !taken {
				break
			}
		}
		leaves[indices[i]] = leaf
		a.Index[i] = new(big.Int).SetUint64(indices[i])
	}
	tree := newSparseTree(h, porepDepth, randomElement(rng), leaves)
	root := tree.root()
	a.CommR = root.BigInt(new(big.Int))
	for i, idx := range indices {
		a.Path[i] = tree.path(idx)
	}
	for len(data) > 1 {
		next := make([]fr.Element, len(data)/2)
		for i := range next {
			next[i] = h.compress(data[2*i], data[2*i+1])
		}
		data = next
	}
	a.CommD = data[0].BigInt(new(big.Int))
	return a
}

// randomLabel draws a uniform value below 2^254.
func randomLabel(rng *rand.Rand) *big.Int {
	v := new(big.Int)
	for range 4 {
		v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(rng.Uint64()))
	}
	return v.Rsh(v, 256-porepLabelBits)
}

// labelState is labelWords for a native label.
func labelState(v *big.Int) [8]uint32 {
	var ws [8]uint32
	for i := range porepLabelBits {
		ws[i/32] |= uint32(v.Bit(i)) << (i % 32)
	}
	return ws
}

// stateLabel is packLabel for a native state.
func stateLabel(s [8]uint32) *big.Int {
	v := new(big.Int)
	for i := porepLabelBits - 1; i >= 0; i-- {
		v.Lsh(v, 1).SetBit(v, 0, uint(s[i/32]>>(i%32))&1)
	}
	return v
}

// porepRound is the native twin of bitGates.round.
func porepRound(s [8]uint32, w, k uint32) [8]uint32 {
	next, _ := porepRoundGates(s, w, k)
	return next
}

// roundWords is how many words of gate outputs a labelling round takes from the
// solver, in the order bitGates.round uses them: the majorities of Σ0's, Σ1's and
// Maj's operands, Ch's two ANDs, the majority of t1's operands, then a' and e'.
const roundWords = 8

// porepRoundGates computes one labelling round natively: the next state, and the
// round's gate outputs in bitGates.round's order.
func porepRoundGates(s [8]uint32, w, k uint32) (next, gates [8]uint32) {
	a, b, c, d, e, f, g, h := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
	rot := func(x uint32, n int) uint32 { return bits.RotateLeft32(x, -n) }
	maj3 := func(x, y, z uint32) uint32 { return (x & y) | (x & z) | (y & z) }
	s0 := rot(a, 2) ^ rot(a, 13) ^ rot(a, 22)
	s1 := rot(e, 6) ^ rot(e, 11) ^ rot(e, 25)
	maj := maj3(a, b, c)
	u, v := e&f, ^e&g
	ch := u | v
	wk := w ^ k
	t1 := s1 ^ ch ^ wk
	a2, e2 := t1^s0^maj, d^t1^h
	gates = [8]uint32{
		maj3(rot(a, 2), rot(a, 13), rot(a, 22)),
		maj3(rot(e, 6), rot(e, 11), rot(e, 25)),
		maj, u, v,
		maj3(s1, ch, wk),
		a2, e2,
	}
	return [8]uint32{a2, a, b, c, e2, e, f, g}, gates
}

// bitGates builds the labelling's bit gates: words has the solver compute the gate
// outputs (a round's at once), constraints check them.
type bitGates struct {
	api   frontend.API
	r1c   constraint.BlueprintID // gnark's generic R1C, for assertBit
	buf   []uint32
	words *roundHint
	// What gnark's own 1 − x has taught assertBit about the coefficient table, by a
	// coefficient's ID c: neg[c] the ID of −c, oneMinus[c] the ID of 1 − c (noTerm when
	// it is 0); 0 where not learned yet (no term of x has coefficient 0, and 1 − c of ID
	// 0 is noTerm). one is the ID of 1, once learned.
	neg, oneMinus []uint32
	one           uint32
	r             constraint.LinearExpression // oneMinusOf's terms, reused: AddInstruction copies them
}

// noTerm marks a coefficient 1 − c that is zero: 1 − x then has no constant term.
const noTerm = math.MaxUint32

func newBitGates(api frontend.API, words *roundHint) *bitGates {
	return &bitGates{api: api, r1c: api.Compiler().AddBlueprint(&constraint.BlueprintGenericR1C{}), words: words}
}

// oneMinusOf returns the canonical 1 − x from x's canonical terms l, built from the
// coefficient IDs learned from gnark, or false when one of them is unknown. The
// coefficient table only grows and gives a value the same ID every time, so when every
// ID is known, gnark's own Sub and ToCanonicalVariable would add nothing to it and give
// these terms: the constraint system is the same, without their allocations.
func (g *bitGates) oneMinusOf(l constraint.LinearExpression) (constraint.LinearExpression, bool) {
	r, rest := g.r[:0], l
	if len(l) > 0 && l[0].VID == 0 {
		c := idAt(g.oneMinus, l[0].CID)
		if c == 0 {
			return nil, false
		}
		if c != noTerm {
			r = append(r, constraint.Term{CID: c, VID: 0})
		}
		rest = l[1:]
	} else {
		if g.one == 0 {
			return nil, false
		}
		r = append(r, constraint.Term{CID: g.one, VID: 0})
	}
	for _, t := range rest {
		c := idAt(g.neg, t.CID)
		if c == 0 {
			return nil, false
		}
		r = append(r, constraint.Term{CID: c, VID: t.VID})
	}
	if len(r) < 2 {
		return nil, false // a constant alone: gnark gives its shared forms
	}
	g.r = r
	return r, true
}

// learn records what gnark's 1 − x (r) says of the IDs of x's terms (l): r is 1, or
// 1 − c for x's constant c, then −c' for each other term c'·v of x, in x's order.
func (g *bitGates) learn(l, r constraint.LinearExpression) {
	lConst, rConst := len(l) > 0 && l[0].VID == 0, len(r) > 0 && r[0].VID == 0
	rest, rRest := l, r
	if lConst {
		rest = l[1:]
	}
	if rConst {
		rRest = r[1:]
	}
	if len(rRest) != len(rest) || !lConst && !rConst {
		return
	}
	for i, t := range rest {
		if rRest[i].VID != t.VID || rRest[i].CID == 0 {
			return
		}
	}
	switch {
	case lConst && rConst:
		if r[0].CID == 0 {
			return
		}
		g.oneMinus = withID(g.oneMinus, l[0].CID, r[0].CID)
	case lConst:
		g.oneMinus = withID(g.oneMinus, l[0].CID, noTerm)
	default:
		g.one = r[0].CID
	}
	for i, t := range rest {
		g.neg = withID(g.neg, t.CID, rRest[i].CID)
	}
}

// idAt is s[i], 0 (not learned) past s's end.
func idAt(s []uint32, i uint32) uint32 {
	if int(i) < len(s) {
		return s[i]
	}
	return 0
}

// withID sets s[i] = v, growing s as needed.
func withID(s []uint32, i, v uint32) []uint32 {
	if int(i) >= len(s) {
		s = append(s, make([]uint32, int(i)+1-len(s))...)
	}
	s[i] = v
	return s
}

// assertBit adds the constraint x·(1−x) = 0, as api.AssertIsBoolean does but without
// its table of known booleans: that hashes every expression it checks (blake2b per
// term) and keeps them all, which for the labelling's five checks per bit costs most
// of the compile time and about half a kilobyte per constraint of compile memory.
// The labelling never checks an expression twice, so the table would gain nothing.
func (g *bitGates) assertBit(x frontend.Variable) {
	comp := g.api.Compiler()
	l := comp.ToCanonicalVariable(x).(constraint.LinearExpression)
	r, ok := g.oneMinusOf(l)
	if !ok {
		r = comp.ToCanonicalVariable(g.api.Sub(1, x)).(constraint.LinearExpression)
		g.learn(l, r)
	}
	o := constraint.LinearExpression{{CID: constraint.CoeffIdZero, VID: 0}}
	// The calldata of a generic R1C: its length, the three lengths, then
	// (coefficient, wire) pairs of L, R and O (constraint.BlueprintGenericR1C).
	b := append(g.buf[:0], uint32(4+2*(len(l)+len(r)+len(o))), uint32(len(l)), uint32(len(r)), uint32(len(o)))
	for _, le := range [...]constraint.LinearExpression{l, r, o} {
		for _, t := range le {
			b = append(b, t.CID, t.VID)
		}
	}
	comp.AddInstruction(g.r1c, b)
	g.buf = b
}

func (g *bitGates) round(s [8]word, w word, k uint32) [8]word {
	api := g.api
	g.words.round(s, w, k)
	a, b, c, d, e, f, gg, h := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
	s0 := g.xor3(rotr(a, 2), rotr(a, 13), rotr(a, 22))
	s1 := g.xor3(rotr(e, 6), rotr(e, 11), rotr(e, 25))
	maj := g.maj(a, b, c)
	var zero, notE, ch, wk word
	for i := range zero {
		zero[i] = 0
		notE[i] = api.Sub(1, e[i])
		wk[i] = w[i]
		if k>>i&1 == 1 {
			wk[i] = api.Sub(1, w[i])
		}
	}
	// Ch(e,f,g) = (e ∧ f) + (¬e ∧ g): the two ANDs are never both 1. Ch lies
	// between f ∧ g and f ∨ g, which one more constraint checks.
	u, v := g.maj(e, f, zero), g.maj(notE, gg, zero)
	for i := range ch {
		ch[i] = api.Add(u[i], v[i])
		g.assertBit(api.Sub(api.Add(f[i], gg[i]), ch[i]))
	}
	t1 := g.xor3(s1, ch, wk)
	return [8]word{g.xorWord(t1, s0, maj), a, b, c, g.xorWord(d, t1, h), e, f, gg}
}

// maj returns the bitwise majority of x, y and z (0/1-valued), one new variable per
// bit, checked by five constraints that add none: m is 0 or 1, and so are
// x+y+z−2m, x+y−m, y+z−m and x+z−m (the bounds that pin a majority).
func (g *bitGates) maj(x, y, z word) word {
	m, _ := g.majXor(x, y, z)
	return m
}

// majXor is maj, also returning x ⊕ y ⊕ z = x+y+z−2m, the expression its second check
// builds anyway.
func (g *bitGates) majXor(x, y, z word) (m, xor word) {
	api := g.api
	m = g.words.next()
	for i := range m {
		g.assertBit(m[i])
		xor[i] = api.Sub(api.Add(x[i], y[i], z[i]), api.Mul(m[i], 2))
		g.assertBit(xor[i])
		g.assertBit(api.Sub(api.Add(x[i], y[i]), m[i]))
		g.assertBit(api.Sub(api.Add(y[i], z[i]), m[i]))
		g.assertBit(api.Sub(api.Add(x[i], z[i]), m[i]))
	}
	return m, xor
}

// xor3 returns x ⊕ y ⊕ z as linear expressions x+y+z−2·maj(x,y,z): the majority's
// variables are the only new ones.
func (g *bitGates) xor3(x, y, z word) word {
	_, xor := g.majXor(x, y, z)
	return xor
}

// xorWord returns x ⊕ y ⊕ z as new variables, for the state words each round keeps:
// as linear expressions they would grow round after round. Each bit is 0 or 1 and
// (x+y+z−r)/2 is 0 or 1.
func (g *bitGates) xorWord(x, y, z word) word {
	api := g.api
	r := g.words.next()
	for i := range r {
		g.assertBit(r[i])
		g.assertBit(api.Mul(api.Sub(api.Add(x[i], y[i], z[i]), r[i]), halfFr))
	}
	return r
}

// halfFr is 1/2 in BLS12-381's scalar field.
var halfFr = new(big.Int).Rsh(new(big.Int).Add(fr.Modulus(), big.NewInt(1)), 1)

// roundHint computes all gate outputs of a round in one porepRoundHint call, for the
// round's gates to take in turn. One call per round rather than one per gate word:
// gnark converts every hint input from the field to a big.Int, and a round's gates
// read its 9 words of operands over and over. The outputs are allocated in the order
// the gates take them, as one call per gate word allocated them, so the wires, and
// with them the constraints, are the same.
type roundHint struct {
	api frontend.API
	out []frontend.Variable // the round's gate outputs not yet taken
}

func (h *roundHint) round(s [8]word, w word, k uint32) {
	in := make([]frontend.Variable, 0, 1+9*32)
	in = append(in, k)
	for _, x := range s {
		in = append(in, x[:]...)
	}
	in = append(in, w[:]...)
	out, err := h.api.Compiler().NewHint(porepRoundHint, roundWords*32, in...)
	if err != nil {
		panic(err) // only for a hint gnark cannot register, which this one is not
	}
	h.out = out
}

// next is the round's next word of gate outputs, in the order the gates take them.
func (h *roundHint) next() word {
	if len(h.out) < 32 {
		panic("porep round: its gates take more words than porepRoundHint computed")
	}
	var w word
	copy(w[:], h.out[:32])
	h.out = h.out[32:]
	return w
}

// porepRoundHint computes a labelling round's gate outputs: in is the round constant,
// then the bits of the state's 8 words and of the message word (least significant
// first); out, the round's roundWords words of gate outputs in porepRoundGates's
// order. A non-zero bit counts as 1: a value that is not a bit fails the gates'
// constraints.
// Compiled circuits name their hints by Go function name: renaming this one makes
// every porep circuit compiled before it unsolvable (bump CircuitRevision with it).
func porepRoundHint(_ *big.Int, in, out []*big.Int) error {
	if len(in) != porepRoundInputs || len(out) != porepRoundOutputs || !in[0].IsUint64() || in[0].Uint64() > math.MaxUint32 {
		return porepRoundArgsError(len(in), len(out))
	}
	gates := porepRoundOf(func(from int) uint32 {
		var w uint32
		for i, b := range in[from : from+32] {
			if b.Sign() != 0 {
				w |= 1 << i
			}
		}
		return w
	}, uint32(in[0].Uint64()))
	for j, w := range gates {
		for i := range 32 {
			out[32*j+i].SetUint64(uint64(w >> i & 1))
		}
	}
	return nil
}

// porepRoundFieldHint is porepRoundHint on field elements, for the block solver: the
// same checks and the same outputs, a bit being any nonzero value. The two stay
// separate: porepRoundHint is gnark's solver's, the reference that benchmarks measure
// the block solver against, and converting its big.Ints for this one made it slower.
func porepRoundFieldHint(in, out []fr.Element) error {
	if len(in) != porepRoundInputs || len(out) != porepRoundOutputs || !in[0].IsUint64() || in[0].Uint64() > math.MaxUint32 {
		return porepRoundArgsError(len(in), len(out))
	}
	gates := porepRoundOf(func(from int) uint32 {
		var w uint32
		for i := range 32 {
			if !in[from+i].IsZero() {
				w |= 1 << i
			}
		}
		return w
	}, uint32(in[0].Uint64()))
	for j, w := range gates {
		for i := range 32 {
			if w>>i&1 == 1 {
				out[32*j+i].SetOne()
			} else {
				out[32*j+i].SetZero()
			}
		}
	}
	return nil
}

// A round hint's inputs: the round constant, then the bits of 8 state words and of
// the message word; its outputs: the bits of roundWords words of gate outputs.
const (
	porepRoundInputs  = 1 + 9*32
	porepRoundOutputs = roundWords * 32
)

// porepRoundArgsError refuses a round hint's arguments: their counts, or a round
// constant that is not a 32-bit word.
func porepRoundArgsError(nIn, nOut int) error {
	return fmt.Errorf("porep round: %d inputs and %d outputs, want %d and %d", nIn, nOut, porepRoundInputs, porepRoundOutputs)
}

// porepRoundOf is the gate outputs of the round with constant k whose state words and
// message word word reads from the hint's inputs (word(from) packs the 32 bits from
// input from on).
func porepRoundOf(word func(from int) uint32, k uint32) [8]uint32 {
	var state [8]uint32
	for i := range state {
		state[i] = word(1 + 32*i)
	}
	_, gates := porepRoundGates(state, word(1+8*32), k)
	return gates
}

func init() { solver.RegisterHint(porepRoundHint) }
