package synth

import (
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/bandersnatch"
	jubjub "github.com/consensys/gnark-crypto/ecc/bls12-381/twistededwards"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/std/algebra/emulated/fields_bls12381"
	"github.com/consensys/gnark/std/algebra/emulated/fields_bn254"
	"github.com/consensys/gnark/std/algebra/emulated/fields_bw6761"
	"github.com/consensys/gnark/std/algebra/emulated/sw_bls12381"
	"github.com/consensys/gnark/std/algebra/emulated/sw_bn254"
	"github.com/consensys/gnark/std/algebra/emulated/sw_bw6761"
	"github.com/consensys/gnark/std/algebra/emulated/sw_emulated"
	"github.com/consensys/gnark/std/algebra/native/fields_bls12377"
	"github.com/consensys/gnark/std/algebra/native/fields_bls24315"
	"github.com/consensys/gnark/std/algebra/native/sw_bls12377"
	"github.com/consensys/gnark/std/algebra/native/sw_bls24315"
	"github.com/consensys/gnark/std/algebra/native/twistededwards"
	"github.com/consensys/gnark/std/conversion"
	"github.com/consensys/gnark/std/evmprecompiles"
	"github.com/consensys/gnark/std/hash/sha3"
	"github.com/consensys/gnark/std/math/bits"
	"github.com/consensys/gnark/std/math/bitslice"
	"github.com/consensys/gnark/std/math/cmp"
	"github.com/consensys/gnark/std/math/emulated"
	"github.com/consensys/gnark/std/math/uints"
	"github.com/consensys/gnark/std/rangecheck"
	"github.com/consensys/gnark/std/selector"
)

// Solver hints. gnark's standard library (twisted Edwards and emulated arithmetic,
// bit decomposition, comparisons, range checks, …) computes some wires outside the
// constraint system, through hints that the solver looks up by name. Every R1CS cuzk
// solves (built-in or imported) may use any of them, so they are all registered when
// this package is loaded.
//
// The list is the one of gnark's std.RegisterHints (github.com/consensys/gnark/std,
// hints.go), whose package cannot be imported here: its init registers every hint a
// second time, and gnark logs each repetition on stdout before main can silence it.
// TestStandardHintsCoverGnarkStd checks that the two lists agree.
//
// A circuit with a hint of its own needs that hint linked into the cuzk binary: add a
// file to this package that calls solver.RegisterHint(myHint) from an init function,
// where myHint is the very function the circuit was compiled with (the solver finds
// it by its Go name, package path included), and rebuild.
func standardHints() []solver.Hint {
	var hints []solver.Hint
	for _, get := range []func() []solver.Hint{
		bits.GetHints, cmp.GetHints, selector.GetHints, emulated.GetHints, rangecheck.GetHints,
		evmprecompiles.GetHints, bitslice.GetHints, sha3.GetHints, uints.GetHints, conversion.GetHints,
		fields_bls12381.GetHints, fields_bn254.GetHints, fields_bw6761.GetHints,
		fields_bls12377.GetHints, fields_bls24315.GetHints, twistededwards.GetHints,
		sw_emulated.GetHints, sw_bw6761.GetHints, sw_bls12377.GetHints, sw_bls24315.GetHints,
		// Registered by their own packages' init, which std links through evmprecompiles.
		sw_bls12381.GetHints, sw_bn254.GetHints,
	} {
		hints = append(hints, get()...)
	}
	return hints
}

func init() {
	// gnark's twisted Edwards hints multiply points on Jubjub and Bandersnatch (the
	// curves over BLS12-381's scalar field) with gnark-crypto, whose curve parameters
	// are set up only by GetEdwardsCurve: a process that never called it (one that
	// solves a circuit compiled elsewhere) gets wrong points and an unsatisfied
	// constraint.
	jubjub.GetEdwardsCurve()
	bandersnatch.GetEdwardsCurve()

	known := map[solver.HintID]bool{}
	for _, h := range solver.GetRegisteredHints() {
		known[solver.GetHintID(h)] = true
	}
	for _, h := range standardHints() {
		if id := solver.GetHintID(h); !known[id] {
			solver.RegisterHint(h)
			known[id] = true
		}
	}
}

// guarded is opts with guardHints last, for every solve: each hint the solver may
// call is wrapped so that a panic becomes the hint's error. A hint can panic on values it was
// not written for (a division by zero, an index out of range), and those values come
// from a submitter's inputs; the solvers call hints on goroutines of their own, where a
// panic would end the process and every request in it.
func guarded(opts []solver.Option) []solver.Option {
	return append(opts[:len(opts):len(opts)], guardHints())
}

func guardHints() solver.Option {
	return func(c *solver.Config) error {
		for id, h := range c.HintFunctions {
			c.HintFunctions[id] = guardHint(h)
		}
		return nil
	}
}

func guardHint(h solver.Hint) solver.Hint {
	return func(q *big.Int, in, out []*big.Int) (err error) {
		defer func() {
			// The panic's own text is left out: it may quote a value computed from
			// the private inputs ("index out of range [13]").
			if recover() != nil {
				err = fmt.Errorf("hint %s panicked", solver.GetHintName(h))
			}
		}()
		return h(q, in, out)
	}
}
