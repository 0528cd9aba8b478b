package synth

import (
	"encoding/json"
	"strings"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// The longest text one input value can take in valid inputs: a quoted string of
// maxDecimalDigits digits ("0x" and maxHexDigits hex digits is shorter, and a JSON
// number drops the quotes).
const maxValueText = maxDecimalDigits + 2

// WitnessBytes is the size of c's full-witness binary (gnark's witness.MarshalBinary):
// the header, then one field element for each public and secret input.
func (c *Compiled) WitnessBytes() int64 {
	return witnessHeaderSize + fr.Bytes*int64(c.nbInputs())
}

// MaxInputsBytes bounds the length of any inputs JSON that Witness accepts for c,
// written as PostgreSQL writes a jsonb (members separated by ", ", keys followed by
// ": "): no valid inputs of c are longer, so a longer request can be refused unread.
//
// Every member of a valid document leads to at least one input (Witness refuses an
// empty object), so charging each member and container to the first input below it
// charges each input at most once per segment of its dotted name: the key text of
// those members is at most the name itself, and each costs 2 quotes, ": ", ", " and
// the 2 brackets of its container. The bound is reached by writing every input in
// fully nested objects with a 78-digit value.
func (c *Compiled) MaxInputsBytes() int64 {
	var n int64
	for _, name := range c.inputs().names {
		segments := int64(strings.Count(name, ".") + 1)
		n += jsonTextLen(name) + 8*segments + maxValueText
	}
	return n + 2 // the outer braces when there are no inputs
}

// jsonTextLen is the length of s as JSON string content, without its quotes: at
// least as long as jsonb writes it (Go escapes more characters, never fewer).
func jsonTextLen(s string) int64 {
	b, _ := json.Marshal(s)
	return int64(len(b)) - 2
}
