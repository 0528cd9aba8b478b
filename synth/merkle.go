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
		api.AssertIsEqual(merkleRoot(api, h, c.Leaves[i], bits, c.Path[i]), c.Root)
	}
	return nil
}

// merkleRoot hashes leaf up its path (path[l] is the sibling at level l, 0 = leaf
// level); bits[l] says whether the node at level l is a right child.
func merkleRoot(api frontend.API, h *poseidon2.Permutation, leaf frontend.Variable, bits, path []frontend.Variable) frontend.Variable {
	node := leaf
	for l, sibling := range path {
		// One constraint swaps the pair when the node is a right child.
		d := api.Mul(bits[l], api.Sub(sibling, node))
		node = h.Compress(api.Add(node, d), api.Sub(sibling, d))
	}
	return node
}

// assign builds a sparse tree: every leaf that is not challenged holds the same
// random filler, so untouched subtrees have one precomputed hash per level and only
// the challenged paths cost hashing, whatever the depth.
func (c *merkleCircuit) assign(rng *rand.Rand) frontend.Circuit {
	filler := randomElement(rng)
	indices := make([]uint64, len(c.Challenges))
	leaves := map[uint64]fr.Element{}
	for i := range indices {
		indices[i] = rng.Uint64N(1 << c.depth)
		if _, dup := leaves[indices[i]]; !dup {
			leaves[indices[i]] = randomElement(rng)
		}
	}
	tree := newSparseTree(newNativeCompressor(), c.depth, filler, leaves)

	a := &merkleCircuit{
		Challenges: make([]frontend.Variable, len(c.Challenges)),
		Leaves:     make([]frontend.Variable, len(c.Challenges)),
		Path:       make([][]frontend.Variable, len(c.Challenges)),
		depth:      c.depth,
	}
	root := tree.root()
	a.Root = root.BigInt(new(big.Int))
	for i, idx := range indices {
		a.Challenges[i] = new(big.Int).SetUint64(idx)
		leaf := leaves[idx]
		a.Leaves[i] = leaf.BigInt(new(big.Int))
		a.Path[i] = tree.path(idx)
	}
	return a
}

// sparseTree is a Poseidon2 Merkle tree in which only a few leaves are set; all the
// others hold one filler value, so a subtree without a set leaf is one precomputed
// hash per level.
type sparseTree struct {
	filler []fr.Element            // filler[l]: root of an untouched subtree of height l
	levels []map[uint64]fr.Element // levels[l]: the nodes at level l above a set leaf
}

func newSparseTree(h nativeCompressor, depth int, filler fr.Element, leaves map[uint64]fr.Element) *sparseTree {
	t := &sparseTree{filler: make([]fr.Element, depth+1), levels: make([]map[uint64]fr.Element, depth+1)}
	t.filler[0] = filler
	for l := range depth {
		t.filler[l+1] = h.compress(t.filler[l], t.filler[l])
	}
	t.levels[0] = leaves
	for l := range depth {
		t.levels[l+1] = make(map[uint64]fr.Element, len(t.levels[l]))
		for idx := range t.levels[l] {
			parent := idx >> 1
			if _, done := t.levels[l+1][parent]; !done {
				t.levels[l+1][parent] = h.compress(t.node(l, parent<<1), t.node(l, parent<<1|1))
			}
		}
	}
	return t
}

func (t *sparseTree) node(l int, idx uint64) fr.Element {
	if v, ok := t.levels[l][idx]; ok {
		return v
	}
	return t.filler[l]
}

func (t *sparseTree) root() fr.Element { return t.node(len(t.levels)-1, 0) }

// path lists the siblings of leaf idx from the leaf level up.
func (t *sparseTree) path(idx uint64) []frontend.Variable {
	p := make([]frontend.Variable, len(t.levels)-1)
	for l := range p {
		sibling := t.node(l, (idx>>l)^1)
		p[l] = sibling.BigInt(new(big.Int))
	}
	return p
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
