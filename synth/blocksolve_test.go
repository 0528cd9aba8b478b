package synth

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
)

// blockCircuits is one or more small circuits of every built-in family.
var blockCircuits = []string{
	"porep-k16", "porep-k17", "porep-k18", // 1, 2 and 4 challenges
	"synthetic-k1", "synthetic-k10", "synthetic-k12",
	"merkle-poseidon2-d1-c1", "merkle-poseidon2-d4-c4",
	"sha256-preimage-b3",
}

// TestBlockSolveMatchesGnark: W, A, B, C (values and capacities) of solveBlocks on 1, 2
// and 4 goroutines are gnark's, for every family, with the split planBlocks finds
// whether or not SolveWitness would use it.
func TestBlockSolveMatchesGnark(t *testing.T) {
	for _, name := range blockCircuits {
		t.Run(name, func(t *testing.T) {
			c := mustCompile(t, name)
			w, err := c.Witness(mustInputs(t, name, 3))
			if err != nil {
				t.Fatal(err)
			}
			vec := w.Vector().(fr.Vector)
			want, err := gnarkSolve(c, w, vec, solver.WithNbTasks(1))
			if err != nil {
				t.Fatal(err)
			}
			plan := planBlocks(c.CS)
			if plan == nil {
				t.Fatal("no plan")
			}
			t.Logf("%d instructions: %s; used: %v", len(c.CS.Instructions), plan, c.plan != nil)
			for _, tasks := range []int{1, 2, 4} {
				cfg, err := solver.NewConfig(solver.WithNbTasks(tasks))
				if err != nil {
					t.Fatal(err)
				}
				got, err := solveBlocks(context.Background(), c, plan, vec, cfg)
				if err != nil {
					t.Fatalf("%d goroutines: %v", tasks, err)
				}
				for _, v := range [...]struct {
					name      string
					got, want fr.Vector
				}{{"W", got.W, want.W}, {"A", got.A, want.A}, {"B", got.B, want.B}} {
					if len(v.got) != len(v.want) || cap(v.got) < cap(v.want) {
						t.Fatalf("%d goroutines: %s len %d cap %d, gnark's %d, %d", tasks, v.name, len(v.got), cap(v.got), len(v.want), cap(v.want))
					}
					for i := range v.got {
						if !v.got[i].Equal(&v.want[i]) {
							t.Fatalf("%d goroutines: %s[%d] differs from gnark's", tasks, v.name, i)
						}
					}
				}
			}
		})
	}
}

// TestBlockSplitPorep: porep's challenges are independent blocks after the seed's
// bits, and SolveWitness uses the split.
func TestBlockSplitPorep(t *testing.T) {
	c := mustCompile(t, "porep-k18")
	plan := c.plan
	if plan == nil {
		t.Fatal("porep-k18 has no useful split")
	}
	n := len(c.CS.Instructions)
	t.Logf("%d instructions: %s", n, plan)
	if plan.blocks < 2 || 3*plan.largest > n || plan.suffix != n || 100*plan.prefix > n {
		t.Errorf("split %s of %d instructions: want a short prefix, no suffix, blocks of under a third", plan, n)
	}
}

