package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/synth"
)

func TestMeasureSolves(t *testing.T) {
	const name = "porep-k16"
	c, err := synth.NewRegistry("").Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := synth.Inputs(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, share := range []Sharing{ShareSplit, ShareLine} {
		rates, err := MeasureSolves(context.Background(), c, inputs, []int{1, 2}, 2, share, synth.Solve)
		if err != nil {
			t.Fatal(err)
		}
		if len(rates) != 2 || rates[0].Concurrency != 1 || rates[1].Concurrency != 2 {
			t.Fatalf("%s: rates %+v", share, rates)
		}
		for _, r := range rates {
			if len(r.Rounds) != 2 || len(r.First) != 2 || r.Median() <= 0 || r.ConstraintsPerSec(c.NbConstraints()) <= 0 {
				t.Errorf("%s: rate %+v", share, r)
			}
			for i := range r.Rounds {
				if r.First[i] <= 0 || r.First[i] > r.Rounds[i] {
					t.Errorf("%s: round %d: first solution at %v of %v", share, i, r.First[i], r.Rounds[i])
				}
			}
		}
	}

	// Another root does not satisfy the circuit: the error names it.
	var in map[string]string
	if err := json.Unmarshal(inputs, &in); err != nil {
		t.Fatal(err)
	}
	in["CommR"] = "1"
	bad, _ := json.Marshal(in)
	_, err = MeasureSolves(context.Background(), c, bad, []int{2}, 1, ShareNone, synth.SolveLevels)
	var unsat *synth.UnsatisfiedError
	if !errors.As(err, &unsat) || !strings.Contains(err.Error(), "solve "+name+" (2 at once)") {
		t.Errorf("bad inputs: %v", err)
	}
	if _, err := MeasureSolves(context.Background(), c, inputs, []int{0}, 1, ShareNone, synth.Solve); err == nil {
		t.Error("concurrency 0 accepted")
	}

	rss, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 {
		t.Errorf("peak RSS %d bytes", rss)
	}
}
