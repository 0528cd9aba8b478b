package setup

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"math/bits"
	"time"
	"unsafe"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	gcunsafe "github.com/consensys/gnark-crypto/utils/unsafe"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// header is the part of the proving key WriteDump writes before its point vectors.
type header struct {
	domain                   *fft.Domain
	g1Alpha, g1Beta, g1Delta curve.G1Affine
	g2Beta, g2Delta          curve.G2Affine
	infA, infB               []bool
	nbWires, nbInfA, nbInfB  uint64
}

// smallPoints computes the key's single points and the verifying key.
func smallPoints(ctx context.Context, mul FixedBase, r1cs *cs.R1CS, q *qap, tw *toxicWaste) (*groth16bls.VerifyingKey, *header, error) {
	g1 := make([]curve.G1Affine, 3+len(q.vkK))
	g1s := append([]fr.Element{tw.alpha, tw.beta, tw.delta}, q.vkK...)
	if err := mul.G1(ctx, g1s, g1); err != nil {
		return nil, nil, fmt.Errorf("setup: [α]₁, [β]₁, [δ]₁, vk K: %w", err)
	}
	g2 := make([]curve.G2Affine, 3)
	if err := mul.G2(ctx, []fr.Element{tw.beta, tw.delta, tw.gamma}, g2); err != nil {
		return nil, nil, fmt.Errorf("setup: [β]₂, [δ]₂, [γ]₂: %w", err)
	}
	for i := range g1s {
		g1s[i].SetZero()
	}
	vk := new(groth16bls.VerifyingKey)
	vk.G1.Alpha, vk.G1.Beta, vk.G1.Delta = g1[0], g1[1], g1[2]
	vk.G1.K = g1[3:]
	vk.G2.Beta, vk.G2.Delta, vk.G2.Gamma = g2[0], g2[1], g2[2]
	vk.PublicAndCommitmentCommitted = [][]int{}
	if err := vk.Precompute(); err != nil {
		return nil, nil, fmt.Errorf("setup: verifying key: %w", err)
	}
	h := &header{
		g1Alpha: g1[0], g1Beta: g1[1], g1Delta: g1[2], g2Beta: g2[0], g2Delta: g2[1],
		infA: q.infA, infB: q.infB,
		nbWires: uint64(q.nbWires), nbInfA: uint64(q.nbInfA), nbInfB: uint64(q.nbInfB),
	}
	return vk, h, nil
}

// keyWriter writes the proving key in WriteDump's byte layout, computing each point
// vector chunk by chunk while the previous chunk is written.
type keyWriter struct {
	w     io.Writer
	mul   FixedBase
	chunk int
	phase func(string, time.Duration)
	wrote time.Duration // writer's busy time
}

func (kw *keyWriter) write(ctx context.Context, h *header, q *qap, domain *fft.Domain, tw *toxicWaste) error {
	if err := gcunsafe.WriteMarker(kw.w); err != nil {
		return err
	}
	if _, err := h.domain.WriteTo(kw.w); err != nil {
		return err
	}
	enc := curve.NewEncoder(kw.w, curve.RawEncoding())
	for _, v := range []any{&h.g1Alpha, &h.g1Beta, &h.g1Delta, &h.g2Beta, &h.g2Delta,
		h.nbWires, h.nbInfA, h.nbInfB, h.infA, h.infB, uint32(0)} {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	if err := writeG1(ctx, kw, "g1.A", q.A); err != nil {
		return err
	}
	if err := writeG1(ctx, kw, "g1.B", q.B); err != nil {
		return err
	}
	z := zScalars(domain, tw)
	if err := writeG1(ctx, kw, "g1.Z", z); err != nil {
		return err
	}
	clear(z)
	if err := writeG1(ctx, kw, "g1.K", q.K); err != nil {
		return err
	}
	if err := writeVector(ctx, kw, "g2.B", q.B, kw.mul.G2); err != nil {
		return err
	}
	kw.phase("write", kw.wrote)
	return nil
}

func writeG1(ctx context.Context, kw *keyWriter, name string, s []fr.Element) error {
	return writeVector(ctx, kw, name, s, kw.mul.G1)
}

// writeVector writes len(s) and the points s[i]·G as WriteDump does (unsafe.WriteSlice:
// a little-endian uint64 length, then the points' memory), computing chunk k+1 while
// chunk k is written.
func writeVector[P any](ctx context.Context, kw *keyWriter, name string, s []fr.Element, mul func(context.Context, []fr.Element, []P) error) error {
	start := time.Now()
	if err := binary.Write(kw.w, binary.LittleEndian, uint64(len(s))); err != nil {
		return err
	}
	bufs := [2][]P{make([]P, min(kw.chunk, len(s))), make([]P, min(kw.chunk, max(len(s)-kw.chunk, 0)))}
	written := make(chan error, 1)
	written <- nil
	for k, lo := 0, 0; lo < len(s); k, lo = k+1, lo+kw.chunk {
		hi := min(lo+kw.chunk, len(s))
		out := bufs[k%2][:hi-lo]
		if err := mul(ctx, s[lo:hi], out); err != nil {
			<-written
			return fmt.Errorf("setup: %s points %d-%d: %w", name, lo, hi, err)
		}
		if err := <-written; err != nil {
			return err
		}
		go func() {
			t := time.Now()
			_, err := kw.w.Write(pointBytes(out))
			kw.wrote += time.Since(t)
			written <- err
		}()
	}
	if err := <-written; err != nil {
		return err
	}
	kw.phase(name, time.Since(start))
	return nil
}

// pointBytes is the memory of pts, as unsafe.WriteSlice writes it.
func pointBytes[P any](pts []P) []byte {
	if len(pts) == 0 {
		return nil
	}
	var p P
	return unsafe.Slice((*byte)(unsafe.Pointer(&pts[0])), int(unsafe.Sizeof(p))*len(pts))
}

// zScalars are the scalars of the key's Z points as gnark's Setup orders them:
// (τ^n - 1)/δ · τ^i for i < n, bit-reversed, the last one dropped (deg H = n-2).
func zScalars(domain *fft.Domain, tw *toxicWaste) []fr.Element {
	n := int(domain.Cardinality)
	z := make([]fr.Element, n)
	zdt := vanishing(&tw.t, domain.Cardinality)
	zdt.Mul(&zdt, &tw.deltaInv)
	parallel(n, func(lo, hi int) {
		var v fr.Element
		v.Exp(tw.t, bigU(uint64(lo)))
		v.Mul(&v, &zdt)
		for i := lo; i < hi; i++ {
			z[i] = v
			v.Mul(&v, &tw.t)
		}
	})
	nn := uint(bits.UintSize - bits.TrailingZeros(uint(n)))
	parallel(n, func(lo, hi int) {
		for i := uint(lo); i < uint(hi); i++ {
			if r := bits.Reverse(i) >> nn; r > i {
				z[i], z[r] = z[r], z[i]
			}
		}
	})
	return z[:n-1]
}

func bigU(v uint64) *big.Int { return new(big.Int).SetUint64(v) }
