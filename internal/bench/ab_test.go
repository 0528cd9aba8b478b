package bench

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/regress"
)

func TestMeasureABInterleavesArms(t *testing.T) {
	var log bytes.Buffer
	before := runtime.GOMAXPROCS(0)
	res, err := MeasureAB(context.Background(), testCase(t, 200, true),
		[2]Arm{{Name: "A", Threads: 1}, {Name: "B"}}, 3, &log)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOMAXPROCS(0) != before {
		t.Errorf("GOMAXPROCS left at %d, was %d", runtime.GOMAXPROCS(0), before)
	}
	for i, r := range res {
		if len(r.Ours) != 3 || r.RandomKey {
			t.Fatalf("arm %d: %d runs, random key %v", i, len(r.Ours), r.RandomKey)
		}
		for _, s := range r.Ours {
			if s.Solve <= 0 || s.Prove <= 0 || s.Verify <= 0 || s.At.IsZero() {
				t.Fatalf("arm %d: sample not timed: %+v", i, s)
			}
		}
		for _, phase := range []string{"synth", "prove", "ntt", "msm", "verify", "total"} {
			if n := len(r.Samples()[regress.Key{Source: "bench", Circuit: "squares", Phase: phase}]); n != 3 {
				t.Errorf("arm %d: %d %s samples, want 3", i, n, phase)
			}
		}
	}
	// Alternating order: A first in odd runs, B first in even ones.
	var order []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.HasPrefix(l, "run ") {
			order = append(order, strings.Fields(l)[2])
		}
	}
	want := []string{"A:", "B:", "B:", "A:", "A:", "B:"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("run order %v, want %v\n%s", order, want, log.String())
	}
}
