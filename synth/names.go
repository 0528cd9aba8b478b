package synth

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/consensys/gnark/frontend"
)

// builtin is one instance of a built-in circuit family. The value itself is the
// placeholder compiled by gnark (slices sized, no values); assign returns a copy
// holding a valid assignment computed natively.
type builtin interface {
	frontend.Circuit
	assign(rng *rand.Rand) frontend.Circuit
}

// family is a built-in circuit family: a name template such as
// "merkle-poseidon2-d<D>-c<C>" whose parameters are decimal integers.
type family struct {
	template string
	bounds   []bound // one per <param>, in template order
	build    func(params []int) builtin
}

type bound struct {
	name     string
	min, max int
}

// families is the constant table of built-in circuits. Changing how any of them is
// built changes its constraint system: bump CircuitRevision.
var families = [...]family{
	{"synthetic-k<K>", []bound{{"K", 1, maxSyntheticK}}, newSynthetic},
	{"merkle-poseidon2-d<D>-c<C>", []bound{{"D", 1, maxMerkleDepth}, {"C", 1, maxMerkleChallenges}}, newMerkle},
	{"sha256-preimage-b<N>", []bound{{"N", 1, maxSHA256Bytes}}, newSHA256},
	{"porep-k<K>", []bound{{"K", minPorepK, maxPorepK}}, newPorep},
}

// lookupBuiltin resolves a built-in circuit name. The error is an *InputError that
// says whether the family is unknown or which parameter is malformed.
func lookupBuiltin(name string) (builtin, error) {
	for _, f := range families {
		params, ok, err := f.match(name)
		if err != nil {
			return nil, err
		}
		if ok {
			return f.build(params), nil
		}
	}
	return nil, errUnknownCircuit(name)
}

func errUnknownCircuit(name string) error {
	templates := make([]string, len(families))
	for i, f := range families {
		templates[i] = f.template
	}
	list := strings.Join(templates[:len(templates)-1], ", ") + " or " + templates[len(templates)-1]
	return badInput("unknown circuit %q: expected %s", name, list)
}

// isBuiltinName reports whether name belongs to a built-in family (valid or not), so
// that imported circuits can never shadow one.
func isBuiltinName(name string) bool {
	for _, f := range families {
		if strings.HasPrefix(name, f.leadingLiteral()) {
			return true
		}
	}
	return false
}

func (f family) leadingLiteral() string {
	lit, _, _ := strings.Cut(f.template, "<")
	return lit
}

// match parses name against the template. ok is false when name is not of this
// family at all; err is set when it is, but malformed or out of range.
func (f family) match(name string) (params []int, ok bool, err error) {
	if !strings.HasPrefix(name, f.leadingLiteral()) {
		return nil, false, nil
	}
	rest, tpl := name, f.template
	for i := 0; ; i++ {
		lit, after, hasParam := strings.Cut(tpl, "<")
		if !strings.HasPrefix(rest, lit) {
			return nil, true, f.malformed(name)
		}
		rest = rest[len(lit):]
		if !hasParam {
			if rest != "" {
				return nil, true, f.malformed(name)
			}
			return params, true, nil
		}
		_, tpl, _ = strings.Cut(after, ">")
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		// Leading zeros would give one constraint system two names.
		if n == 0 || (n > 1 && rest[0] == '0') {
			return nil, true, f.malformed(name)
		}
		v, convErr := strconv.Atoi(rest[:n])
		b := f.bounds[i]
		if convErr != nil || v < b.min || v > b.max {
			return nil, true, badInput("circuit %q: %s=%s out of range [%d, %d]", name, b.name, rest[:n], b.min, b.max)
		}
		params = append(params, v)
		rest = rest[n:]
	}
}

func (f family) malformed(name string) error {
	var ranges []string
	for _, b := range f.bounds {
		ranges = append(ranges, b.name+" in ["+strconv.Itoa(b.min)+", "+strconv.Itoa(b.max)+"]")
	}
	return badInput("malformed circuit name %q: expected %s with decimal %s", name, f.template, strings.Join(ranges, ", "))
}
