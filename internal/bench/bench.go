// Package bench times cuzk's prover against gnark's groth16.Prove on the same circuit
// and witness, in one process and one run: the two are interleaved (alternating which
// goes first) so that drift on a shared machine affects both alike, and the result is
// the ratio of medians. It backs `cuzk bench --compare gnark`.
//
// Our path is what a worker does per proof: solve (synthesis) and prove on a resident
// key. gnark's groth16.Prove also solves, so both sides do the same work.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// Case is the circuit and witness to prove.
type Case struct {
	Name string
	CCS  *cs.R1CS
	// Witness is the full gnark witness; gnark's groth16.Prove solves it.
	Witness witness.Witness
	// Solve is our synthesis, as the worker runs it (e.g. synth.Solve on the inputs).
	// Nil means gnark's solver on Witness, packed as synth packs a solution.
	Solve func(ctx context.Context) (*synth.Solution, error)
	// PK is the proving key. Nil means a random key of the circuit's shape
	// (prover.RandomKeyFor): timing only, proofs are not verified.
	PK *groth16bls.ProvingKey
	// VK, when set, verifies each of our proofs (outside the timed region).
	VK *groth16bls.VerifyingKey
}

// Options configure a benchmark.
type Options struct {
	Case Case
	// Backend proves our side; nil means the CPU backend.
	Backend prover.Backend
	// Runs is the number of timed runs of each prover, after one untimed warm-up
	// each. Default 5.
	Runs int
	// Compare names the reference: "" (ours only) or "gnark".
	Compare string
	// OnRun, when set, is called after each timed run with the runs done and the total
	// (a progress bar).
	OnRun func(done, total int)
}

// Run measures and prints per-run and median numbers to out. With Compare "gnark"
// its output ends with exactly one line "speedup_vs_gnark: X.XX" (gnark's median
// time over ours).
func Run(ctx context.Context, opts Options, out io.Writer) error {
	res, err := Measure(ctx, opts, out)
	if err != nil {
		return err
	}
	res.Print(out)
	return nil
}

// Sample is one timed run of our path.
type Sample struct {
	Solve, Prove time.Duration // Prove is prover.Prove's wall time
	Phases       prover.PhaseTimes
	Verify       time.Duration // outside the timed region; 0 when not verified
	At           time.Time     // when the timed region ended
}

// Total is solve plus prove.
func (s Sample) Total() time.Duration { return s.Solve + s.Prove }

// Result holds every run of a benchmark.
type Result struct {
	Case, Backend string
	Constraints   int
	Wires, Domain int
	RandomKey     bool          // the key is timing-only: proofs were not verified
	KeyLoad       time.Duration // Backend.LoadKey
	Ours          []Sample
	Gnark         []time.Duration // nil without a comparison
}

// Speedup is gnark's median time over ours (0 without a comparison).
func (r *Result) Speedup() float64 {
	if len(r.Gnark) == 0 {
		return 0
	}
	return float64(Median(r.Gnark)) / float64(Median(r.oursTotal()))
}

func (r *Result) oursTotal() []time.Duration {
	d := make([]time.Duration, len(r.Ours))
	for i, s := range r.Ours {
		d[i] = s.Total()
	}
	return d
}

