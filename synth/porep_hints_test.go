package synth

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/consensys/gnark/constraint/solver"
	"github.com/consensys/gnark/frontend"
)

// wordHints is the reference for porepRoundHint: one hint call per gate word, over
// the word's operands, as the labelling was first built. Its wires and constraints
// are those of roundHint; only the hint instructions differ.
type wordHints struct{ api frontend.API }

func (wordHints) round([8]word, word, uint32) {}

func (h wordHints) next(kind int, x, y, z word) word {
	in := make([]frontend.Variable, 0, 1+3*len(x))
	in = append(in, kind)
	in = append(in, x[:]...)
	in = append(in, y[:]...)
	in = append(in, z[:]...)
	out, err := h.api.Compiler().NewHint(porepWordHint, len(x), in...)
	if err != nil {
		panic(err)
	}
	var w word
	copy(w[:], out)
	return w
}

// porepWordHint computes one word of gates: in is the gate kind, then the bits of
// three operand words; out, the result bits.
func porepWordHint(_ *big.Int, in, out []*big.Int) error {
	n := len(out)
	if len(in) != 1+3*n || !in[0].IsUint64() || in[0].Uint64() > gateXor {
		return fmt.Errorf("porep gate: %d inputs for %d outputs", len(in), n)
	}
	kind := in[0].Uint64()
	for i := range out {
		s := 0
		for _, v := range [...]*big.Int{in[1+i], in[1+n+i], in[1+2*n+i]} {
			if v.Sign() != 0 {
				s++
			}
		}
		if kind == gateMaj {
			out[i].SetUint64(uint64(s / 2))
		} else {
			out[i].SetUint64(uint64(s & 1))
		}
	}
	return nil
}

func init() { solver.RegisterHint(porepWordHint) }

// compilePorepWordHints compiles porep-k<k> with wordHints.
func compilePorepWordHints(k int) (*Compiled, error) {
	c := newPorep([]int{k}).(*porepCircuit)
	c.words = func(api frontend.API) gateWords { return wordHints{api} }
	return compileCircuit(fmt.Sprintf("porep-k%d-word-hints", k), c)
}

// TestPorepRoundHintKeepsConstraints checks that computing a round's gates in one
// hint call leaves the constraint system as one call per gate word built it: the
// same wires and the same constraints, so the same keys. Only the hint instructions
// (and the solver's dependency levels) differ.
func TestPorepRoundHintKeepsConstraints(t *testing.T) {
	round := mustCompile(t, "porep-k16")
	word, err := compilePorepWordHints(16)
	if err != nil {
		t.Fatal(err)
	}
	i1, s1, p1 := round.CS.GetNbVariables()
	i2, s2, p2 := word.CS.GetNbVariables()
	if i1 != i2 || s1 != s2 || p1 != p2 {
		t.Fatalf("variables: round hints %d/%d/%d, word hints %d/%d/%d", i1, s1, p1, i2, s2, p2)
	}
	rc, wc := round.CS.GetR1Cs(), word.CS.GetR1Cs()
	if len(rc) != len(wc) {
		t.Fatalf("%d constraints with round hints, %d with word hints", len(rc), len(wc))
	}
	for i := range rc {
		if got, want := rc[i].String(round.CS), wc[i].String(word.CS); got != want {
			t.Fatalf("constraint %d: round hints %s, word hints %s", i, got, want)
		}
	}
	if len(round.CS.Instructions) >= len(word.CS.Instructions) {
		t.Errorf("round hints: %d instructions, word hints %d: want fewer", len(round.CS.Instructions), len(word.CS.Instructions))
	}
	in := mustInputs(t, "porep-k16", 3)
	a, b := mustSolve(t, round, in), mustSolve(t, word, in)
	for i := range a.W {
		if !a.W[i].Equal(&b.W[i]) {
			t.Fatalf("wire %d: round hints %s, word hints %s", i, a.W[i].String(), b.W[i].String())
		}
	}
}

// BenchmarkSolvePorepHints is the A/B of the labelling's hints: A one call per gate
// word (wordHints), B one per round (roundHint), solved in turn in one process.
//
//	go test ./synth/ -run '^$' -bench SolvePorepHints -benchtime 12x
func BenchmarkSolvePorepHints(b *testing.B) {
	for _, k := range []int{20, 22} {
		b.Run(fmt.Sprintf("porep-k%d", k), func(b *testing.B) {
			word, err := compilePorepWordHints(k)
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("porep-k%d", k)
			solveAB(b, mustInputs(b, name, 1), [2]solveArm{{name: "word", c: word}, {name: "round", c: mustCompile(b, name)}})
		})
	}
}
