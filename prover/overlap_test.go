package prover

import (
	"testing"

	"github.com/cuzk/cuzk/synth"
)

func TestOverlapVariantParts(t *testing.T) {
	for _, c := range []struct{ lanes, depth int }{{1, 1}, {5, 2}, {16, 2}} {
		tc := compileLanes(t, c.lanes, c.depth)
		pk, vk := tc.setup(t)
		be := &CPU{tune: defaultCPUTuning()}
		be.tune.overlapH = true
		k, _ := be.LoadKey(t.Context(), pk)
		proofs, _, err := Prove(t.Context(), be, pk, k, []*synth.Solution{tc.solve(t), tc.solve(t)})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range proofs {
			if err := verifyGnark(t, vk, p, tc.public); err != nil {
				t.Fatal(err)
			}
		}
	}
}
