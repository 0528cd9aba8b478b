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
)

// syntheticCircuit has exactly 2^K constraints, all with full-size values: `lanes`
// independent chains y ← (y + x)², each seeded by x + lane + 1 from a secret x, and one
// final constraint binding the sum of the chain ends to the public Out. Lane 0 is one
// step shorter so that the total is a power of two (the FFT domain is not doubled).
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

func (c *syntheticCircuit) laneSteps(lane int) int {
	if lane == 0 {
		return c.steps - 1
	}
	return c.steps
}

func (c *syntheticCircuit) Define(api frontend.API) error {
	ends := make([]frontend.Variable, c.lanes)
	for lane := range ends {
		x := c.X[lane%len(c.X)]
		y := api.Add(x, lane+1)
		for range c.laneSteps(lane) {
			t := api.Add(y, x)
			y = api.Mul(t, t)
		}
		ends[lane] = y
	}
	sum := ends[0]
	if len(ends) > 1 {
		sum = api.Add(ends[0], ends[1], ends[2:]...)
	}
	api.AssertIsEqual(sum, c.Out)
	return nil
}

func (c *syntheticCircuit) assign(rng *rand.Rand) frontend.Circuit {
	a := &syntheticCircuit{X: make([]frontend.Variable, len(c.X)), lanes: c.lanes, steps: c.steps}
	xs := make([]fr.Element, len(c.X))
	for i := range xs {
		xs[i] = randomElement(rng)
		a.X[i] = xs[i].BigInt(new(big.Int))
	}
	var sum, y, t, laneOffset fr.Element
	for lane := range c.lanes {
		x := &xs[lane%len(xs)]
		laneOffset.SetUint64(uint64(lane + 1))
		y.Add(x, &laneOffset)
		for range c.laneSteps(lane) {
			t.Add(&y, x)
			y.Square(&t)
		}
		sum.Add(&sum, &y)
	}
	a.Out = sum.BigInt(new(big.Int))
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
