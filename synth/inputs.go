package synth

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/witness"
)

// Witness converts inputs into gnark's full witness for c. inputs is either
//
//   - a JSON object whose keys are input names (see below) and whose values are
//     decimal or 0x-hex strings; JSON numbers are accepted only as plain
//     non-negative integers (digits only; no sign, fraction or exponent), read
//     exactly; or
//   - gnark's full-witness binary (witness.MarshalBinary): recognised by its first
//     byte, 0x00, which a JSON text never starts with.
//
// Input names are gnark's variable names with "." between a struct field and its
// sub-fields or array indices ("Root", "Path.3.1"). Keys may be given flat
// ("Path.3.1": …), nested ("Path": [[…], …] or {"3": {"1": …}}) or mixed; each input
// must be given exactly once. For an imported circuit whose gnark names contain "_"
// within a field name, the names gnark recorded ("my_field_2") are accepted too.
//
// Every value must be canonical (less than the BLS12-381 scalar field modulus r);
// nothing is reduced. All failures are *InputError naming the field.
func (c *Compiled) Witness(inputs []byte) (witness.Witness, error) {
	switch {
	case len(inputs) == 0:
		return nil, badInput("inputs JSON is empty")
	case inputs[0] == 0:
		return c.binaryWitness(inputs)
	case inputs[0] >= 0x80 || (inputs[0] < 0x20 && !strings.ContainsRune(" \t\r\n", rune(inputs[0]))):
		return nil, badInput("inputs are neither JSON nor a gnark full-witness binary (first byte 0x%02x)", inputs[0])
	}
	return c.jsonWitness(inputs)
}

func (c *Compiled) inputs() *inputSchema { return c.schema }

// witnessHeaderSize is gnark's full-witness header: number of public and secret
// values, then the vector length, each a big-endian uint32.
const witnessHeaderSize = 12

func (c *Compiled) nbInputs() int { return c.NbPublic() - 1 + c.NbSecret() }

func (c *Compiled) binaryWitness(data []byte) (witness.Witness, error) {
	nbPub, nbSec := c.NbPublic()-1, c.NbSecret()
	n := nbPub + nbSec
	if len(data) < witnessHeaderSize {
		return nil, badInput("witness binary: %d bytes, shorter than its %d-byte header", len(data), witnessHeaderSize)
	}
	gotPub := binary.BigEndian.Uint32(data[0:4])
	gotSec := binary.BigEndian.Uint32(data[4:8])
	gotLen := binary.BigEndian.Uint32(data[8:12])
	if uint64(gotPub) != uint64(nbPub) || uint64(gotSec) != uint64(nbSec) || uint64(gotLen) != uint64(n) {
		return nil, badInput("witness binary: header says %d public + %d secret values (vector of %d), circuit %s has %d public + %d secret",
			gotPub, gotSec, gotLen, c.Name, nbPub, nbSec)
	}
	if want := witnessHeaderSize + fr.Bytes*n; len(data) != want {
		return nil, badInput("witness binary: %d bytes, want %d for %d values", len(data), want, n)
	}
	modulus := fr.Modulus().FillBytes(make([]byte, fr.Bytes))
	for i := range n {
		v := data[witnessHeaderSize+fr.Bytes*i : witnessHeaderSize+fr.Bytes*(i+1)]
		if bytes.Compare(v, modulus) >= 0 {
			return nil, badField(c.inputs().names[i], "witness binary value %d is not canonical (not less than r)", i)
		}
	}
	w, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return nil, fmt.Errorf("new witness: %w", err)
	}
	if err := w.UnmarshalBinary(data); err != nil {
		return nil, &InputError{Msg: "witness binary", Err: err}
	}
	return w, nil
}

func (c *Compiled) jsonWitness(data []byte) (witness.Witness, error) {
	s := c.inputs()
	n := c.nbInputs()
	p := jsonParser{
		schema: s,
		dec:    json.NewDecoder(bytes.NewReader(data)),
		set:    make([]bool, n),
		buf:    make([]byte, witnessHeaderSize+fr.Bytes*n),
	}
	p.dec.UseNumber()
	binary.BigEndian.PutUint32(p.buf[0:4], uint32(c.NbPublic()-1))
	binary.BigEndian.PutUint32(p.buf[4:8], uint32(c.NbSecret()))
	binary.BigEndian.PutUint32(p.buf[8:12], uint32(n))
	if err := p.document(); err != nil {
		return nil, err
	}
	var missing []string
	for i, ok := range p.set {
		if !ok {
			missing = append(missing, s.names[i])
		}
	}
	if len(missing) > 0 {
		more := ""
		if len(missing) > 1 {
			more = fmt.Sprintf(" (and %d more missing)", len(missing)-1)
		}
		return nil, badField(missing[0], "missing field%s", more)
	}
	w, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return nil, fmt.Errorf("new witness: %w", err)
	}
	if err := w.UnmarshalBinary(p.buf); err != nil {
		return nil, fmt.Errorf("build witness: %w", err)
	}
	return w, nil
}

// jsonParser streams the inputs JSON against the schema, writing each value into
// a gnark witness binary as it goes. Streaming tokens (rather than unmarshalling
// into maps) is what detects duplicate keys and keeps exact integers.
type jsonParser struct {
	schema *inputSchema
	dec    *json.Decoder
	set    []bool
	buf    []byte
}

func (p *jsonParser) malformed(err error) error {
	return &InputError{Msg: fmt.Sprintf("malformed inputs JSON near byte %d", p.dec.InputOffset()), Err: err}
}