// Measure runs the benchmark and returns its numbers; progress lines go to log
// (may be nil).
func Measure(ctx context.Context, opts Options, log io.Writer) (*Result, error) {
	c := opts.Case
	if c.CCS == nil || c.Witness == nil {
		return nil, errors.New("bench: the case needs a constraint system and a full witness")
	}
	if opts.Compare != "" && opts.Compare != "gnark" {
		return nil, fmt.Errorf("bench: unknown reference %q (want gnark)", opts.Compare)
	}
	if opts.Runs <= 0 {
		opts.Runs = 5
	}
	b := opts.Backend
	if b == nil {
		b = prover.NewCPU()
	}
	if log == nil {
		log = io.Discard
	}

	gpk, random, err := caseKey(c, log)
	if err != nil {
		return nil, err
	}
	o, err := newOurs(ctx, c, gpk, random, b)
	if err != nil {
		return nil, err
	}
	defer o.close()
	res := o.result()
	fmt.Fprintf(log, "circuit %s: %d constraints, %d wires, domain %d; backend %s; GOMAXPROCS %d; key load %s\n",
		c.Name, res.Constraints, res.Wires, res.Domain, res.Backend, runtime.GOMAXPROCS(0), ms(res.KeyLoad))

	ours := func() (Sample, error) { return o.run(ctx) }
	gnark := func() (time.Duration, error) {
		runtime.GC()
		t0 := time.Now()
		if _, err := groth16.Prove(c.CCS, gpk, c.Witness); err != nil {
			return 0, fmt.Errorf("gnark prove: %w", err)
		}
		return time.Since(t0), nil
	}

	// Warm-up: first-touch page faults, lazily built tables.
	if _, err := ours(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if opts.Compare != "" {
		if _, err := gnark(); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	for i := range opts.Runs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var s Sample
		var g time.Duration
		var err error
		if opts.Compare != "" && i%2 == 1 {
			if g, err = gnark(); err == nil {
				s, err = ours()
			}
		} else {
			if s, err = ours(); err == nil && opts.Compare != "" {
				g, err = gnark()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("bench: run %d: %w", i+1, err)
		}
		res.Ours = append(res.Ours, s)
		line := fmt.Sprintf("run %d: cuzk %s (solve %s, prove %s: ntt %s, msm %s)",
			i+1, ms(s.Total()), ms(s.Solve), ms(s.Prove), ms(s.Phases.NTT), ms(s.Phases.MSM))
		if opts.Compare != "" {
			res.Gnark = append(res.Gnark, g)
			line += fmt.Sprintf(" | gnark %s", ms(g))
		}
		fmt.Fprintln(log, line)
		if opts.OnRun != nil {
			opts.OnRun(i+1, opts.Runs)
		}
	}
	return res, nil
}

// caseKey is the case's proving key, or a random one of its shape (timing only).
func caseKey(c Case, log io.Writer) (*groth16bls.ProvingKey, bool, error) {
	if c.PK != nil {
		return c.PK, false, nil
	}
	gpk, err := prover.RandomKeyFor(c.Name, c.CCS)
	if err != nil {
		return nil, false, fmt.Errorf("bench: %w", err)
	}
	fmt.Fprintf(log, "note: random proving key (timing only): proofs are not verified\n")
	return gpk, true, nil
}

// ourSide is our path on one backend, with the key resident: what a worker does per proof.
type ourSide struct {
	c       Case
	b       prover.Backend
	pk      *prover.ProvingKey
	key     prover.Key
	solve   func(ctx context.Context) (*synth.Solution, error)
	random  bool // the key is timing-only
	keyLoad time.Duration
}

func newOurs(ctx context.Context, c Case, gpk *groth16bls.ProvingKey, random bool, b prover.Backend) (*ourSide, error) {
	pk, err := prover.NewProvingKey(c.Name, gpk, c.CCS.GetNbConstraints())
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	t0 := time.Now()
	key, err := b.LoadKey(ctx, pk)
	if err != nil {
		return nil, fmt.Errorf("bench: load key on %s: %w", b.Name(), err)
	}
	o := &ourSide{c: c, b: b, pk: pk, key: key, solve: c.Solve, random: random, keyLoad: time.Since(t0)}
	if o.solve == nil {
		o.solve = func(context.Context) (*synth.Solution, error) { return solveWitness(c) }
	}
	return o, nil
}

func (o *ourSide) close() { o.key.Close() }

// result is an empty Result describing this side.
func (o *ourSide) result() *Result {
	return &Result{
		Case: o.c.Name, Backend: o.b.Name(), Constraints: o.pk.NbConstraints, Wires: o.pk.NbWires,
		Domain: o.pk.DomainSize(), RandomKey: o.random, KeyLoad: o.keyLoad,
	}
}

// run proves once, timed; the proof is verified after the timed region.
func (o *ourSide) run(ctx context.Context) (Sample, error) {
	runtime.GC() // start each run without the previous one's garbage
	var s Sample
	t0 := time.Now()
	sol, err := o.solve(ctx)
	if err != nil {
		return s, fmt.Errorf("solve: %w", err)
	}
	public := sol.Public
	t1 := time.Now()
	proofs, phases, err := prover.Prove(ctx, o.b, o.pk, o.key, []*synth.Solution{sol})
	if err != nil {
		return s, err
	}
	s = Sample{Solve: t1.Sub(t0), Prove: time.Since(t1), Phases: phases}
	s.At = t0.Add(s.Total())
	if o.c.VK != nil && !o.random {
		t2 := time.Now()
		if err := prover.VerifyProof(o.c.VK, proofs[0], public); err != nil {
			return s, fmt.Errorf("our proof does not verify: %w", err)
		}
		s.Verify = time.Since(t2)
	}
	return s, nil
}

// Print writes the medians; with a comparison the last line is
// "speedup_vs_gnark: X.XX".
func (r *Result) Print(out io.Writer) {
	col := func(f func(Sample) time.Duration) time.Duration {
		d := make([]time.Duration, len(r.Ours))
		for i, s := range r.Ours {
			d[i] = f(s)
		}
		return Median(d)
	}
	fmt.Fprintf(out, "cuzk median of %d: total %s, solve %s, prove %s (ntt %s, msm %s: g1 %s, g2 %s)\n",
		len(r.Ours), ms(Median(r.oursTotal())), ms(col(func(s Sample) time.Duration { return s.Solve })),
		ms(col(func(s Sample) time.Duration { return s.Prove })),
		ms(col(func(s Sample) time.Duration { return s.Phases.NTT })),
		ms(col(func(s Sample) time.Duration { return s.Phases.MSM })),
		ms(col(func(s Sample) time.Duration { return s.Phases.MSMG1 })),
		ms(col(func(s Sample) time.Duration { return s.Phases.MSMG2 })))
	if r.RandomKey {
		fmt.Fprintln(out, "key: random (timing only, proofs not verified)")
	}
	if len(r.Gnark) == 0 {
		return
	}
	ratios := make([]float64, len(r.Gnark))
	for i := range r.Gnark {
		ratios[i] = float64(r.Gnark[i]) / float64(r.Ours[i].Total())
	}
	slices.Sort(ratios)
	fmt.Fprintf(out, "gnark groth16.Prove median of %d (solve + prove): %s\n", len(r.Gnark), ms(Median(r.Gnark)))
	fmt.Fprintf(out, "per-run ratio gnark/cuzk: min %.2f, median %.2f, max %.2f\n", ratios[0], medianF(ratios), ratios[len(ratios)-1])
	fmt.Fprintf(out, "speedup_vs_gnark: %.2f\n", r.Speedup())
}

// solveWitness solves the case with gnark's solver, packed as synth does.
func solveWitness(c Case) (*synth.Solution, error) {
	res, err := c.CCS.Solve(c.Witness)
	if err != nil {
		return nil, err
	}
	sol := res.(*cs.R1CSSolution)
	pub, err := c.Witness.Public()
	if err != nil {
		return nil, err
	}
	pubBytes, err := pub.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return &synth.Solution{Circuit: c.Name, W: sol.W, A: sol.A, B: sol.B,
		NbPublic: c.CCS.GetNbPublicVariables(), Public: pubBytes}, nil
}

// SynthCase is the case for a synth circuit and its inputs JSON: our side solves with
// synth.Solve (inputs parsing included, as the worker does).
func SynthCase(compiled *synth.Compiled, inputs []byte, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) (Case, error) {
	w, err := compiled.Witness(inputs)
	if err != nil {
		return Case{}, fmt.Errorf("bench: %w", err)
	}
	return Case{
		Name:    compiled.Name,
		CCS:     compiled.CS,
		Witness: w,
		Solve:   func(ctx context.Context) (*synth.Solution, error) { return synth.Solve(ctx, compiled, inputs) },
		PK:      pk,
		VK:      vk,
	}, nil
}

// Median is the middle of d (the mean of the two middle values for an even count).
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianF(s []float64) float64 { // s sorted
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
