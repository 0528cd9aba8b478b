package setup

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// qap holds the QAP polynomials of every wire evaluated at τ, as gnark's setupABC
// defines them: A[i] = Σ_j a_ij·L_j(τ) over the constraints j where wire i appears in
// the left side with coefficient a_ij (B: right, C: output), L_j the j-th Lagrange
// polynomial of the domain.
type qap struct {
	A, B []fr.Element // then the non-zero ones only, in wire order (the key's G1.A, G1.B/G2.B scalars)
	// K is (β·A_i + α·B_i + C_i)/δ for the private wires i ≥ nbPublic, in the array
	// that held C (so memory holds three vectors of wires, not four).
	K   []fr.Element
	vkK []fr.Element // the same over γ for the public wires

	infA, infB     []bool
	nbInfA, nbInfB int
	nbWires        int
	nbPublic       int
}

// hotWires are accumulated per worker rather than under a lock: the constant wire 0
// and the first wires appear in a large share of all constraints, and locking them
// would serialize the workers.
const hotWires = 256

// lockStripes guard the accumulators of the other wires (wire mod lockStripes): a
// worker holds one stripe for one term's three additions.
const lockStripes = 1 << 12

// qapBlock is how many constraints a worker evaluates L_j for at a time (one batch
// inversion).
const qapBlock = 1 << 12

// evalQAP evaluates the QAP at τ on every core. The constraints are split into
// contiguous ranges, one worker each; a worker computes L_j(τ) for its constraints
// directly (c·ω^j/(τ-ω^j), c = (τ^n-1)/n, with block batch inversions) and adds its
// terms into the shared A, B, C under striped locks. Field addition commutes, so the
// result does not depend on the order the workers add in.
func evalQAP(ctx context.Context, r1cs *cs.R1CS, domain *fft.Domain, tw *toxicWaste) (*qap, error) {
	nbWires := r1cs.NbInternalVariables + r1cs.GetNbPublicVariables() + r1cs.GetNbSecretVariables()
	nbPublic := r1cs.GetNbPublicVariables()
	q := &qap{
		A: make([]fr.Element, nbWires), B: make([]fr.Element, nbWires), K: make([]fr.Element, nbWires),
		nbWires: nbWires, nbPublic: nbPublic,
	}

	// Instruction ranges and the index of each range's first constraint, counted as
	// gnark's R1C iterator counts them (instructions that are not R1Cs count none).
	nbInst := r1cs.GetNbInstructions()
	nbTasks := runtime.GOMAXPROCS(0)
	nbRanges := min(max(nbInst/qapBlock, 1), 8*nbTasks)
	type span struct{ lo, hi, j0 int }
	spans := make([]span, 0, nbRanges)
	j := 0
	for r := range nbRanges {
		lo, hi := r*nbInst/nbRanges, (r+1)*nbInst/nbRanges
		spans = append(spans, span{lo, hi, j})
		for i := lo; i < hi; i++ {
			if _, ok := r1cs.Blueprints[r1cs.Instructions[i].BlueprintID].(constraint.BlueprintR1C); ok {
				j++
			}
		}
	}
	if j != r1cs.GetNbConstraints() {
		return nil, fmt.Errorf("setup: %d R1C instructions for %d constraints", j, r1cs.GetNbConstraints())
	}

	c := vanishing(&tw.t, domain.Cardinality) // then (τ^n - 1)/n
	c.Mul(&c, &domain.CardinalityInv)

	var locks [lockStripes]sync.Mutex
	hot := min(hotWires, nbWires)
	var mergeMu sync.Mutex
	work := make(chan span)
	var wg sync.WaitGroup
	for range nbTasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hA, hB, hC := make([]fr.Element, hot), make([]fr.Element, hot), make([]fr.Element, hot)
			acc := accumulator{r1cs: r1cs}
			var r1c constraint.R1C
			den := make([]fr.Element, qapBlock)
			wj := make([]fr.Element, qapBlock)
			scratch := make([]fr.Element, qapBlock)
			for sp := range work {
				if ctx.Err() != nil {
					continue
				}
				var w fr.Element
				w.Exp(domain.Generator, bigU(uint64(sp.j0)))
				i := sp.lo
				for i < sp.hi {
					// Gather up to qapBlock R1Cs' ω^j, then invert τ-ω^j together.
					m := 0
					first := i
					for ; i < sp.hi && m < qapBlock; i++ {
						if _, ok := r1cs.Blueprints[r1cs.Instructions[i].BlueprintID].(constraint.BlueprintR1C); ok {
							wj[m] = w
							den[m].Sub(&tw.t, &w)
							w.Mul(&w, &domain.Generator)
							m++
						}
					}
					batchInvert(den[:m], scratch[:m])
					k := 0
					for x := first; x < i; x++ {
						inst := r1cs.Instructions[x]
						bc, ok := r1cs.Blueprints[inst.BlueprintID].(constraint.BlueprintR1C)
						if !ok {
							continue
						}
						bc.DecompressR1C(&r1c, inst.Unpack(&r1cs.System))
						var L fr.Element
						L.Mul(&c, &wj[k]).Mul(&L, &den[k])
						k++
						acc.add(r1c.L, &L, q.A, hA, &locks)
						acc.add(r1c.R, &L, q.B, hB, &locks)
						acc.add(r1c.O, &L, q.K, hC, &locks)
					}
				}
			}
			mergeMu.Lock()
			for x := range hot {
				q.A[x].Add(&q.A[x], &hA[x])
				q.B[x].Add(&q.B[x], &hB[x])
				q.K[x].Add(&q.K[x], &hC[x])
			}
			mergeMu.Unlock()
		}()
	}
	for _, sp := range spans {
		work <- sp
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// K, then the infinity markers and the compaction of A and B to their non-zero
	// entries (the order gnark's Setup does them in: K uses A and B whole).
	q.vkK = make([]fr.Element, nbPublic)
	parallel(nbWires, func(lo, hi int) {
		var t0, t1 fr.Element
		for i := lo; i < hi; i++ {
			t1.Mul(&q.A[i], &tw.beta)
			t0.Mul(&q.B[i], &tw.alpha)
			t1.Add(&t1, &t0).Add(&t1, &q.K[i])
			if i < nbPublic {
				q.vkK[i].Mul(&t1, &tw.gammaInv)
			} else {
				q.K[i].Mul(&t1, &tw.deltaInv)
			}
		}
	})
	q.K = q.K[nbPublic:]
	q.infA, q.nbInfA, q.A = compact(q.A)
	q.infB, q.nbInfB, q.B = compact(q.B)
	return q, ctx.Err()
}

