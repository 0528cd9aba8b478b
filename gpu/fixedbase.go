package gpu

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// fixedBaseWindow is the window width of the generators' tables: 32 windows of 255
// points (G1 0.8 MB, G2 1.6 MB, read through L2), one mixed addition per non-zero
// digit of a scalar.
const fixedBaseWindow = 8

// FixedBase multiplies the BLS12-381 generators by many scalars on one GPU (a key
// setup's points; package setup's FixedBase). Calls are serialized on one stream.
type FixedBase struct {
	mu     sync.Mutex
	lib    *cudaLib
	ctx    *cudaCtx
	stream *cudaStream // nil once closed
	g1, g2 *fixedBaseTable
	name   string
}

// NewFixedBase loads the CUDA library, opens device dev and uploads the generators'
// window tables. An *UnavailableError means no library or no device.
func NewFixedBase(dev int) (*FixedBase, error) {
	lib, err := openLib("")
	if err != nil {
		return nil, err
	}
	ctx, err := lib.newCtx(dev)
	if err != nil {
		return nil, err
	}
	f := &FixedBase{lib: lib, ctx: ctx, name: fmt.Sprintf("cuda:%d", dev)}
	if info, err := lib.deviceInfo(dev); err == nil {
		f.name += " (" + info.Name + ")"
	}
	if f.stream, err = ctx.newStream(64 << 20); err != nil {
		f.Close()
		return nil, err
	}
	t1, t2, nwin := generatorTables(fixedBaseWindow)
	if f.g1, err = f.stream.newFixedBase(1, unsafe.Pointer(&t1[0]), fixedBaseWindow, nwin); err == nil {
		f.g2, err = f.stream.newFixedBase(2, unsafe.Pointer(&t2[0]), fixedBaseWindow, nwin)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// generatorTables are the window tables of the G1 and G2 generators: entry
// w*(2^c-1) + d-1 is d·2^(c·w)·G, for the nwin windows of c bits of a 255-bit scalar
// (a multiple of 2^(c·w) reduced mod r is the same point: G has order r).
func generatorTables(c int) ([]bls12381.G1Affine, []bls12381.G2Affine, int) {
	nwin := (fr.Bits + c - 1) / c
	per := 1<<c - 1
	s := make([]fr.Element, 0, nwin*per)
	var shift, two fr.Element
	shift.SetOne()
	two.SetUint64(2)
	for range nwin {
		var d fr.Element
		for range per {
			d.Add(&d, &shift)
			s = append(s, d)
		}
		for range c {
			shift.Mul(&shift, &two)
		}
	}
	_, _, g1, g2 := bls12381.Generators()
	return bls12381.BatchScalarMultiplicationG1(&g1, s), bls12381.BatchScalarMultiplicationG2(&g2, s), nwin
}

// Name is "cuda:N (device name)".
func (f *FixedBase) Name() string { return f.name }

// G1 computes out[i] = scalars[i]·G1 on the device.
func (f *FixedBase) G1(ctx context.Context, scalars []fr.Element, out []bls12381.G1Affine) error {
	return fixedBaseMul(ctx, f, "fixed-base G1", f.g1, scalars, out)
}

// G2 computes out[i] = scalars[i]·G2 on the device.
func (f *FixedBase) G2(ctx context.Context, scalars []fr.Element, out []bls12381.G2Affine) error {
	return fixedBaseMul(ctx, f, "fixed-base G2", f.g2, scalars, out)
}

func fixedBaseMul[P any](ctx context.Context, f *FixedBase, what string, t *fixedBaseTable, scalars []fr.Element, out []P) error {
	if len(out) != len(scalars) {
		return fmt.Errorf("%s: %d scalars, %d outputs", what, len(scalars), len(out))
	}
	if len(scalars) == 0 {
		return ctx.Err()
	}
	return f.mul(ctx, what, t, unsafe.Pointer(&scalars[0]), len(scalars), unsafe.Pointer(&out[0]))
}

func (f *FixedBase) mul(ctx context.Context, what string, t *fixedBaseTable, sc unsafe.Pointer, n int, out unsafe.Pointer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stream == nil {
		return fmt.Errorf("%s: closed", what)
	}
	return f.stream.fixedBaseMul(what, t, sc, n, out)
}

// Close releases the tables, the stream and the device context.
func (f *FixedBase) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	keep(f.g1.close())
	keep(f.g2.close())
	f.g1, f.g2 = nil, nil
	keep(f.stream.close())
	f.stream = nil
	if f.ctx != nil {
		keep(f.ctx.close())
	}
	return first
}
