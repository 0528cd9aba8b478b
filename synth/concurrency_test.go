package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
)

// TestConcurrentSolve shares one compiled circuit between concurrent Solve calls on
// different inputs, through a shared registry (run with -race).
func TestConcurrentSolve(t *testing.T) {
	const name = "merkle-poseidon2-d4-c2"
	reg := NewRegistry(t.TempDir())
	inputs := make([][]byte, 4)
	for i := range inputs {
		inputs[i] = mustInputs(t, name, uint64(i))
	}
	want := make([]*Solution, len(inputs))
	c, err := reg.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range inputs {
		want[i] = mustSolve(t, c, in)
	}

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			c, err := reg.Get(context.Background(), name)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 3 {
				k := (g + i) % len(inputs)
				sol, err := Solve(context.Background(), c, inputs[k])
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.Equal(sol.W, want[k].W) || !slices.Equal(sol.A, want[k].A) || !slices.Equal(sol.B, want[k].B) || !bytes.Equal(sol.Public, want[k].Public) {
					t.Errorf("goroutine %d: solution for input %d differs", g, k)
				}
			}
		})
	}
	wg.Wait()
}

// TestInputsNamesMatchCompiled: Inputs names its keys from the Go structs, Witness
// from the compiled R1CS; both must list the same inputs in the same order.
func TestInputsNamesMatchCompiled(t *testing.T) {
	for _, name := range []string{"synthetic-k8", "merkle-poseidon2-d3-c2", "sha256-preimage-b3", "porep-k17"} {
		c := mustCompile(t, name)
		dec := json.NewDecoder(bytes.NewReader(mustInputs(t, name, 1)))
		var keys []string
		dec.Token()
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			dec.Token()
		}
		if !slices.Equal(keys, c.inputs().names) {
			t.Errorf("%s: Inputs keys %v, compiled names %v", name, keys, c.inputs().names)
		}
	}
}
