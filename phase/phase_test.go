package phase_test

import (
	"testing"

	"github.com/cuzk/cuzk/phase"
)

func TestTableIsOrderedAndNested(t *testing.T) {
	all := phase.All()
	seen := map[string]bool{}
	roots := 0
	for i, p := range all {
		if p.Ord != i+1 {
			t.Errorf("%s: ord %d at position %d, want %d", p.Name, p.Ord, i, i+1)
		}
		if seen[p.Name] {
			t.Errorf("%s listed twice", p.Name)
		}
		seen[p.Name] = true
		// compare.go and operators' queries name columns this way.
		if p.Column != p.Name+"_ms" {
			t.Errorf("%s: column %q, want %q", p.Name, p.Column, p.Name+"_ms")
		}
		if p.Inside == "" {
			roots++
			continue
		}
		outer, ok := phase.Lookup(p.Inside)
		if !ok {
			t.Errorf("%s: inside unknown phase %q", p.Name, p.Inside)
			continue
		}
		if p.Inside == phase.Total {
			continue
		}
		// A nested phase comes after its outer one, with only the outer one's other
		// nested phases between them.
		if outer.Ord >= p.Ord {
			t.Errorf("%s (ord %d) is before %s (ord %d), which holds it", p.Name, p.Ord, outer.Name, outer.Ord)
		}
		for _, q := range all[outer.Ord : p.Ord-1] {
			if !within(q, outer.Name) {
				t.Errorf("%s sits between %s and %s, which it is not inside", q.Name, outer.Name, p.Name)
			}
		}
	}
	if roots != 1 || all[len(all)-1].Name != phase.Total || all[len(all)-1].Inside != "" {
		t.Errorf("want exactly one phase inside none, total, last; got %d such", roots)
	}
}

// within says whether p sits, at any depth, inside outer.
func within(p phase.Phase, outer string) bool {
	for p.Inside != "" {
		if p.Inside == outer {
			return true
		}
		p, _ = phase.Lookup(p.Inside)
	}
	return false
}

func TestStackedAreTheSequentialPhases(t *testing.T) {
	got := phase.Names(phase.Stacked())
	want := []string{"queue", "batch_wait", "mem_wait", "srs", "synth", "prove_wait", "prove", "verify", "persist"}
	if len(got) != len(want) {
		t.Fatalf("stacked %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stacked %v, want %v", got, want)
		}
	}
}

func TestOrderPutsUnknownNamesLast(t *testing.T) {
	if phase.Order(phase.Queue) != 1 || phase.Order(phase.Total) != len(phase.All()) {
		t.Errorf("Order(queue) = %d, Order(total) = %d", phase.Order(phase.Queue), phase.Order(phase.Total))
	}
	if o := phase.Order("gpu_idle"); o <= phase.Order(phase.Total) {
		t.Errorf("Order of an unknown name = %d, not after total", o)
	}
	if _, ok := phase.Lookup("gpu_idle"); ok {
		t.Error("Lookup found an unknown name")
	}
}
