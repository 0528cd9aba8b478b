package synth

import (
	"fmt"
	"math/big"
	"math/rand/v2"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	nativeposeidon2 "github.com/consensys/gnark-crypto/ecc/bls12-381/fr/poseidon2"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/std/permutation/poseidon2"
)

const (
	maxMerkleDepth      = 62 // leaf indices are uint64 and 1<<D must not overflow
	maxMerkleChallenges = 1 << 16
)

// merkleCircuit proves, PoSt-style, that C challenged leaves belong to a Poseidon2
// Merkle tree of depth D with the public Root. Challenges are the public leaf indices
// (bit l of the index says whether the node at level l is a right child); Leaves and
// Path (Path[c][l] is the sibling at level l, 0 = leaf level) are secret. A node is
// Compress(left, right) of gnark-crypto's BLS12-381 Poseidon2 with default parameters.
type merkleCircuit struct {
	Root       frontend.Variable   `gnark:",public"`
	Challenges []frontend.Variable `gnark:",public"`
	Leaves     []frontend.Variable
	Path       [][]frontend.Variable

	depth int `gnark:"-"`
}

func newMerkle(p []int) builtin {
	depth, challenges := p[0], p[1]
	c := &merkleCircuit{
		Challenges: make([]frontend.Variable, challenges),
		Leaves:     make([]frontend.Variable, challenges),
		Path:       make([][]frontend.Variable, challenges),
		depth:      depth,
	}
	for i := range c.Path {
		c.Path[i] = make([]frontend.Variable, depth)
	}
	return c
}

func (c *merkleCircuit) Define(api frontend.API) error {
	h, err := newGadgetCompressor(api)
	if err != nil {
		return fmt.Errorf("poseidon2 gadget: %w", err)
	}
	for i := range c.Challenges {
		// Also range-checks the challenge to [0, 2^D).
		bits := api.ToBinary(c.Challenges[i], c.depth)
		node := c.Leaves[i]
		for l, sibling := range c.Path[i] {
			// One constraint swaps the pair when the node is a right child.
			d := api.Mul(bits[l], api.Sub(sibling, node))
			node = h.Compress(api.Add(node, d), api.Sub(sibling, d))
		}
		api.AssertIsEqual(node, c.Root)
	}
	return nil
}

// assign builds a sparse tree: every leaf that is not challenged holds the same
// random filler, so untouched subtrees have one precomputed hash per level and only
// the challenged paths cost hashing, whatever the depth.
func (c *merkleCircuit) assign(rng *rand.Rand) frontend.Circuit {
	h := newNativeCompressor()
	filler := make([]fr.Element, c.depth+1) // filler[l]: root of an untouched subtree of height l
	filler[0] = randomElement(rng)
	for l := range c.depth {
		filler[l+1] = h.compress(filler[l], filler[l])
	}

	indices := make([]uint64, len(c.Challenges))
	levels := make([]map[uint64]fr.Element, c.depth+1)
	levels[0] = map[uint64]fr.Element{}
	for i := range indices {
		indices[i] = rng.Uint64N(1 << c.depth)
		if _, dup := levels[0][indices[i]]; !dup {
			levels[0][indices[i]] = randomElement(rng)
		}
	}
	node := func(l int, idx uint64) fr.Element {
		if v, ok := levels[l][idx]; ok {
			return v
		}
		return filler[l]
	}
	for l := range c.depth {
		levels[l+1] = make(map[uint64]fr.Element, len(levels[l]))
		for idx := range levels[l] {
			parent := idx >> 1
			if _, done := levels[l+1][parent]; !done {
				levels[l+1][parent] = h.compress(node(l, parent<<1), node(l, parent<<1|1))
			}
		}
	}

	a := &merkleCircuit{
		Challenges: make([]frontend.Variable, len(c.Challenges)),
		Leaves:     make([]frontend.Variable, len(c.Challenges)),
		Path:       make([][]frontend.Variable, len(c.Challenges)),
		depth:      c.depth,
	}
	root := levels[c.depth][0]
	a.Root = root.BigInt(new(big.Int))
	for i, idx := range indices {
		a.Challenges[i] = new(big.Int).SetUint64(idx)
		leaf := levels[0][idx]
		a.Leaves[i] = leaf.BigInt(new(big.Int))
		a.Path[i] = make([]frontend.Variable, c.depth)
		for l := range c.depth {
			sibling := node(l, (idx>>l)^1)
			a.Path[i][l] = sibling.BigInt(new(big.Int))
		}
	}
	return a
}

// newGadgetCompressor returns gnark's Poseidon2 gadget with the parameters of
// gnark-crypto's default BLS12-381 permutation, which nativeCompressor uses.
func newGadgetCompressor(api frontend.API) (*poseidon2.Permutation, error) {
	p := nativeposeidon2.GetDefaultParameters()
	return poseidon2.NewPoseidon2FromParameters(api, p.Width, p.NbFullRounds, p.NbPartialRounds)
}

// nativeCompressor is the out-of-circuit twin of the Poseidon2 gadget's Compress.
type nativeCompressor struct{ perm *nativeposeidon2.Permutation }

func newNativeCompressor() nativeCompressor {
	p := nativeposeidon2.GetDefaultParameters()
	return nativeCompressor{nativeposeidon2.NewPermutation(p.Width, p.NbFullRounds, p.NbPartialRounds)}
}

// compress returns Permutation(left, right)[1] + right, as gnark's gadget does.
func (h nativeCompressor) compress(left, right fr.Element) fr.Element {
	state := [2]fr.Element{left, right}
	if err := h.perm.Permutation(state[:]); err != nil {
		panic(err) // width is 2 by construction
	}
	state[1].Add(&state[1], &right)
	return state[1]
}