func (p *jsonParser) document() error {
	tok, err := p.dec.Token()
	if err == io.EOF {
		return badInput("inputs JSON is empty")
	}
	if err != nil {
		return p.malformed(err)
	}
	if tok != json.Delim('{') {
		return badInput("inputs JSON must be an object, got %s", tokenKind(tok))
	}
	if err := p.members(p.schema.root, true); err != nil {
		return err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return badInput("inputs JSON: unexpected data after the top-level object")
	}
	return nil
}

// members reads "key": value pairs up to the closing brace of an object at node.
func (p *jsonParser) members(node *schemaNode, top bool) error {
	if !top && !p.dec.More() {
		// Refused so that every member of valid inputs gives an input: what bounds
		// their length (MaxInputsBytes).
		return badField(node.path, "empty object: give its fields or leave it out")
	}
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return p.malformed(err)
		}
		key := tok.(string) // the decoder guarantees object keys are strings
		var child *schemaNode
		if node != nil {
			child, err = node.lookup(key)
		}
		if top && (node == nil || err != nil) {
			// gnark's own name, for imported circuits with "_" in field names.
			if i, ok := p.schema.gnark[key]; ok {
				child, err = &schemaNode{path: key, leaf: i}, nil
			} else if node == nil {
				err = badField(key, "unknown field")
			}
		}
		if err != nil {
			return err
		}
		if err := p.value(child); err != nil {
			return err
		}
	}
	if _, err := p.dec.Token(); err != nil { // closing '}'
		return p.malformed(err)
	}
	return nil
}

func (p *jsonParser) value(node *schemaNode) error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.malformed(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if node.leaf >= 0 {
			return badField(node.path, "expected %s, got %s", node.describe(), tokenKind(tok))
		}
		if t == '{' {
			return p.members(node, false)
		}
		return p.array(node)
	case string:
		return p.leaf(node, t, tok)
	case json.Number:
		if node.leaf >= 0 && !isDigits(string(t)) {
			if strings.HasPrefix(string(t), "-") {
				return badField(node.path, "negative value %s", abbreviate(string(t)))
			}
			return badField(node.path, "JSON number %s is not a plain integer; use a decimal or 0x-hex string", abbreviate(string(t)))
		}
		return p.leaf(node, string(t), tok)
	default:
		return badField(node.path, "expected %s, got %s", node.describe(), tokenKind(tok))
	}
}

func (p *jsonParser) array(node *schemaNode) error {
	if !node.isArray {
		return badField(node.path, "expected %s, got an array", node.describe())
	}
	i := 0
	for ; p.dec.More(); i++ {
		child, ok := node.children[strconv.Itoa(i)]
		if !ok {
			return badField(node.path, "wrong array length: got more than %d elements, want %d", len(node.children), len(node.children))
		}
		if err := p.value(child); err != nil {
			return err
		}
	}
	if i != len(node.children) {
		return badField(node.path, "wrong array length: got %d elements, want %d", i, len(node.children))
	}
	if _, err := p.dec.Token(); err != nil { // closing ']'
		return p.malformed(err)
	}
	return nil
}

func (p *jsonParser) leaf(node *schemaNode, text string, tok json.Token) error {
	if node.leaf < 0 {
		return badField(node.path, "expected %s, got %s", node.describe(), tokenKind(tok))
	}
	if p.set[node.leaf] {
		return badField(node.path, "duplicate field")
	}
	var e fr.Element
	if err := parseElement(text, &e); err != nil {
		return badField(node.path, "%s", err.Error())
	}
	off := witnessHeaderSize + fr.Bytes*node.leaf
	fr.BigEndian.PutElement((*[fr.Bytes]byte)(p.buf[off:off+fr.Bytes]), e)
	p.set[node.leaf] = true
	return nil
}

// The most digits a canonical field element (below r, about 2^254.9) can be written
// with: r has 77 decimal digits and 64 hex digits; one leading zero is tolerated in
// decimal.
const (
	maxDecimalDigits = 78
	maxHexDigits     = 64
)

// parseElement reads a decimal or 0x-hex integer, which must be less than r.
func parseElement(s string, e *fr.Element) error {
	digits, base := s, 10
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		digits, base = s[2:], 16
	}
	switch {
	case s == "":
		return errors.New("empty value")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("negative value %s", abbreviate(s))
	case digits == "":
		return fmt.Errorf("%q has no digits", s)
	}
	// Checked before any parsing: big-number parsing costs the square of the length,
	// and no longer text can be a field element.
	if base == 10 && len(digits) > maxDecimalDigits {
		return fmt.Errorf("value has %d decimal digits, a field element at most %d", len(digits), maxDecimalDigits)
	}
	if base == 16 && len(digits) > maxHexDigits {
		return fmt.Errorf("value has %d hex digits, a field element at most %d", len(digits), maxHexDigits)
	}
	valid := isDigits(digits)
	if base == 16 {
		valid = isHex(digits)
	}
	if !valid {
		return fmt.Errorf("%q is not a decimal or 0x-hex integer", abbreviate(s))
	}
	v, _ := new(big.Int).SetString(digits, base)
	if v.Cmp(fr.Modulus()) >= 0 {
		return fmt.Errorf("value %s is not less than the BLS12-381 scalar field modulus r", abbreviate(s))
	}
	e.SetBigInt(v)
	return nil
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return s != ""
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return fmt.Sprintf("%t", t)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
