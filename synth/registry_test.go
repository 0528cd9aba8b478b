package synth

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

func TestRegistryDiskCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const name = "synthetic-k6"
	c, err := NewRegistry(dir).Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	path := NewRegistry(dir).CacheFile(name)
	if !strings.HasSuffix(path, "synthetic-k6-gnark0.14.0-r2.r1cs") {
		t.Fatalf("cache file %s", path)
	}
	// The cache file is gnark's own encoding with a trailer gnark ignores.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	plain := new(cs.R1CS)
	if _, err := plain.ReadFrom(f); err != nil {
		t.Fatalf("gnark cannot read the cache file: %v", err)
	}
	f.Close()
	if plain.GetNbConstraints() != c.NbConstraints() {
		t.Fatalf("cache holds %d constraints, want %d", plain.GetNbConstraints(), c.NbConstraints())
	}

	// A new registry reads the file instead of compiling: plant another valid system.
	other := mustCompile(t, "synthetic-k5")
	if _, err := writeR1CSFile(path, other.CS); err != nil {
		t.Fatal(err)
	}
	if got, err := NewRegistry(dir).Get(ctx, name); err != nil || got.NbConstraints() != 32 {
		t.Fatalf("did not load from disk: %v", err)
	}

	valid, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hugeHeader := bytes.Clone(valid)
	binary.LittleEndian.PutUint64(hugeHeader, 1<<60)
	flipped := bytes.Clone(valid)
	flipped[len(flipped)/2] ^= 0x40
	for what, content := range map[string][]byte{
		"empty":       {},
		"truncated":   valid[:len(valid)/2],
		"no trailer":  valid[:len(valid)-trailerSize],
		"flipped bit": flipped,
		"huge header": hugeHeader,
		"garbage":     bytes.Repeat([]byte{0xa5}, 4096),
	} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := NewRegistry(dir).Get(ctx, name)
		if err != nil {
			t.Fatalf("%s cache file: %v", what, err)
		}
		if got.NbConstraints() != 64 {
			t.Fatalf("%s cache file: %d constraints, want a recompiled 64", what, got.NbConstraints())
		}
		if sys, _, err := readR1CSFile(path); err != nil || sys.GetNbConstraints() != 64 {
			t.Fatalf("%s cache file was not rewritten: %v", what, err)
		}
	}

	// A circuit loaded from disk solves like a freshly compiled one.
	loaded, err := NewRegistry(dir).Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	in := mustInputs(t, name, 9)
	fromDisk, fresh := mustSolve(t, loaded, in), mustSolve(t, c, in)
	if !slices.Equal(fromDisk.W, fresh.W) || !slices.Equal(fromDisk.A, fresh.A) {
		t.Fatal("solutions differ between the loaded and the compiled circuit")
	}
}

func TestRegistryConcurrentGet(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Two registries stand for two processes sharing the cache directory.
	regs := []*Registry{NewRegistry(dir), NewRegistry(dir)}
	const name = "merkle-poseidon2-d3-c2"
	got := make([]*Compiled, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			c, err := regs[i%2].Get(ctx, name)
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[i%2] {
			t.Fatalf("registry %d compiled %s more than once", i%2, name)
		}
	}
	if _, _, err := readR1CSFile(regs[0].CacheFile(name)); err != nil {
		t.Fatal(err)
	}
	// The compiled system and its block plan, nothing left over from the writes.
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	file := filepath.Base(regs[0].CacheFile(name))
	if want := []string{file, file + ".plan"}; !slices.Equal(names, want) {
		t.Fatalf("cache directory holds %q, want %q", names, want)
	}
}

