package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// jsonSplit is PartitionInputs's reference: encoding/json's elements of a JSON array.
func jsonSplit(data []byte) ([][]byte, bool) {
	var parts []json.RawMessage
	if json.Unmarshal(data, &parts) != nil || parts == nil {
		return nil, false
	}
	out := make([][]byte, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, true
}

func sameParts(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// PartitionInputs gives encoding/json's elements for valid arrays (PostgreSQL's text
// of jsonb and other spacing; strings holding brackets, quotes and escapes; scalars),
// and an error naming what is wrong for what is not an array of n values.
func TestPartitionInputs(t *testing.T) {
	for _, in := range []string{
		`[{"X": "1"}, {"X": "2"}]`,
		`[{"X":"1"},{"X":"2"}]`,
		" [ {\"X\" : \"1\"} ,\n\t{\"Y\": [1, [2, {\"z\": \"]}\"}]]} ] \n",
		`[{"a]": "}[", "b\"": "\\", "c": "\\\"]"}, {"d": "\u005d"}]`,
		`[{"nested": {"deep": [[[]]], "e": {}}}, {}]`,
		`[1, -2.5e3, "s", true, false, null, [], {}]`,
		`[]`,
	} {
		want, ok := jsonSplit([]byte(in))
		if !ok {
			t.Fatalf("bad test input %s", in)
		}
		got, err := PartitionInputs([]byte(in), len(want))
		if err != nil || !sameParts(got, want) {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
		for i, p := range got { // views of one buffer: an append must not reach the next
			if cap(p) != len(p) {
				t.Errorf("%s: partition %d has capacity %d past its %d bytes", in, i, cap(p), len(p))
			}
		}
	}
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{`{"X": "1"}`, 1, "not a JSON array"},
		{``, 1, "not a JSON array"},
		{`[{"X": "1"}]`, 2, "1 inputs for 2 partitions"},
		{`[{"X": "1"}, {"X": "2"}, {"X": "3"}]`, 2, "more than 2 inputs for 2 partitions"},
		{`[{"X": "1"}`, 1, "the array does not end"},
		{`[{"X": "1"]`, 1, `element 0 at byte 1: ']' where '}' was expected`},
		{`[{"X": "1}]`, 1, "element 0 at byte 1: unterminated string"},
		{`[{"X": [1}]`, 1, `'}' where ']' was expected`},
		{`[{"X": "1"} {"X": "2"}]`, 2, `'{' after element 0 at byte 12`},
		{`[{"X": "1"}] x`, 1, "data after the array at byte 12"},
		{`[{"X": "1"}, ]`, 1, "more than 1 inputs"},
	} {
		_, err := PartitionInputs([]byte(c.in), c.n)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q (n=%d): %v, want an error containing %q", c.in, c.n, err, c.want)
		}
	}
}

// FuzzPartitionInputs: on any bytes PartitionInputs returns without panicking, and on
// a valid JSON array it gives encoding/json's elements.
func FuzzPartitionInputs(f *testing.F) {
	for _, s := range []string{`[{"X": "1"}, {"X": "2"}]`, `[{"a]": "}[\"\\"}]`, `[1, [2], {"3": [4]}]`, `[`, `]`, `["\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, ok := jsonSplit(data)
		n := len(want)
		if !ok {
			n = 2
		}
		got, err := PartitionInputs(data, n)
		if ok && (err != nil || !sameParts(got, want)) {
			t.Fatalf("%q: got %q, %v; want %s", data, got, err, fmt.Sprint(want))
		}
	})
}

// BenchmarkPartitionInputs splits a C2-sized array (10 partitions of 3.7 MB of
// "name": "0x…" pairs, porep-k27's shape) by brackets and through encoding/json, the
// reference, in the same run: go test ./store/ -run '^$' -bench PartitionInputs.
func BenchmarkPartitionInputs(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('[')
	for p := range 10 {
		if p > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('{')
		for k := range 45_000 {
			if k > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, `"Parents.%d.%d": "0x%064x"`, k/14, k%14, k*7919+p)
		}
		sb.WriteByte('}')
	}
	sb.WriteByte(']')
	data := []byte(sb.String())
	for _, s := range []struct {
		name  string
		split func() error
	}{
		{"brackets", func() error { _, err := PartitionInputs(data, 10); return err }},
		{"encoding-json", func() error {
			if _, ok := jsonSplit(data); !ok {
				return fmt.Errorf("not an array")
			}
			return nil
		}},
	} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := s.split(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
