package prover

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
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

// cpuTuning holds the scheduling choices of the CPU backend. Each was measured A/B
// against the alternative in one run (docs/BENCHMARKS.md, "CPU prover"); they stay
// switchable so the measurement can be repeated on other machines.
type cpuTuning struct {
	nbTasks int // goroutines for FFT and pointwise work; also the MSM parallelism

	// perPolyFFT transforms a, b and c concurrently, one goroutine each, instead of
	// one after the other with nbTasks goroutines each.
	perPolyFFT bool
	// splitKZ computes Σ K·w_priv and Σ Z·h as two MSMs, as gnark does, instead of
	// one MSM over the concatenated bases.
	splitKZ bool
	// concurrentMSM runs all MSMs at once with gnark's task counts (G1: nbTasks/2,
	// G2: 2·nbTasks) instead of one after the other with msmTasks each.
	concurrentMSM bool
	msmTasks      int
	// pool runs the MSMs on nbTasks workers, largest first, each MSM single-task:
	// one Pippenger window at a time per core keeps its buckets in cache, where
	// multi-task MSMs start every window's goroutine at once.
	pool bool
	// g2Cost is the cost of a G2 base relative to a G1 base, for ordering the pool.
	g2Cost float64
	// overlapH runs H as one more job of a two-lane pool, concurrently with the MSMs
	// that do not need h (G2 first), each job using half the cores.
	overlapH bool
}

func defaultCPUTuning() cpuTuning {
	n := runtime.NumCPU()
	return cpuTuning{nbTasks: n, msmTasks: n, g2Cost: 3}
}

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
	parts := make([]Parts, len(sols))
	for i, sol := range sols {
		if err := k.pk.CheckSolution(sol); err != nil {
			return nil, times, fmt.Errorf("cpu: prove %s: solution %d: %w", k.pk.Circuit, i, err)
		}
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
	if t.overlapH {
		return c.proveOverlapped(ctx, k, sol, out, times)
	}

	t0 := time.Now()
	computeH(&pk.PK.Domain, &k.den, sol.A, sol.B, sol.C, k.kz[nPriv:], k.hb, k.hc, t.nbTasks, t.perPolyFFT)
	sol.ReleaseABC()
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

	var err error
	switch {
	case t.pool:
		err = runPool(g1, g2, t.nbTasks, t.g2Cost)
	case t.concurrentMSM:
		err = runConcurrent(g1, g2, max(1, t.nbTasks/2), 2*t.nbTasks)
	default:
		err = runSequential(g1, g2, t.msmTasks, times)
	}
	if err != nil {
		return err
	}
	if t.splitKZ {
		out.K.AddAssign(&kTail)
	}
	times.MSM += time.Since(t0)
	return nil
}

// proveOverlapped computes H and the four MSMs as jobs on two lanes: H and the G2
// MSM start together, the K‖Z MSM waits for h, the others fill in largest first.
func (c *CPU) proveOverlapped(ctx context.Context, k *cpuKey, sol *synth.Solution, out *Parts, times *PhaseTimes) error {
	pk, t := k.pk, c.tune
	nPriv, n := pk.NbPrivate(), pk.DomainSize()
	lanes := min(t.nbTasks, 2)
	per := max(1, t.nbTasks/lanes)

	t0 := time.Now()
	w := sol.W
	copy(k.kz, w[pk.NbPublic:]) // H writes kz[nPriv:]
	wA, wB := gather(k.wA, w, k.idxA), gather(k.wB, w, k.idxB)
	kzLen := nPriv + n - 1

	hDone := make(chan struct{})
	var ntt time.Duration
	jobs := []poolJob{
		{run: func() error {
			defer close(hDone) // also on panic-free early exits: KZ waits for it
			t0 := time.Now()
			computeH(&pk.PK.Domain, &k.den, sol.A, sol.B, sol.C, k.kz[nPriv:], k.hb, k.hc, per, false)
			sol.ReleaseABC()
			ntt = time.Since(t0)
			return nil
		}},
		{run: func() error { return msmG2{&out.B2, pk.PK.G2.B, wB}.run(per) }},
		{size: kzLen, after: hDone, run: func() error { return msmG1{&out.K, pk.KZ[:kzLen], k.kz[:kzLen]}.run(per) }},
		{size: len(wA), run: func() error { return msmG1{&out.A, pk.PK.G1.A, wA}.run(per) }},
		{size: len(wB), run: func() error { return msmG1{&out.B1, pk.PK.G1.B, wB}.run(per) }},
	}
	// H and G2 first; then the G1 MSMs, largest first.
	rest := jobs[2:]
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].size > rest[j].size })
	if err := runJobs(ctx, jobs, lanes); err != nil {
		return err
	}
	times.NTT += ntt
	times.MSM += time.Since(t0) // overlaps the NTT
	return nil
}

