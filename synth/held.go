package synth

import (
	"unsafe"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/constraint"
)

// HeldBytes is the heap a compiled circuit holds for as long as it is kept: its
// constraint system's instructions, call data, solver levels, coefficients and names.
// It is computed once, when c is loaded, for a memory budget to reserve.
func (c *Compiled) HeldBytes() int64 { return c.held }

// heldBytes sums the capacities of the constraint system's slices and maps as the
// allocator rounds them (allocSize), the bulk of what it holds.
func heldBytes(c *Compiled) int64 {
	sys := &c.CS.System
	n := allocSize(int64(cap(sys.Instructions)) * int64(unsafe.Sizeof(constraint.PackedInstruction{})))
	n += allocSize(4 * int64(cap(sys.CallData)))
	n += allocSize(24 * int64(cap(sys.Levels)))
	for _, l := range sys.Levels {
		n += allocSize(4 * int64(cap(l)))
	}
	n += allocSize(fr.Bytes * int64(cap(c.CS.Coefficients)))
	// The coefficient index (map of fr.Element to uint32), at about twice its entries'
	// size as Go's maps hold it.
	n += 2 * (fr.Bytes + 4) * int64(len(c.CS.Coefficients))
	for _, names := range [][]string{sys.Public, sys.Secret} {
		n += allocSize(16 * int64(cap(names)))
		for _, s := range names {
			n += allocSize(int64(len(s)))
		}
	}
	n += allocSize(int64(len(sys.Blueprints)) * 64)
	// The inputs schema: per input its name, path and index.
	n += 128 * int64(len(sys.Public)+len(sys.Secret))
	// What the sum leaves out (gnark's symbol table, small maps, slice headers, and
	// the spare capacity of a system compiled here rather than read from the cache,
	// measured at 2.6% at 2^20): a fixed 64 KiB and 1/8 of the rest.
	return n + n/8 + 64<<10
}