// zero clears the scalars (they are the toxic waste's images).
func (q *qap) zero() {
	clear(q.A)
	clear(q.B)
	clear(q.K)
	clear(q.vkK)
}

// accumulator adds a linear expression's terms times L into the wire accumulators.
type accumulator struct{ r1cs *cs.R1CS }

func (a accumulator) add(terms []constraint.Term, L *fr.Element, dst, hot []fr.Element, locks *[lockStripes]sync.Mutex) {
	for _, t := range terms {
		var v fr.Element
		switch cID := t.CoeffID(); cID {
		case constraint.CoeffIdZero:
			continue
		case constraint.CoeffIdOne:
			v = *L
		case constraint.CoeffIdMinusOne:
			v.Neg(L)
		case constraint.CoeffIdTwo:
			v.Double(L)
		default:
			v.Mul(&a.r1cs.Coefficients[cID], L)
		}
		w := int(t.WireID())
		if w < len(hot) {
			hot[w].Add(&hot[w], &v)
			continue
		}
		mu := &locks[w%lockStripes]
		mu.Lock()
		dst[w].Add(&dst[w], &v)
		mu.Unlock()
	}
}

// batchInvert replaces each a[i] by its inverse (Montgomery's trick), scratch as long
// as a; a zero stays zero.
func batchInvert(a, scratch []fr.Element) {
	acc := fr.One()
	for i := range a {
		scratch[i] = acc
		if !a[i].IsZero() {
			acc.Mul(&acc, &a[i])
		}
	}
	acc.Inverse(&acc)
	for i := len(a) - 1; i >= 0; i-- {
		if a[i].IsZero() {
			continue
		}
		var t fr.Element
		t.Mul(&acc, &scratch[i])
		acc.Mul(&acc, &a[i])
		a[i] = t
	}
}

// compact marks a's zero entries and moves the others to its front, in order.
func compact(a []fr.Element) (inf []bool, nbInf int, rest []fr.Element) {
	inf = make([]bool, len(a))
	n := 0
	for i := range a {
		if a[i].IsZero() {
			inf[i] = true
			continue
		}
		a[n] = a[i]
		n++
	}
	return inf, len(a) - n, a[:n]
}

// parallel runs f over [0, n) split into one contiguous range per core.
func parallel(n int, f func(lo, hi int)) {
	tasks := min(runtime.GOMAXPROCS(0), max(n/1024, 1))
	var wg sync.WaitGroup
	for k := range tasks {
		lo, hi := k*n/tasks, (k+1)*n/tasks
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}