// poolJob is one unit of work for runJobs; it may wait for another job (after).
type poolJob struct {
	size  int // for ordering
	after <-chan struct{}
	run   func() error
}

// runJobs runs jobs on lanes goroutines, each taking the first job in order whose
// dependency is done, and stops starting jobs once one fails or ctx is done.
func runJobs(ctx context.Context, jobs []poolJob, lanes int) error {
	var (
		mu       sync.Mutex
		pending  = slices.Clone(jobs)
		firstErr error
		wg       sync.WaitGroup
	)
	ready := func(j poolJob) bool {
		if j.after == nil {
			return true
		}
		select {
		case <-j.after:
			return true
		default:
			return false
		}
	}
	next := func() (poolJob, <-chan struct{}, bool) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil || len(pending) == 0 {
			return poolJob{}, nil, false
		}
		if err := ctx.Err(); err != nil {
			firstErr = err
			return poolJob{}, nil, false
		}
		for i, j := range pending {
			if ready(j) {
				pending = slices.Delete(pending, i, i+1)
				return j, nil, true
			}
		}
		return poolJob{}, pending[0].after, true // wait for a dependency, then retry
	}
	for range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, wait, ok := next()
				if !ok {
					return
				}
				if wait != nil {
					<-wait
					continue
				}
				if err := j.run(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("MSM: %w", err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
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

func runSequential(g1 []msmG1, g2 msmG2, nbTasks int, times *PhaseTimes) error {
	t0 := time.Now()
	for _, m := range g1 {
		if err := m.run(nbTasks); err != nil {
			return fmt.Errorf("G1 MSM: %w", err)
		}
	}
	t1 := time.Now()
	if err := g2.run(nbTasks); err != nil {
		return fmt.Errorf("G2 MSM: %w", err)
	}
	times.MSMG1 += t1.Sub(t0)
	times.MSMG2 += time.Since(t1)
	return nil
}

// runConcurrent starts every MSM at once, as gnark's prover does.
func runConcurrent(g1 []msmG1, g2 msmG2, g1Tasks, g2Tasks int) error {
	errs := make(chan error, len(g1)+1)
	for _, m := range g1 {
		go func() { errs <- m.run(g1Tasks) }()
	}
	go func() { errs <- g2.run(g2Tasks) }()
	var first error
	for range len(g1) + 1 {
		if err := <-errs; err != nil && first == nil {
			first = fmt.Errorf("MSM: %w", err)
		}
	}
	return first
}

// runPool runs the MSMs, each with one task, on nbWorkers goroutines, largest first.
func runPool(g1 []msmG1, g2 msmG2, nbWorkers int, g2Cost float64) error {
	type job struct {
		cost float64
		run  func() error
	}
	jobs := make([]job, 0, len(g1)+1)
	for _, m := range g1 {
		jobs = append(jobs, job{float64(len(m.bases)), func() error { return m.run(1) }})
	}
	jobs = append(jobs, job{g2Cost * float64(len(g2.bases)), func() error { return g2.run(1) }})
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].cost > jobs[j].cost })

	queue := make(chan job, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	errs := make(chan error, nbWorkers)
	for range nbWorkers {
		go func() {
			for j := range queue {
				if err := j.run(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range nbWorkers {
		if err := <-errs; err != nil && first == nil {
			first = fmt.Errorf("MSM: %w", err)
		}
	}
	return first
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
