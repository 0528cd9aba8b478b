package prover

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/synth"
)

// CPU is a Backend on gnark-crypto's MSM and FFT. It proves the solutions of a batch
// one after the other, each using all cores, against one resident key.
type CPU struct {
	tune cpuTuning
}

// cpuTuning holds the CPU backend's scheduling choices. Alternatives measured A/B
// against gnark in one run and dropped for not winning (docs/lab/BENCHMARKS.md, "CPU
// prover"): the a/b/c transforms on one goroutine each; all MSMs at once with gnark's
// task counts (lost ~15%); a two-lane pool of single-task MSMs, with or without H
// overlapped with the G2 MSM. splitKZ stays switchable for BenchmarkCPUTuning.
type cpuTuning struct {
	nbTasks int // goroutines for the FFTs and pointwise work, and NbTasks of each MSM

	// splitKZ computes Σ K·w_priv and Σ Z·h as two MSMs, as gnark does, instead of
	// one MSM over the concatenated bases (one set of bucket reductions, not two).
	splitKZ bool
}

func defaultCPUTuning() cpuTuning { return cpuTuning{nbTasks: runtime.NumCPU()} }

// NewCPU returns the CPU backend.
func NewCPU() *CPU { return &CPU{tune: defaultCPUTuning()} }

// Name implements Backend.
func (*CPU) Name() string { return "cpu" }

// Close implements Backend; the CPU backend holds nothing beyond its keys.
func (*CPU) Close() error { return nil }

// cpuKey is a ProvingKey made ready for repeated proving: wire-filter index lists and
// scratch buffers sized once, so a proof allocates nothing proportional to the circuit.
type cpuKey struct {
	pk  *ProvingKey
	den fr.Element // 1/(g^n − 1), see hDenominator

	// idxA/idxB list the wires whose A/B base is not infinity; nil when none is.
	idxA, idxB []int32

	// mu guards the scratch buffers below: one proof at a time per key.
	mu     sync.Mutex
	wA, wB []fr.Element // filtered wire values (unused when idxA/idxB is nil)
	kz     []fr.Element // w_priv ‖ h: the scalars of the K‖Z MSM; h has the domain's length
	hb, hc []fr.Element // FFT scratch for b and c
}

func (k *cpuKey) Bytes() int64 {
	pk := k.pk
	const g1, g2, f = 96, 192, fr.Bytes
	bases := int64(len(pk.PK.G1.A)+len(pk.PK.G1.B)+len(pk.KZ))*g1 + int64(len(pk.PK.G2.B))*g2
	scratch := int64(len(k.wA)+len(k.wB)+len(k.kz)+len(k.hb)+len(k.hc))*f + int64(len(k.idxA)+len(k.idxB))*4
	return bases + scratch
}

func (k *cpuKey) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.wA, k.wB, k.kz, k.hb, k.hc = nil, nil, nil, nil, nil
	return nil
}

// LoadKey implements Backend.
func (c *CPU) LoadKey(ctx context.Context, pk *ProvingKey) (Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(pk.KZ) != pk.NbPrivate()+pk.DomainSize()-1 {
		return nil, fmt.Errorf("cpu: load key %s: not built with NewProvingKey", pk.Circuit)
	}
	n := pk.DomainSize()
	k := &cpuKey{
		pk:   pk,
		den:  hDenominator(&pk.PK.Domain),
		idxA: nonInfinity(pk.PK.InfinityA, int(pk.PK.NbInfinityA)),
		idxB: nonInfinity(pk.PK.InfinityB, int(pk.PK.NbInfinityB)),
		kz:   make([]fr.Element, pk.NbPrivate()+n),
		hb:   make([]fr.Element, n),
		hc:   make([]fr.Element, n),
	}
	if k.idxA != nil {
		k.wA = make([]fr.Element, len(k.idxA))
	}
	if k.idxB != nil {
		k.wB = make([]fr.Element, len(k.idxB))
	}
	return k, nil
}

// nonInfinity returns the indexes i with !inf[i], or nil if there is no infinity.
func nonInfinity(inf []bool, nbInf int) []int32 {
	if nbInf == 0 {
		return nil
	}
	idx := make([]int32, 0, len(inf)-nbInf)
	for i, v := range inf {
		if !v {
			idx = append(idx, int32(i))
		}
	}
	return idx
}

// Prove implements Backend. It releases each solution's A/B/C once H is computed.
func (c *CPU) Prove(ctx context.Context, key Key, sols []*synth.Solution) ([]Parts, PhaseTimes, error) {
	var times PhaseTimes
	k, ok := key.(*cpuKey)
	if !ok {
		return nil, times, fmt.Errorf("cpu: prove: key of type %T was not loaded by the cpu backend", key)
	}
	start := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kz == nil {
		return nil, times, fmt.Errorf("cpu: prove %s: key is closed", k.pk.Circuit)
	}
	for i, sol := range sols { // refuse a bad batch before spending time on it
		if err := k.pk.CheckSolution(sol); err != nil {
			return nil, times, fmt.Errorf("cpu: prove %s: solution %d: %w", k.pk.Circuit, i, err)
		}
	}
	parts := make([]Parts, len(sols))
	for i, sol := range sols {
		if err := ctx.Err(); err != nil {
			return nil, times, err
		}
		if err := c.proveOne(ctx, k, sol, &parts[i], &times); err != nil {
			return nil, times, fmt.Errorf("cpu: prove %s: solution %d: %w", k.pk.Circuit, i, err)
		}
	}
	times.Total = time.Since(start)
	return parts, times, nil
}