// TestBlockSolveUnsatisfied: inputs that fail a constraint which solves no wire still
// solve with the block solver (the proof's verification would fail), and Check on
// that W gives gnark's error: an *InputError naming the constraint with the same
// text, and the same detail (gnark's values and debug information) behind it.
func TestBlockSolveUnsatisfied(t *testing.T) {
	for _, tc := range []struct{ circuit, key string }{
		{"porep-k18", "CommD"},       // the CommD tree's root check
		{"porep-k18", "Parents.3.1"}, // inside a challenge's block
		{"porep-k18", "CommR"},
		{"merkle-poseidon2-d4-c4", "Root"},
	} {
		c := mustCompile(t, tc.circuit)
		var in map[string]string
		if err := json.Unmarshal(mustInputs(t, tc.circuit, 5), &in); err != nil {
			t.Fatal(err)
		}
		v, ok := new(big.Int).SetString(in[tc.key], 0)
		if !ok {
			t.Fatalf("%s: %s = %q", tc.circuit, tc.key, in[tc.key])
		}
		in[tc.key] = "0x" + v.Add(v, big.NewInt(1)).Text(16)
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		w, err := c.Witness(data)
		if err != nil {
			t.Fatal(err)
		}
		vec := w.Vector().(fr.Vector)
		sol, err := SolveWitness(context.Background(), c, w, solver.WithNbTasks(2))
		if err != nil {
			t.Fatalf("%s, %s + 1: %v, want a solution whose checks are left to Check", tc.circuit, tc.key, err)
		}
		got := c.Check(context.Background(), sol.W, 2)
		_, want := gnarkSolve(c, w, vec, solver.WithNbTasks(2))
		var unsat, wantUnsat *UnsatisfiedError
		if !IsBadInput(got) || !errors.As(got, &unsat) || !errors.As(want, &wantUnsat) {
			t.Errorf("%s, %s + 1: got %v, want an unsatisfied constraint as gnark's %v", tc.circuit, tc.key, got, want)
			continue
		}
		// Where several fail, gnark's solver names one of them, Check the first.
		if first := firstUnsatisfied(c, sol.W); unsat.Constraint != first || first > wantUnsat.Constraint {
			t.Errorf("%s, %s + 1: Check named #%d; the first failing is #%d, gnark's #%d", tc.circuit, tc.key,
				unsat.Constraint, first, wantUnsat.Constraint)
		}
		if unsat.Constraint == wantUnsat.Constraint && (got.Error() != want.Error() || unsat.Detail() != wantUnsat.Detail()) {
			t.Errorf("%s, %s + 1: got %v (%q), want gnark's %v (%q)", tc.circuit, tc.key, got, unsat.Detail(), want, wantUnsat.Detail())
		}
		if tc.key != "CommR" && unsat.Constraint != wantUnsat.Constraint {
			t.Errorf("%s, %s + 1: Check named #%d, gnark's solver #%d; one constraint fails", tc.circuit, tc.key,
				unsat.Constraint, wantUnsat.Constraint)
		}
	}
}

// firstUnsatisfied is the index of the first constraint that w fails, -1 if none, from
// gnark's own decompression of each constraint.
func firstUnsatisfied(c *Compiled, w []fr.Element) int {
	eval := func(le constraint.LinearExpression) fr.Element {
		var sum, m fr.Element
		for _, t := range le {
			m.Set(&c.CS.Coefficients[t.CoeffID()])
			if !t.IsConstant() {
				m.Mul(&m, &w[t.WireID()])
			}
			sum.Add(&sum, &m)
		}
		return sum
	}
	it := c.CS.GetR1CIterator()
	for i := 0; ; i++ {
		r := it.Next()
		if r == nil {
			return -1
		}
		a, b, o := eval(r.L), eval(r.R), eval(r.O)
		if a.Mul(&a, &b); !a.Equal(&o) {
			return i
		}
	}
}

