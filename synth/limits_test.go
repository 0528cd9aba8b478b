package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgtest"
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

// jsonbText writes a JSON value decoded with UseNumber (objects, arrays, strings and
// numbers) as PostgreSQL writes a jsonb: ", " between members and elements, ": "
// after keys, only the escapes PostgreSQL's escape_json makes, an integer's digits.
func jsonbText(v any) string {
	var b strings.Builder
	writeJsonb(&b, v)
	return b.String()
}

func writeJsonb(b *strings.Builder, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJsonbString(b, k)
			b.WriteString(": ")
			writeJsonb(b, v[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJsonb(b, e)
		}
		b.WriteByte(']')
	case string:
		writeJsonbString(b, v)
	case json.Number:
		b.WriteString(string(v))
	default:
		panic(fmt.Sprintf("jsonbText: unexpected %T", v))
	}
}

func writeJsonbString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := range len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// jsonbText, which FuzzWitnessJSON measures accepted inputs with, writes documents as
// long as PostgreSQL writes them back from a jsonb column.
func TestJsonbTextMatchesPostgreSQL(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatalf("connect to %s: %v", pgtest.AdminURL(), err)
	}
	defer conn.Close(ctx)
	for _, doc := range []string{
		`{}`,
		`{"Root":"0x1f","Path":[["1",2],{"0":"3"}],"Leaves":{"1":"4","0":"5"}}`,
		`{"a\"b\\c":"\b\f\n\r\t\u0001\u001f","\u00e9\u2028<>&":"\/"}`,
		`{"n":[0,123456789012345678901234567890123456789012345678901234567890123456789012345678]}`,
		"{ \"k\" :\n[ ] , \"e\": { } }",
	} {
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var pg string
		if err := conn.QueryRow(ctx, "SELECT $1::jsonb::text", doc).Scan(&pg); err != nil {
			t.Fatal(err)
		}
		if got := jsonbText(v); len(got) != len(pg) {
			t.Errorf("%s: jsonbText writes %d bytes (%s), PostgreSQL %d (%s)", doc, len(got), got, len(pg), pg)
		}
	}
}