func (c *CPU) proveOne(ctx context.Context, k *cpuKey, sol *synth.Solution, out *Parts, times *PhaseTimes) error {
	pk, t := k.pk, c.tune
	nPriv := pk.NbPrivate()

	t0 := time.Now()
	computeH(&pk.PK.Domain, &k.den, sol.A, sol.B, k.kz[nPriv:], k.hb, k.hc, t.nbTasks)
	sol.ReleaseAB()
	times.NTT += time.Since(t0)
	if err := ctx.Err(); err != nil {
		return err
	}

	t0 = time.Now()
	w := sol.W
	copy(k.kz, w[pk.NbPublic:])
	wA, wB := gather(k.wA, w, k.idxA), gather(k.wB, w, k.idxB)
	kzLen := nPriv + pk.DomainSize() - 1 // deg h ≤ n−2: the last h entry has no base

	g1 := []msmG1{
		{&out.A, pk.PK.G1.A, wA},
		{&out.B1, pk.PK.G1.B, wB},
	}
	var kTail bls12381.G1Jac
	if t.splitKZ {
		g1 = append(g1, msmG1{&out.K, pk.KZ[:nPriv], k.kz[:nPriv]}, msmG1{&kTail, pk.KZ[nPriv:kzLen], k.kz[nPriv:kzLen]})
	} else {
		g1 = append(g1, msmG1{&out.K, pk.KZ[:kzLen], k.kz[:kzLen]})
	}
	g2 := msmG2{&out.B2, pk.PK.G2.B, wB}

	// One MSM after the other, each on all cores: on 2 cores this matched or beat
	// every concurrent schedule tried, and it is the simplest.
	if err := runSequential(ctx, g1, g2, t.nbTasks, times); err != nil {
		return err
	}
	if t.splitKZ {
		out.K.AddAssign(&kTail)
	}
	times.MSM += time.Since(t0)
	return nil
}

type msmG1 struct {
	out    *bls12381.G1Jac
	bases  []bls12381.G1Affine
	scalar []fr.Element
}

type msmG2 struct {
	out    *bls12381.G2Jac
	bases  []bls12381.G2Affine
	scalar []fr.Element
}

func (m msmG1) run(nbTasks int) error {
	if len(m.bases) == 0 {
		m.out.FromAffine(&bls12381.G1Affine{}) // infinity
		return nil
	}
	_, err := m.out.MultiExp(m.bases, m.scalar, ecc.MultiExpConfig{NbTasks: nbTasks})
	return err
}

func (m msmG2) run(nbTasks int) error {
	if len(m.bases) == 0 {
		m.out.FromAffine(&bls12381.G2Affine{}) // infinity
		return nil
	}
	_, err := m.out.MultiExp(m.bases, m.scalar, ecc.MultiExpConfig{NbTasks: nbTasks})
	return err
}

// runSequential runs the MSMs one after the other, checking ctx between them.
func runSequential(ctx context.Context, g1 []msmG1, g2 msmG2, nbTasks int, times *PhaseTimes) error {
	t0 := time.Now()
	for _, m := range g1 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.run(nbTasks); err != nil {
			return fmt.Errorf("G1 MSM: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t1 := time.Now()
	if err := g2.run(nbTasks); err != nil {
		return fmt.Errorf("G2 MSM: %w", err)
	}
	times.MSMG1 += t1.Sub(t0)
	times.MSMG2 += time.Since(t1)
	return nil
}

// gather returns w filtered to the indexes idx, written into dst; w itself if idx is nil.
func gather(dst, w []fr.Element, idx []int32) []fr.Element {
	if idx == nil {
		return w
	}
	for j, i := range idx {
		dst[j] = w[i]
	}
	return dst
}

// KeyHostBytes implements HostMemory: a key's buffers of LoadKey (the private
// witness with h, the FFT scratch, the A and B witness gathers and their indexes) and
// the scratch of the largest of its MSMs, which run one after the other.
func (c *CPU) KeyHostBytes(nbWires, nbPublic, domain int) int64 {
	const f = fr.Bytes
	w, n := int64(nbWires), int64(domain)
	priv := w - int64(nbPublic)
	buffers := (priv+n)*f + 2*n*f + 2*w*f + 2*w*4
	return buffers + max(msmScratch(priv+n, 96+192+1), msmScratch(w, 96+192+1), msmScratch(w, 192+384+1))
}

// msmScratch bounds what gnark-crypto's MSM of n points allocates: per window of c
// bits (c about log2(n) - 3), 2^(c-1) buckets of perBucket bytes (an extended
// Jacobian point, an affine one for the batched additions, a flag), and a 16-bit
// digit per point and window. Measured at 2^16 (porep-k16): 21 MiB for the K and Z
// MSM (c = 13) against 27 MiB here, 13 MiB for the G2 one (c = 11) against 14 MiB.
func msmScratch(n, perBucket int64) int64 {
	if n <= 0 {
		return 0
	}
	c := max(int64(bits.Len64(uint64(n)))-4, 2)
	windows := (fr.Bits + c - 1) / c
	return windows * (int64(1)<<(c-1)*perBucket + 2*n)
}

// HostBytes implements HostMemory: the CPU backend holds nothing beside its keys.
func (c *CPU) HostBytes() int64 { return 0 }