// TestBlockSolveCancelled: a cancelled context stops the block solver.
func TestBlockSolveCancelled(t *testing.T) {
	c := mustCompile(t, "porep-k18")
	w, err := c.Witness(mustInputs(t, "porep-k18", 1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg, _ := solver.NewConfig(solver.WithNbTasks(2))
	if _, err := solveBlocks(ctx, c, c.plan, w.Vector().(fr.Vector), cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestSkipBlockSplit: a registry for a process that never solves (cuzk setup) loads
// porep-k18 from the same cache file without its split, and the circuit still solves,
// with gnark's solver, to the same solution as the split one.
func TestSkipBlockSplit(t *testing.T) {
	dir := t.TempDir()
	split, err := NewRegistry(dir).Get(t.Context(), "porep-k18")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewRegistry(dir).SkipBlockSplit().Get(t.Context(), "porep-k18")
	if err != nil {
		t.Fatal(err)
	}
	if split.plan == nil || plain.plan != nil {
		t.Fatalf("split: %s; skipped: %s", split.BlockSplit(), plain.BlockSplit())
	}
	in := mustInputs(t, "porep-k18", 3)
	a, err := Solve(t.Context(), split, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Solve(t.Context(), plain, in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.W {
		if !a.W[i].Equal(&b.W[i]) {
			t.Fatalf("W[%d] differs between the split and the unsplit circuit", i)
		}
	}
}

// checkCircuit checks that X is a bit and that X·Y = Z: every wire is an input, so
// both constraints are checks with nothing to solve.
type checkCircuit struct {
	X, Y, Z frontend.Variable
}

func (c *checkCircuit) Define(api frontend.API) error {
	api.AssertIsBoolean(c.X)
	api.AssertIsEqual(api.Mul(c.X, c.Y), c.Z)
	return nil
}

// TestBlockSolveChecks: when every wire is known the block solver solves, and Check
// on its W refuses what gnark's solver refuses, with gnark's text: a bit check
// (a·b = 0) on a non-bit, a product on a wrong result.
func TestBlockSolveChecks(t *testing.T) {
	c, err := compileCircuit("checks", &checkCircuit{})
	if err != nil {
		t.Fatal(err)
	}
	// gnark's debug information, as a circuit compiled with gnark's debug tag carries
	// it (wires: 0 the constant, then X, Y, Z): the errors then quote values and the
	// call stack.
	z := constraint.Term{CID: constraint.CoeffIdOne, VID: 3}
	c.CS.AttachDebugInfo(c.CS.NewDebugInfo("assertIsEqual", z, " == ", constraint.Term{CID: constraint.CoeffIdTwo, VID: 1}), []int{0, 2})
	plan := planBlocks(c.CS)
	if plan == nil {
		t.Fatal("no plan")
	}
	cfg, err := solver.NewConfig(solver.WithNbTasks(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x, y, z int
		ok      bool
	}{
		{0, 3, 0, true}, {1, 3, 3, true}, {2, 3, 6, false}, {-1, 3, -3, false}, {1, 3, 4, false}, {0, 3, 1, false},
	} {
		w, err := frontend.NewWitness(&checkCircuit{X: tc.x, Y: tc.y, Z: tc.z}, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		vec := w.Vector().(fr.Vector)
		sol, err := solveBlocks(context.Background(), c, plan, vec, cfg)
		if err != nil {
			t.Fatalf("X=%d Y=%d Z=%d: %v", tc.x, tc.y, tc.z, err)
		}
		got := c.Check(context.Background(), sol.W, 1)
		_, want := gnarkSolve(c, w, vec, solver.WithNbTasks(1))
		if (got == nil) != tc.ok || (want == nil) != tc.ok || (got != nil && got.Error() != want.Error()) {
			t.Errorf("X=%d Y=%d Z=%d: Check %v, gnark's %v; want ok=%v", tc.x, tc.y, tc.z, got, want, tc.ok)
			continue
		}
		var unsat, wantUnsat *UnsatisfiedError
		if errors.As(got, &unsat) && errors.As(want, &wantUnsat) {
			if unsat.Detail() != wantUnsat.Detail() || unsat.Assertion != "assertIsEqual" || len(unsat.Location) == 0 {
				t.Errorf("X=%d Y=%d Z=%d: %v with detail %q; gnark's %q", tc.x, tc.y, tc.z, got, unsat.Detail(), wantUnsat.Detail())
			}
		}
	}
}

// TestGenericR1CViews: genericR1C's views of an instruction's calldata are the L, R
// and O that gnark's DecompressR1C copies out, for every R1C of circuits of each kind
// (constant terms, full-size coefficients, hints between constraints).
func TestGenericR1CViews(t *testing.T) {
	for _, name := range []string{"porep-k16", "merkle-poseidon2-d3-c1", "sha256-preimage-b32", "synthetic-k8"} {
		sys := mustCompile(t, name).CS
		var r1c constraint.R1C
		n := 0
		for _, pi := range sys.Instructions {
			bp, ok := sys.Blueprints[pi.BlueprintID].(*constraint.BlueprintGenericR1C)
			if !ok {
				continue
			}
			inst := pi.Unpack(&sys.System)
			bp.DecompressR1C(&r1c, inst)
			l, r, o := genericR1C(inst.Calldata)
			for side, pair := range [...][2]constraint.LinearExpression{{l, r1c.L}, {r, r1c.R}, {o, r1c.O}} {
				if !slices.Equal(pair[0], pair[1]) {
					t.Fatalf("%s, constraint %d, side %d: view %v, gnark's %v", name, inst.ConstraintOffset, side, pair[0], pair[1])
				}
				if cap(pair[0]) != len(pair[0]) && side < 2 {
					t.Fatalf("%s: side %d's view can grow into the next side", name, side)
				}
			}
			n++
		}
		if n != sys.GetNbConstraints() {
			t.Fatalf("%s: %d generic R1Cs, want every one of %d constraints", name, n, sys.GetNbConstraints())
		}
	}
}

// TestBlockSolveUnknowns: R1Cs whose unknown is in L, in R and in O, with
// coefficients 1, 2, −1 and 3, one whose known side is zero (gnark leaves the wire
// zero), and one whose unknown is a term past the index an r1cUnknown holds (looked
// up instead), are solved as gnark's solver solves them.
func TestBlockSolveUnknowns(t *testing.T) {
	sys := cs.NewR1CS(0)
	bp := sys.AddBlueprint(&constraint.BlueprintGenericR1C{})
	one := sys.AddPublicVariable("1")
	x, z := sys.AddSecretVariable("X"), sys.AddSecretVariable("Z")
	u, v, p, q, r, w := sys.AddInternalVariable(), sys.AddInternalVariable(), sys.AddInternalVariable(),
		sys.AddInternalVariable(), sys.AddInternalVariable(), sys.AddInternalVariable()
	term := func(cid, vid int) constraint.Term { return constraint.Term{CID: uint32(cid), VID: uint32(vid)} }
	le := func(ts ...constraint.Term) constraint.LinearExpression { return ts }
	three := sys.MakeTerm(sys.FromInterface(3), w)
	// (70·x + 2u)·1 = x solves u from L's term 70, past the index.
	var long constraint.LinearExpression
	for range 70 {
		long = append(long, term(constraint.CoeffIdOne, x))
	}
	long = append(long, term(constraint.CoeffIdTwo, u))
	sys.AddR1C(constraint.R1C{L: long, R: le(term(constraint.CoeffIdOne, one)), O: le(term(constraint.CoeffIdOne, x))}, bp)
	// u·u = 2v: v from O's term 0.
	sys.AddR1C(constraint.R1C{L: le(term(constraint.CoeffIdOne, u)), R: le(term(constraint.CoeffIdOne, u)),
		O: le(term(constraint.CoeffIdTwo, v))}, bp)
	// (x − p)·1 = v: p from L's term 1.
	sys.AddR1C(constraint.R1C{L: le(term(constraint.CoeffIdOne, x), term(constraint.CoeffIdMinusOne, p)),
		R: le(term(constraint.CoeffIdOne, one)), O: le(term(constraint.CoeffIdOne, v))}, bp)
	// x·(1 + 2q) = u: q from R's term 1.
	sys.AddR1C(constraint.R1C{L: le(term(constraint.CoeffIdOne, x)),
		R: le(term(constraint.CoeffIdOne, one), term(constraint.CoeffIdTwo, q)), O: le(term(constraint.CoeffIdOne, u))}, bp)
	// z·r = 0 with z = 0: r from R's term 0, left zero.
	sys.AddR1C(constraint.R1C{L: le(term(constraint.CoeffIdOne, z)), R: le(term(constraint.CoeffIdOne, r)), O: le()}, bp)
	// x·3w = v: w from R's term 0, coefficient 3.
	sys.AddR1C(constraint.R1C{L: le(term(constraint.CoeffIdOne, x)), R: le(three), O: le(term(constraint.CoeffIdOne, v))}, bp)
	c := &Compiled{Name: "unknowns", CS: sys}

	plan := planBlocks(sys)
	if plan == nil {
		t.Fatal("no plan")
	}
	want := []r1cUnknown{unknownAny, 3 << 6, 1<<6 | 1, 2<<6 | 1, 2 << 6, 2 << 6} // side<<6 | index
	if !slices.Equal(plan.unknown, want) {
		t.Fatalf("unknowns %v, want %v", plan.unknown, want)
	}
	wit, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	values := make(chan any, 2)
	values <- 5
	values <- 0
	close(values)
	if err := wit.Fill(0, 2, values); err != nil {
		t.Fatal(err)
	}
	vec := wit.Vector().(fr.Vector)
	ref, err := gnarkSolve(c, wit, vec)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := solver.NewConfig()
	got, err := solveBlocks(context.Background(), c, plan, vec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wantU fr.Element
	wantU.SetInt64(-5 * 69).Halve()
	if !got.W[u].Equal(&wantU) {
		t.Errorf("u = %s, want %s", got.W[u].String(), wantU.String())
	}
	for i := range ref.W {
		if !got.W[i].Equal(&ref.W[i]) {
			t.Errorf("W[%d] = %s, gnark's %s", i, got.W[i].String(), ref.W[i].String())
		}
	}
	for i := range ref.A {
		if !got.A[i].Equal(&ref.A[i]) || !got.B[i].Equal(&ref.B[i]) {
			t.Errorf("A, B[%d] differ from gnark's", i)
		}
	}
}
