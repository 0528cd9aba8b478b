package synth

import (
	"sort"
	"strings"
	"testing"
)

// MaxInputsBytes is no less than the longest inputs of a circuit that Witness
// accepts: every input in fully nested objects, each value 78 digits, written as
// jsonb writes it. WitnessBytes is the length of gnark's full-witness binary.
func TestRequestSizeBounds(t *testing.T) {
	for _, name := range []string{badInputCircuit, "synthetic-k6", "sha256-preimage-b4"} {
		t.Run(name, func(t *testing.T) {
			c := mustCompile(t, name)
			longest := jsonbText(nestedInputs(c.inputs().names, "0"+strings.Repeat("0", maxDecimalDigits-2)+"1"))
			if _, err := c.Witness([]byte(longest)); err != nil {
				t.Fatalf("the longest inputs: %v", err)
			}
			t.Logf("%d inputs: longest inputs %d bytes, MaxInputsBytes %d", c.nbInputs(), len(longest), c.MaxInputsBytes())
			if limit := c.MaxInputsBytes(); int64(len(longest)) > limit {
				t.Errorf("inputs of %d bytes accepted, MaxInputsBytes %d", len(longest), limit)
			}
			if w := mustWitness(t, name); int64(len(w)) != c.WitnessBytes() {
				t.Errorf("witness binary of %d bytes, WitnessBytes %d", len(w), c.WitnessBytes())
			}
		})
	}
}

// nestedInputs gives every input value v, each dotted name split into nested objects.
func nestedInputs(names []string, v string) map[string]any {
	root := map[string]any{}
	for _, name := range names {
		node := root
		segs := strings.Split(name, ".")
		for _, seg := range segs[:len(segs)-1] {
			child, ok := node[seg].(map[string]any)
			if !ok {
				child = map[string]any{}
				node[seg] = child
			}
			node = child
		}
		node[segs[len(segs)-1]] = v
	}
	return root
}

// jsonbText writes an object of strings and objects as PostgreSQL writes a jsonb.
func jsonbText(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"` + k + `": `)
		switch v := m[k].(type) {
		case string:
			b.WriteString(`"` + v + `"`)
		case map[string]any:
			b.WriteString(jsonbText(v))
		}
	}
	b.WriteByte('}')
	return b.String()
}
