package synth

import (
	"errors"
	"io/fs"
	"os"
	"regexp"

	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// CircuitNamePattern is the one rule for circuit names, the same regular expression
// as the CHECK on cuzk.circuits.name (migrations/cuzk/001_schema.sql): 1 to 128 of
// lower-case letters, digits, '.', '_' and '-', not starting with '.', '_' or '-'.
// A name is also a directory and file name under the keys and cache directories.
const CircuitNamePattern = `^[a-z0-9][a-z0-9._-]{0,127}$`

var circuitName = regexp.MustCompile(CircuitNamePattern)

// CheckCircuitName says whether name is a valid circuit name, with an *InputError
// that states the rule when it is not. Every path that writes a circuit (setup,
// import, key files, the compiled cache) checks it before writing anything.
func CheckCircuitName(name string) error {
	if !circuitName.MatchString(name) {
		return badInput("invalid circuit name %q: names are 1-128 of [a-z0-9._-] (lower case), not starting with '.', '_' or '-'", name)
	}
	return nil
}

// CheckImportName is CheckCircuitName for a circuit imported from outside: it must
// also not fall in a built-in family, which it would shadow.
func CheckImportName(name string) error {
	if err := CheckCircuitName(name); err != nil {
		return err
	}
	if isBuiltinName(name) {
		return badInput("cannot import circuit as %q: the name belongs to a built-in family (%s…)", name, builtinPrefix(name))
	}
	return nil
}

func builtinPrefix(name string) string {
	for _, f := range families {
		if lit := f.leadingLiteral(); len(name) >= len(lit) && name[:len(lit)] == lit {
			return lit
		}
	}
	return name
}

// CompileImported checks an externally compiled R1CS for import under name (a valid
// name, no commitments, every hint it needs linked in) and returns it ready to solve,
// writing nothing.
func CompileImported(name string, sys *cs.R1CS) (*Compiled, error) {
	if err := CheckImportName(name); err != nil {
		return nil, err
	}
	c, err := newCompiled(name, sys, false)
	if err != nil {
		return nil, &InputError{Msg: "import " + name, Err: err}
	}
	return c, nil
}

// ForgetImported removes the compiled cache of an imported circuit, so that the next
// load reads the R1CS stored beside its keys (after its keys were replaced).
func (r *Registry) ForgetImported(name string) error {
	if r.dir == "" || CheckCircuitName(name) != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, name)
	for _, f := range []string{r.importedFile(name), planFile(r.importedFile(name))} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