func TestRegistryUnknown(t *testing.T) {
	reg := NewRegistry(t.TempDir())
	for _, name := range []string{"foo", "../../etc/passwd", "synthetic-k99", "imported-foo"} {
		if _, err := reg.Get(context.Background(), name); !IsBadInput(err) {
			t.Errorf("%q: got %v, want an InputError", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := reg.Get(ctx, "synthetic-k3"); err != context.Canceled {
		t.Errorf("cancelled context: got %v", err)
	}
}

// importCircuit has a field name with "_" and a nested struct, as a user's might.
type importCircuit struct {
	X   frontend.Variable `gnark:",public"`
	Y_Z [2]frontend.Variable
	Sub struct{ A frontend.Variable }
}

func (c *importCircuit) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.Y_Z[0], c.Y_Z[1], c.Sub.A), c.X)
	return nil
}

type committingCircuit struct{ X frontend.Variable }

func (c *committingCircuit) Define(api frontend.API) error {
	cm, err := api.(frontend.Committer).Commit(c.X)
	api.AssertIsDifferent(cm, 0)
	return err
}

func encodeCircuit(t *testing.T, circuit frontend.Circuit) []byte {
	t.Helper()
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, circuit)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := ccs.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	enc := encodeCircuit(t, &importCircuit{})
	imp := func(name string, b []byte) error {
		_, err := NewRegistry(dir).Import(ctx, name, bytes.NewReader(b), int64(len(b)))
		return err
	}
	if err := imp("my-circuit", enc); err != nil {
		t.Fatal(err)
	}
	if err := imp("my-circuit", enc); err != nil {
		t.Fatalf("importing the same circuit again: %v", err)
	}

	c, err := NewRegistry(dir).Get(ctx, "my-circuit")
	if err != nil {
		t.Fatal(err)
	}
	if c.Builtin || c.NbPublic() != 2 || c.NbSecret() != 3 {
		t.Fatalf("imported: builtin=%v public=%d secret=%d", c.Builtin, c.NbPublic(), c.NbSecret())
	}
	assignment := &importCircuit{X: 30, Y_Z: [2]frontend.Variable{2, 3}}
	assignment.Sub.A = 5
	w, err := frontend.NewWitness(assignment, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := w.MarshalBinary()
	for _, in := range []string{
		string(bin),
		`{"X": "30", "Y.Z": ["2", "3"], "Sub": {"A": "5"}}`,
		`{"X": "30", "Y_Z_0": "2", "Y_Z_1": "0x3", "Sub_A": "5"}`, // gnark's own names
	} {
		if _, err := Solve(ctx, c, []byte(in)); err != nil {
			t.Fatalf("solve imported circuit on %q: %v", in, err)
		}
	}
	if _, err := Solve(ctx, c, []byte(`{"X": "31", "Y.Z": ["2", "3"], "Sub.A": "5"}`)); !IsBadInput(err) {
		t.Fatalf("unsatisfied: got %v", err)
	}

	refused := map[string]struct {
		name string
		data []byte
	}{
		"other circuit, same name": {"my-circuit", encodeCircuit(t, &poseidonCircuit{})},
		"commitments":              {"committing", encodeCircuit(t, &committingCircuit{})},
		"garbage":                  {"garbage", []byte("not an R1CS at all, not at all, not at all")},
		"truncated":                {"truncated", enc[:len(enc)-10]},
		"built-in name":            {"synthetic-k3", enc},
		"path in name":             {"../x", enc},
	}
	for what, tc := range refused {
		if err := imp(tc.name, tc.data); !IsBadInput(err) {
			t.Errorf("%s: got %v, want an InputError", what, err)
		} else if what == "commitments" && !strings.Contains(err.Error(), "commitment") {
			t.Errorf("%s: %v", what, err)
		}
	}
}

func TestInputSchemaWithoutTree(t *testing.T) {
	// "a" and "a_b" cannot both be dotted names: gnark's names are used as they are.
	s := newInputSchema([]string{"a"}, []string{"a_b", "c_0"})
	if s.root != nil {
		t.Fatal("want no dotted tree")
	}
	if strings.Join(s.names, ",") != "a,a_b,c_0" {
		t.Fatalf("names %v", s.names)
	}
}
