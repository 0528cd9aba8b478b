package synth

import (
	"math/big"
	"math/rand/v2"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/frontend"
)

const (
	maxSyntheticK = 26
	// syntheticSteps is the length of each lane. The solver handles one dependency
	// level at a time with a barrier between levels, so short lanes (few levels) and
	// many of them (wide levels) keep every core busy.
	syntheticSteps = 64
	// syntheticInputs bounds the secret inputs: lanes share them round robin, so the
	// inputs JSON stays small even at 2^26 constraints.
	syntheticInputs = 64
	// syntheticFanIn is how many chain ends one reduction constraint sums: well below
	// gnark's compress threshold (300 terms), so no hidden constraints appear.
	syntheticFanIn = 64
)

// syntheticCircuit has exactly 2^K constraints, all with full-size values: `lanes`
// independent chains y ← (y + x)², each seeded by x + lane + 1 from a secret x, then
// a tree reducing the chain ends, syntheticFanIn at a time, node = (Σ children)², and
// one constraint binding the sum of the last level to the public Out. The first
// lanes are one step shorter, one per reduction constraint, so that the total is a
// power of two (the FFT domain is not doubled).
//
// Constraints are emitted step by step across all lanes, not lane by lane: gnark's
// solver walks one dependency level (one step of every lane) at a time, and this
// order makes each level's wires and rows contiguous. Lane by lane, the same circuit
// solves 3-4x slower from cache misses alone.
type syntheticCircuit struct {
	Out frontend.Variable `gnark:",public"`
	X   []frontend.Variable

	lanes, steps int `gnark:"-"`
}

func newSynthetic(p []int) builtin {
	total := 1 << p[0]
	steps := min(total, syntheticSteps)
	lanes := total / steps
	return &syntheticCircuit{
		X:     make([]frontend.Variable, min(lanes, syntheticInputs)),
		lanes: lanes,
		steps: steps,
	}
}

// reductions counts the constraints after the chains: tree nodes plus the final one.
func (c *syntheticCircuit) reductions() int {
	m := 1
	for n := c.lanes; n > syntheticFanIn; {
		n = (n + syntheticFanIn - 1) / syntheticFanIn
		m += n
	}
	return m
}

func (c *syntheticCircuit) laneSteps(lane int) int {
	if lane < c.reductions() {
		return c.steps - 1
	}
	return c.steps
}

func (c *syntheticCircuit) Define(api frontend.API) error {
	sum := func(vs []frontend.Variable) frontend.Variable {
		if len(vs) == 1 {
			return vs[0]
		}
		return api.Add(vs[0], vs[1], vs[2:]...)
	}
	nodes := make([]frontend.Variable, c.lanes)
	for lane := range nodes {
		nodes[lane] = api.Add(c.X[lane%len(c.X)], lane+1)
	}
	for step := range c.steps {
		for lane := range nodes {
			if step < c.laneSteps(lane) {
				t := api.Add(nodes[lane], c.X[lane%len(c.X)])
				nodes[lane] = api.Mul(t, t)
			}
		}
	}
	for len(nodes) > syntheticFanIn {
		next := make([]frontend.Variable, (len(nodes)+syntheticFanIn-1)/syntheticFanIn)
		for i := range next {
			s := sum(nodes[i*syntheticFanIn : min(len(nodes), (i+1)*syntheticFanIn)])
			next[i] = api.Mul(s, s)
		}
		nodes = next
	}
	api.AssertIsEqual(sum(nodes), c.Out)
	return nil
}

func (c *syntheticCircuit) assign(rng *rand.Rand) frontend.Circuit {
	a := &syntheticCircuit{X: make([]frontend.Variable, len(c.X)), lanes: c.lanes, steps: c.steps}
	xs := make([]fr.Element, len(c.X))
	for i := range xs {
		xs[i] = randomElement(rng)
		a.X[i] = xs[i].BigInt(new(big.Int))
	}
	nodes := make([]fr.Element, c.lanes)
	var t, laneOffset fr.Element
	for lane := range nodes {
		x := &xs[lane%len(xs)]
		laneOffset.SetUint64(uint64(lane + 1))
		y := &nodes[lane]
		y.Add(x, &laneOffset)
		for range c.laneSteps(lane) {
			t.Add(y, x)
			y.Square(&t)
		}
	}
	for len(nodes) > syntheticFanIn {
		next := make([]fr.Element, (len(nodes)+syntheticFanIn-1)/syntheticFanIn)
		for i := range next {
			for _, n := range nodes[i*syntheticFanIn : min(len(nodes), (i+1)*syntheticFanIn)] {
				next[i].Add(&next[i], &n)
			}
			next[i].Square(&next[i])
		}
		nodes = next
	}
	var out fr.Element
	for i := range nodes {
		out.Add(&out, &nodes[i])
	}
	a.Out = out.BigInt(new(big.Int))
	return a
}

// randomElement draws a uniform field element from rng (deterministic for a seed).
func randomElement(rng *rand.Rand) fr.Element {
	var b [48]byte // 384 bits reduced mod r: bias below 2^-128
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	var e fr.Element
	e.SetBytes(b[:])
	return e
}
