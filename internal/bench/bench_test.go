package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// squares proves knowledge of X[i] with X[i]² = Y[i]·Pub for all i.
type squares struct {
	Pub frontend.Variable `gnark:",public"`
	X   []frontend.Variable
}

func (c *squares) Define(api frontend.API) error {
	for _, x := range c.X {
		api.Mul(api.Mul(x, x), api.Add(x, c.Pub))
	}
	return nil
}

func testCase(t *testing.T, n int, withKey bool) Case {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &squares{X: make([]frontend.Variable, n)})
	if err != nil {
		t.Fatal(err)
	}
	a := &squares{X: make([]frontend.Variable, n)}
	rnd := func() *big.Int {
		var e fr.Element
		e.SetRandom()
		return e.BigInt(new(big.Int))
	}
	a.Pub = rnd()
	for i := range a.X {
		a.X[i] = rnd()
	}
	w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Name: "squares", CCS: ccs.(*cs.R1CS), Witness: w}
	if withKey {
		c.PK, c.VK = new(groth16bls.ProvingKey), new(groth16bls.VerifyingKey)
		if err := groth16bls.Setup(c.CCS, c.PK, c.VK); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

var speedupLine = regexp.MustCompile(`^speedup_vs_gnark: \d+\.\d\d$`)

func TestRunComparesAndEndsWithSpeedup(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), Options{Case: testCase(t, 300, true), Runs: 3, Compare: "gnark"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if !speedupLine.MatchString(lines[len(lines)-1]) {
		t.Fatalf("last line %q is not a speedup line; output:\n%s", lines[len(lines)-1], out.String())
	}
	if n := strings.Count(out.String(), "speedup_vs_gnark:"); n != 1 {
		t.Fatalf("%d speedup lines, want 1", n)
	}
	for _, want := range []string{"run 1: cuzk", "| gnark", "run 3:", "cuzk median of 3", "gnark groth16.Prove median of 3", "ntt", "msm"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "random") {
		t.Error("a real key must not be reported as random")
	}
}

func TestMeasureWithRandomKeyAndNoComparison(t *testing.T) {
	var log bytes.Buffer
	var progress []string
	onRun := func(done, total int) { progress = append(progress, fmt.Sprintf("%d/%d", done, total)) }
	res, err := Measure(context.Background(), Options{Case: testCase(t, 200, false), Runs: 2, OnRun: onRun}, &log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(progress, " "); got != "1/2 2/2" {
		t.Errorf("progress calls %q, want \"1/2 2/2\"", got)
	}
	if !res.RandomKey || len(res.Ours) != 2 || res.Gnark != nil || res.Speedup() != 0 {
		t.Fatalf("result: %+v", res)
	}
	for _, s := range res.Ours {
		if s.Solve <= 0 || s.Prove <= 0 || s.Phases.MSM <= 0 {
			t.Fatalf("sample not timed: %+v", s)
		}
	}
	if !strings.Contains(log.String(), "timing only") {
		t.Fatalf("a random key must be announced:\n%s", log.String())
	}
	var out bytes.Buffer
	res.Print(&out)
	if strings.Contains(out.String(), "speedup_vs_gnark") || !strings.Contains(out.String(), "timing only") {
		t.Fatalf("print without comparison:\n%s", out.String())
	}
}

func TestMeasureErrors(t *testing.T) {
	c := testCase(t, 10, false)
	if _, err := Measure(context.Background(), Options{Case: c, Compare: "arkworks"}, nil); err == nil {
		t.Fatal("unknown reference accepted")
	}
	if _, err := Measure(context.Background(), Options{Case: Case{Name: "empty"}}, nil); err == nil {
		t.Fatal("empty case accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, Options{Case: c}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// A key that does not belong to the witness's circuit is caught by verification.
	bad := testCase(t, 10, true)
	other := testCase(t, 10, true)
	bad.VK = other.VK
	if _, err := Measure(context.Background(), Options{Case: bad, Runs: 1}, nil); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("wrong vk: %v", err)
	}
}
