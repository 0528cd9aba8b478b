package synth

import (
	"math/bits"
	"runtime"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
)

// MemEstimate is the heap one Solve of a circuit allocates, in bytes, counting every
// allocation as if the garbage collector never ran during it: an upper bound of the
// peak it adds to the process.
type MemEstimate struct {
	// W is the wire vector; it lives as long as the Solution.
	W int64
	// AB is A and B, allocated with capacity for the next power of two of the
	// constraint count (as gnark's solver does); they live until Solution.ReleaseAB.
	AB int64
	// Scratch is freed once Solve returns: the parsed witness, gnark's per-wire
	// bookkeeping, the buffers of every hint call and, where gnark's solver solves the
	// circuit (no block split), the C vector it returns beside A and B.
	Scratch int64
}

// Total is the peak a Solve adds: what a memory budget reserves before it starts.
func (m MemEstimate) Total() int64 { return m.W + m.AB + m.Scratch }

// Estimate returns c's Solve memory; it is computed once, when c is loaded.
func (c *Compiled) Estimate() MemEstimate { return c.est }

// EstimateBytes is the peak heap a Solve of c allocates: c.Estimate().Total().
func EstimateBytes(c *Compiled) int64 { return c.est.Total() }

const (
	// perInputScratch covers what parsing allocates per input value beyond the
	// witness vector itself: JSON tokens (key and value strings, interface boxing) and
	// a big.Int per value. Measured at 150-200 bytes with short keys and values, and
	// at 630-680 bytes with full-size hex values under dotted keys (merkle-poseidon2,
	// porep); rounded up to leave room for long names. The witness vector is small
	// next to the wires, so this margin costs little.
	perInputScratch = 1024
	// solveOverhead covers small fixed-size allocations: gnark's solver config (a
	// copy of the hint registry), the JSON decoder. Measured at about 50 KiB.
	solveOverhead = 64 << 10
	// perCPUOverhead covers what gnark's solver allocates per worker (one per CPU):
	// goroutine, scratch space, pooled big.Ints.
	perCPUOverhead = 2 << 10
)

func estimate(c *Compiled) MemEstimate {
	nbWires := int64(c.NbWires())
	domain := int64(1) << bits.Len64(uint64(c.NbConstraints())-1) // next power of two
	nbIn := int64(c.nbInputs())
	nbPub := int64(c.NbPublic() - 1)

	var m MemEstimate
	m.W = allocSize(fr.Bytes * nbWires)
	vec := allocSize(fr.Bytes * domain)
	m.AB = 2 * vec

	hintCalls, hintPool := hintScratch(c)
	witnessBin := allocSize(witnessHeaderSize + fr.Bytes*nbIn) // parsed inputs, gnark encoding
	m.Scratch = witnessBin +
		allocSize(fr.Bytes*nbIn) + // witness vector decoded from it
		allocSize(nbIn) + // which inputs were set
		perInputScratch*nbIn +
		allocSize(witnessHeaderSize+fr.Bytes*nbPub) + // Solution.Public
		allocSize(nbWires) + // solver: which wires are solved
		hintCalls +
		solveOverhead + (perCPUOverhead+hintPool)*int64(runtime.NumCPU())
	if c.plan == nil {
		m.Scratch += vec // gnark's C
	}
	// Measured up to 2^20 the rest is exact to 0.1%, now and then just below: 1/128
	// of the vectors covers what it misses.
	m.Scratch += (m.W + m.AB) / 128
	return m
}

// pooledBigInt is the heap of one of the solver's pooled big.Ints holding a field
// element: its header and its four words, a size class each.
const pooledBigInt = 32 + 32

// hintScratch is what gnark's solver allocates for hints, from one walk over the
// instructions: per call, one slice of *big.Int for the inputs and one for the outputs
// (calls), and per worker the pool's big.Ints for the largest call, inputs and outputs
// all at once (pool; porep's labelling rounds take 545).
func hintScratch(c *Compiled) (calls, pool int64) {
	var most int
	sys := &c.CS.System
	var h constraint.HintMapping
	for _, pi := range sys.Instructions {
		bh, ok := sys.Blueprints[pi.BlueprintID].(constraint.BlueprintHint)
		if !ok {
			continue
		}
		bh.DecompressHint(&h, pi.Unpack(sys))
		in, out := len(h.Inputs), int(h.OutputRange.End-h.OutputRange.Start)
		calls += allocSize(8*int64(in)) + allocSize(8*int64(out))
		most = max(most, in+out)
	}
	return calls, pooledBigInt * int64(most)
}

// goSizeClasses are the Go runtime's small-object size classes (internal/runtime/gc,
// unchanged since Go 1.21): a small allocation takes the next class up.
var goSizeClasses = [...]int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocSize is the heap an allocation of n bytes takes: a size class for small
// objects, whole 8 KiB pages for large ones.
func allocSize(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n > goSizeClasses[len(goSizeClasses)-1] {
		const page = 8 << 10
		return (n + page - 1) / page * page
	}
	for _, s := range goSizeClasses {
		if s >= n {
			return s
		}
	}
	return n
}
