package gpu

import (
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
)

type bigInt = big.Int

// Window sums come back in XYZZ (x = X/ZZ, y = Y/ZZZ). The Jacobian point with
// Z = ZZ·ZZZ, X = X·ZZ·ZZZ², Y = Y·ZZ³·ZZZ² is the same point without an inversion.

func xyzzToJacG1(w *xyzzG1) bls12381.G1Jac {
	var p bls12381.G1Jac
	zz, zzz := fp.Element(w.ZZ), fp.Element(w.ZZZ)
	if zz.IsZero() {
		p.X.SetOne()
		p.Y.SetOne()
		return p // Z = 0: infinity
	}
	x, y := fp.Element(w.X), fp.Element(w.Y)
	var zzz2, t fp.Element
	zzz2.Square(&zzz)
	p.Z.Mul(&zz, &zzz)
	p.X.Mul(&x, &zz).Mul(&p.X, &zzz2)
	t.Square(&zz).Mul(&t, &zz)
	p.Y.Mul(&y, &t).Mul(&p.Y, &zzz2)
	return p
}

func e2(v *[12]uint64) bls12381.E2 {
	var e bls12381.E2
	copy(e.A0[:], v[:6])
	copy(e.A1[:], v[6:])
	return e
}

func xyzzToJacG2(w *xyzzG2) bls12381.G2Jac {
	var p bls12381.G2Jac
	zz, zzz := e2(&w.ZZ), e2(&w.ZZZ)
	if zz.IsZero() {
		p.X.SetOne()
		p.Y.SetOne()
		return p
	}
	x, y := e2(&w.X), e2(&w.Y)
	var zzz2, t bls12381.E2
	zzz2.Square(&zzz)
	p.Z.Mul(&zz, &zzz)
	p.X.Mul(&x, &zz).Mul(&p.X, &zzz2)
	t.Square(&zz).Mul(&t, &zz)
	p.Y.Mul(&y, &t).Mul(&p.Y, &zzz2)
	return p
}

// foldG1 returns Σ_w 2^(c·w)·W_w (Horner from the top window).
func foldG1(win []xyzzG1, c int) bls12381.G1Jac {
	var acc bls12381.G1Jac
	acc.X.SetOne()
	acc.Y.SetOne()
	for w := len(win) - 1; w >= 0; w-- {
		for range c {
			acc.DoubleAssign()
		}
		p := xyzzToJacG1(&win[w])
		acc.AddAssign(&p)
	}
	return acc
}

func foldG2(win []xyzzG2, c int) bls12381.G2Jac {
	var acc bls12381.G2Jac
	acc.X.SetOne()
	acc.Y.SetOne()
	for w := len(win) - 1; w >= 0; w-- {
		for range c {
			acc.DoubleAssign()
		}
		p := xyzzToJacG2(&win[w])
		acc.AddAssign(&p)
	}
	return acc
}

// eachParallel runs f(0..n-1), on up to GOMAXPROCS goroutines when n > 1 (folding a
// batch's window sums is a few hundred point doublings per vector).
func eachParallel(n int, f func(j int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := int(next.Add(1) - 1); j < n; j = int(next.Add(1) - 1) {
				f(j)
			}
		}()
	}
	wg.Wait()
}
