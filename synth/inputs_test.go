package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
)

const badInputCircuit = "merkle-poseidon2-d2-c2"

// flatInputs returns the canonical inputs of badInputCircuit as a map.
func flatInputs(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustInputs(t, badInputCircuit, 5), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func with(m map[string]any, kv ...any) map[string]any {
	out := maps.Clone(m)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadInputs(t *testing.T) {
	c := mustCompile(t, badInputCircuit)
	flat := flatInputs(t)
	r := fr.Modulus()
	rMinus1 := new(big.Int).Sub(r, big.NewInt(1))
	good := mustSolve(t, c, marshal(t, flat))
	wit, err := good.Witness.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	nested := map[string]any{
		"Root":       flat["Root"],
		"Challenges": []any{flat["Challenges.0"], flat["Challenges.1"]},
		"Leaves":     []any{flat["Leaves.0"], flat["Leaves.1"]},
		"Path": []any{
			[]any{flat["Path.0.0"], flat["Path.0.1"]},
			[]any{flat["Path.1.0"], flat["Path.1.1"]},
		},
	}
	nonCanonical := bytes.Clone(wit)
	copy(nonCanonical[witnessHeaderSize+fr.Bytes*3:], r.FillBytes(make([]byte, fr.Bytes))) // input 3 = Leaves.0

	cases := []struct {
		name   string
		input  []byte
		field  string // "" when no single field is at fault
		errHas string
	}{
		{"empty", nil, "", "inputs JSON is empty"},
		{"malformed JSON", []byte(`{"Root": `), "", "malformed inputs JSON"},
		{"malformed JSON token", []byte(`{"Root": 0x12}`), "", "malformed inputs JSON"},
		{"not an object", []byte(`["1"]`), "", "must be an object, got an array"},
		{"trailing data", append(marshal(t, flat), []byte(` {}`)...), "", "after the top-level object"},
		{"missing field", marshal(t, with(flat, "Path.1.0", nil)), "Path.1.0", "missing field"},
		{"missing fields", marshal(t, with(flat, "Root", nil, "Leaves.1", nil)), "Root", "(and 1 more missing)"},
		{"unknown field", marshal(t, with(flat, "Bogus", "1")), "Bogus", "unknown field"},
		{"index out of range", marshal(t, with(flat, "Path.2.0", "1")), "Path.2", "Path has indices 0..1"},
		{"inner index out of range", marshal(t, with(flat, "Path.0.7", "1")), "Path.0.7", "Path.0 has indices 0..1"},
		{"below a leaf", marshal(t, with(flat, "Root.0", "1")), "Root.0", "Root is a single value"},
		{"array too long", marshal(t, with(nested, "Leaves", []any{"1", "2", "3"})), "Leaves", "wrong array length: got more than 2 elements, want 2"},
		{"array too short", marshal(t, with(nested, "Path", []any{[]any{"1"}, []any{"1", "2"}})), "Path.0", "wrong array length: got 1 elements, want 2"},
		{"array for a leaf", marshal(t, with(flat, "Root", []any{"1"})), "Root", "expected a decimal or 0x-hex string, got an array"},
		{"object for a leaf", marshal(t, with(flat, "Root", map[string]any{})), "Root", "got an object"},
		{"value for an array", marshal(t, with(nested, "Path", "5")), "Path", "expected an array of length 2, got a string"},
		{"JSON null value", []byte(strings.Replace(string(marshal(t, flat)), `"Root":"`+flat["Root"].(string)+`"`, `"Root":null`, 1)), "Root", "got null"},
		{"bool", marshal(t, with(flat, "Leaves.0", true)), "Leaves.0", "got true"},
		{"value = r", marshal(t, with(flat, "Root", r.String())), "Root", "not less than the BLS12-381 scalar field modulus r"},
		{"hex value = r", marshal(t, with(flat, "Root", "0x"+r.Text(16))), "Root", "not less than"},
		{"huge value", marshal(t, with(flat, "Root", "0x1"+strings.Repeat("0", 200))), "Root", "value has 201 hex digits, a field element at most 64"},
		{"huge decimal", marshal(t, with(flat, "Root", strings.Repeat("9", 79))), "Root", "value has 79 decimal digits, a field element at most 78"},
		{"64 hex digits, not below r", marshal(t, with(flat, "Root", "0x"+strings.Repeat("f", 64))), "Root", "not less than"},
		{"huge field name", marshal(t, with(flat, strings.Repeat("k", 5000), "1")), strings.Repeat("k", 5000), "unknown field"},
		// Refused by the digit count before any parsing: a huge value costs no more
		// than reading it.
		{"8M decimal digits", marshal(t, with(flat, "Root", strings.Repeat("1", 8_000_000))), "Root", "value has 8000000 decimal digits, a field element at most 78"},
		{"100k-digit number", []byte(`{"Root": ` + strings.Repeat("9", 100_000) + `}`), "Root", "value has 100000 decimal digits, a field element at most 78"},
		{"huge negative number", []byte(`{"Root": -1` + strings.Repeat("0", 100_000) + `}`), "Root", "negative value -10000000000"},
		{"empty object", marshal(t, with(nested, "Path", map[string]any{})), "Path", "empty object"},
		{"empty nested object", marshal(t, with(flat, "Path", map[string]any{"0": map[string]any{}})), "Path.0", "empty object"},
		{"negative", marshal(t, with(flat, "Leaves.1", "-5")), "Leaves.1", "negative value -5"},
		{"negative hex", marshal(t, with(flat, "Leaves.1", "-0x5")), "Leaves.1", "negative value"},
		{"non-numeric", marshal(t, with(flat, "Leaves.1", "abc")), "Leaves.1", `"abc" is not a decimal or 0x-hex integer`},
		{"bad hex digit", marshal(t, with(flat, "Leaves.1", "0x12g")), "Leaves.1", "not a decimal or 0x-hex integer"},
		{"space", marshal(t, with(flat, "Leaves.1", " 5")), "Leaves.1", "not a decimal"},
		{"plus sign", marshal(t, with(flat, "Leaves.1", "+5")), "Leaves.1", "not a decimal"},
		{"underscore", marshal(t, with(flat, "Leaves.1", "1_000")), "Leaves.1", "not a decimal"},
		{"exponent string", marshal(t, with(flat, "Leaves.1", "1e3")), "Leaves.1", "not a decimal"},
		{"empty string", marshal(t, with(flat, "Leaves.1", "")), "Leaves.1", "empty value"},
		{"bare 0x", marshal(t, with(flat, "Leaves.1", "0x")), "Leaves.1", `"0x" has no digits`},
		{"fractional number", []byte(`{"Root": 1.5}`), "Root", "JSON number 1.5 is not a plain integer"},
		{"exponent number", []byte(`{"Root": 1e3}`), "Root", "JSON number 1e3 is not a plain integer"},
		{"negative number", []byte(`{"Root": -3}`), "Root", "negative value -3"},
		{"number = r", []byte(`{"Root": ` + r.String() + `}`), "Root", "not less than"},
		{"duplicate key", []byte(`{"Root": "1", "Root": "1"}`), "Root", "duplicate field"},
		{"flat and nested overlap", marshal(t, with(nested, "Path.1.1", "7")), "Path.1.1", "duplicate field"},
		{"unsatisfied", marshal(t, with(flat, "Root", rMinus1.String())), "", "do not satisfy circuit " + badInputCircuit + ": constraint #"},
		{"challenge out of range", marshal(t, with(flat, "Challenges.0", "4")), "", "constraint #"},
		{"witness garbage", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, "", "witness binary: header says 66051 public"},
		{"binary garbage", []byte{0xde, 0xad, 0xbe, 0xef}, "", "neither JSON nor a gnark full-witness binary (first byte 0xde)"},
		{"witness short header", []byte{0, 0, 0}, "", "shorter than its 12-byte header"},
		{"witness truncated", wit[:len(wit)-1], "", "witness binary: 299 bytes, want 300 for 9 values"},
		{"witness extended", append(bytes.Clone(wit), 0), "", "witness binary: 301 bytes, want 300"},
		{"witness of another circuit", mustWitness(t, "merkle-poseidon2-d3-c2"), "", "circuit " + badInputCircuit + " has 3 public + 6 secret"},
		{"witness non-canonical", nonCanonical, "Leaves.0", "witness binary value 3 is not canonical"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sol, err := Solve(context.Background(), c, tc.input)
			if err == nil { // a constraint that solves no wire is checked on W, as after a failed verification
				err = c.Check(context.Background(), sol.W, 2)
			}
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
			if ie.Field != tc.field || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("got field %q, error %q; want field %q, error containing %q", ie.Field, err, tc.field, tc.errHas)
			}
		})
	}

	// Equivalent forms give the same witness: nested, mixed, numbers, hex, binary.
	mixed := with(nested, "Path", nil, "Path.0", nested["Path"].([]any)[0], "Path.1.0", flat["Path.1.0"], "Path.1.1", flat["Path.1.1"],
		"Leaves", map[string]any{"0": flat["Leaves.0"], "1": flat["Leaves.1"]})
	challenge0, _ := new(big.Int).SetString(flat["Challenges.0"].(string), 10)
	asNumber := []byte(strings.Replace(string(marshal(t, flat)), `"Challenges.0":"`+flat["Challenges.0"].(string)+`"`, `"Challenges.0":`+challenge0.String(), 1))
	leaf0, _ := new(big.Int).SetString(strings.TrimPrefix(flat["Leaves.0"].(string), "0x"), 16)
	asDecimal := with(flat, "Leaves.0", leaf0.String(), "Leaves.1", "0X"+strings.ToUpper(strings.TrimPrefix(flat["Leaves.1"].(string), "0x")))
	for name, in := range map[string][]byte{
		"nested": marshal(t, nested), "mixed": marshal(t, mixed), "number": asNumber,
		"decimal and upper-case hex": marshal(t, asDecimal), "binary": wit, "spaced": append([]byte(" \n"), marshal(t, flat)...),
	} {
		w, err := c.Witness(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := w.MarshalBinary()
		if !bytes.Equal(got, wit) {
			t.Fatalf("%s: witness differs from the flat form's", name)
		}
	}
}

func mustWitness(t testing.TB, name string) []byte {
	t.Helper()
	w, err := mustCompile(t, name).Witness(mustInputs(t, name, 1))
	if err != nil {
		t.Fatal(err)
	}
	return mustMarshal(t, w)
}

// mustMarshal is w's gnark binary form.
func mustMarshal(t testing.TB, w witness.Witness) []byte {
	t.Helper()
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
