package synth

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/big"
	"runtime"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// maxErrorBytes bounds the text of any refusal: errors name the field and quote at
// most an abbreviation of what was sent, never the request itself.
const maxErrorBytes = 2048

// noTreeCircuit's input names ("A" beside "A_B") form no dotted tree: its inputs
// are named as gnark names them.
type noTreeCircuit struct {
	A   frontend.Variable `gnark:",public"`
	A_B frontend.Variable
	C   [1]frontend.Variable
}

func (c *noTreeCircuit) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.A_B, c.C[0]), c.A)
	return nil
}

func compileNoTree(t testing.TB) *Compiled {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &noTreeCircuit{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompileImported("no-tree", ccs.(*cs.R1CS))
	if err != nil {
		t.Fatal(err)
	}
	if c.inputs().root != nil {
		t.Fatal("noTreeCircuit's names form a dotted tree")
	}
	return c
}

// FuzzWitnessJSON feeds arbitrary inputs JSON to Witness, of a built-in circuit with
// nested arrays and of a circuit whose names form no tree. Whatever the bytes, it
// returns an *InputError of bounded length naming a field of the circuit (or one
// it does not have), or a witness that round-trips; accepted inputs are never
// longer, as PostgreSQL stores them, than the circuit's MaxInputsBytes.
func FuzzWitnessJSON(f *testing.F) {
	c := mustCompile(f, badInputCircuit)
	noTree := compileNoTree(f)
	flat := mustInputs(f, badInputCircuit, 5)
	var m map[string]any
	if err := json.Unmarshal(flat, &m); err != nil {
		f.Fatal(err)
	}
	longest := jsonbText(nestedInputs(c.inputs().names, "0"+strings.Repeat("0", maxDecimalDigits-2)+"1"))
	for _, seed := range []string{
		string(flat),
		jsonbText(m),
		jsonbText(with(m, "Root", new(big.Int).Sub(fr.Modulus(), big.NewInt(1)).String())), // r-1
		longest,
		strings.ReplaceAll(string(flat), ".", "_"), // gnark's own names
		`{"Root": "1", "Challenges": ["2", 3], "Leaves": {"0": "0x4", "1": "0X5"}, "Path": [["6", "7"], {"0": "8", "1": "9"}]}`,
		`{"Root": "1", "Path.0": ["2", "3"], "Path": {"1": ["4", "5"]}}`,
		`{"Root": "1", "Root": "2"}`,
		`{"Root": -1, "Leaves": [1.5, 1e3]}`,
		`{"Path": {}, "Leaves": []}`,
		`{"Root": null, "Challenges": [true, false]}`,
		`{"Root.0": "1", "Path.2.0": "1", "Bogus": "1"}`,
		`{"Root": "0x` + strings.Repeat("f", 64) + `"}`,
		` ["1"]`,
		`{"Root": "1"} {}`,
		`{"Root": `,
		`{"A": "6", "A_B": "2", "C_0": "3"}`,
		`{"A": "6", "A": {"B": "2"}, "C": ["3"]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWitness(t, c, data)
		checkWitness(t, noTree, data)
	})
}

// FuzzWitnessBinary feeds arbitrary gnark full-witness binaries to Witness, with the
// same properties as FuzzWitnessJSON; an accepted binary is returned unchanged.
func FuzzWitnessBinary(f *testing.F) {
	c := mustCompile(f, badInputCircuit)
	wit := mustWitness(f, badInputCircuit)
	huge := binary.BigEndian.AppendUint32(bytes.Repeat([]byte{0xff}, 8), 0xffffffff)
	huge[0] = 0
	nonCanonical := bytes.Clone(wit)
	copy(nonCanonical[witnessHeaderSize:], fr.Modulus().FillBytes(make([]byte, fr.Bytes)))
	for _, seed := range [][]byte{
		wit, wit[:len(wit)-1], append(bytes.Clone(wit), 0), wit[:witnessHeaderSize],
		huge, nonCanonical, mustWitness(f, "merkle-poseidon2-d1-c1"), {0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkWitness(t, c, data) })
}

// checkWitness asserts what must hold for Witness(data) whatever data is.
func checkWitness(t *testing.T, c *Compiled, data []byte) {
	w, err := c.Witness(data)
	if err != nil {
		checkRefusal(t, c, err)
		return
	}
	got, err := w.MarshalBinary()
	if err != nil {
		t.Fatalf("accepted inputs give a witness that does not marshal: %v", err)
	}
	if int64(len(got)) != c.WitnessBytes() {
		t.Fatalf("witness binary of %d bytes, WitnessBytes %d", len(got), c.WitnessBytes())
	}
	if data[0] == 0 {
		if !bytes.Equal(got, data) {
			t.Fatalf("accepted witness binary re-encodes differently:\n got %x\nwant %x", got, data)
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted inputs are not JSON: %v", err)
		}
		if n := int64(len(jsonbText(v))); n > c.MaxInputsBytes() {
			t.Fatalf("accepted inputs are %d bytes as jsonb, over MaxInputsBytes %d: %s", n, c.MaxInputsBytes(), data)
		}
	}

	// The same assignment, as a binary and as flat decimal JSON, gives the same witness.
	values, ok := w.Vector().(fr.Vector)
	if !ok || len(values) != len(c.inputs().names) {
		t.Fatalf("witness vector %T of %d values, want %d field elements", w.Vector(), len(values), len(c.inputs().names))
	}
	flat := make(map[string]string, len(values))
	for i, name := range c.inputs().names {
		// Not values[i].String(): it writes a value within 2^16 of r as negative.
		flat[name] = values[i].BigInt(new(big.Int)).String()
	}
	text, err := json.Marshal(flat)
	if err != nil {
		t.Fatal(err)
	}
	for form, in := range map[string][]byte{"binary": got, "flat JSON": text} {
		again, err := c.Witness(in)
		if err != nil {
			t.Fatalf("accepted inputs re-encoded as %s are refused: %v", form, err)
		}
		if b, _ := again.MarshalBinary(); !bytes.Equal(b, got) {
			t.Fatalf("accepted inputs re-encoded as %s give another witness", form)
		}
	}
}

func checkRefusal(t *testing.T, c *Compiled, err error) {
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("refusal is not an *InputError: %v", err)
	}
	if n := len(err.Error()); n > maxErrorBytes {
		t.Fatalf("error of %d bytes: %.300s…", n, err)
	}
	if ie.Field != "" && !c.inputs().hasField(ie.Field) && !strings.Contains(ie.Msg, "unknown field") {
		t.Fatalf("error names %q, which is no field of %s and not said to be unknown: %v", ie.Field, c.Name, err)
	}
}

// hasField reports whether name is an input, a struct or array of inputs, or
// gnark's name of an input.
func (s *inputSchema) hasField(name string) bool {
	if _, ok := s.gnark[name]; ok {
		return true
	}
	if s.root == nil {
		return false
	}
	_, err := s.root.lookup(name)
	return err == nil
}

// A witness binary whose header claims 2^32-1 values, 128 GiB of them, is refused
// from its header: Witness allocates nothing in proportion to the claim.
func TestWitnessHeaderClaimAllocatesNothing(t *testing.T) {
	c := mustCompile(t, badInputCircuit)
	hdr := []byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xff}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Witness(append(hdr, make([]byte, 64)...))
	runtime.ReadMemStats(&after)
	if !IsBadInput(err) || !strings.Contains(err.Error(), "header says 1 public + 4294967294 secret values (vector of 4294967295)") {
		t.Fatalf("got %v, want the header refused", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("refusing the header allocated %d bytes", n)
	}
}
