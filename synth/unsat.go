package synth

import (
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// UnsatisfiedError is an unsatisfied constraint, told without witness values: the
// constraint's index, the circuit source location and assertion when the R1CS carries
// gnark's debug information, and the public inputs the constraint reads. gnark's own
// text prints the values computed from the private inputs ("1 ⋅ 1198…652 != 3534…591"),
// which other submitters must not read; Detail has it, for a debug log only.
type UnsatisfiedError struct {
	Constraint int
	Assertion  string   // e.g. "assertIsEqual", from gnark's debug information
	Location   []string // "function file:line", innermost call first, from the debug information
	Public     []string // public inputs the constraint reads, by name
	detail     string
}

func (e *UnsatisfiedError) Error() string {
	var b strings.Builder
	b.WriteString("constraint #")
	b.WriteString(strconv.Itoa(e.Constraint))
	b.WriteString(" is not satisfied")
	if e.Assertion != "" {
		b.WriteString(" (" + e.Assertion + ")")
	}
	if len(e.Location) > 0 {
		b.WriteString(" at " + strings.Join(e.Location, " <- "))
	}
	if len(e.Public) > 0 {
		b.WriteString("; public inputs involved: " + strings.Join(e.Public, ", "))
	}
	return b.String()
}

// Detail is gnark's full text, witness values included: for a debug log, never for
// anything a submitter can read.
func (e *UnsatisfiedError) Detail() string { return e.detail }

// publicNamesShown caps the public inputs an error names.
const publicNamesShown = 8

// unsatisfied turns gnark's error into one without values.
func (c *Compiled) unsatisfied(u *cs.UnsatisfiedConstraintError) *UnsatisfiedError {
	e := &UnsatisfiedError{Constraint: u.CID, detail: u.Error()}
	if u.DebugInfo != nil {
		e.Assertion, e.Location = debugLocation(*u.DebugInfo)
	}
	e.Public = c.publicInputsOf(u.CID)
	return e
}

var (
	assertionRe = regexp.MustCompile(`^\[([A-Za-z][A-Za-z0-9_]{0,40})\]`)
	fileLineRe  = regexp.MustCompile(`^\S+\.go:\d{1,6}$`)
	funcNameRe  = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_./()*\[\]-]*$`)
)

// debugLocation reads gnark's debug text for a constraint: a first part formatted
// from the assertion with values in it ("[assertIsEqual] 123… == 456…"), then pairs
// of lines "function" and "\tfile:line". Only the assertion's name and the pairs are
// kept; any line that is not plainly one of those is dropped, so a changed format
// loses detail rather than leaks values.
func debugLocation(s string) (assertion string, loc []string) {
	if m := assertionRe.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		assertion = m[1]
	}
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		fl := strings.TrimSpace(lines[i])
		fn := strings.TrimSpace(lines[i-1])
		if !fileLineRe.MatchString(fl) || !funcNameRe.MatchString(fn) || len(fn) > 200 {
			continue
		}
		loc = append(loc, scrubValues(fn+" "+fl))
		if len(loc) == 4 {
			break
		}
	}
	return assertion, loc
}

// publicInputsOf names the public inputs constraint cid reads (wire 0 is the constant 1).
func (c *Compiled) publicInputsOf(cid int) []string {
	if cid < 0 || cid >= c.NbConstraints() || c.NbPublic() <= 1 {
		return nil
	}
	it := c.CS.GetR1CIterator()
	for i := 0; ; i++ {
		r := it.Next()
		if r == nil {
			return nil
		}
		if i < cid {
			continue
		}
		seen := map[string]bool{}
		for _, le := range [][]int{wires(r.L), wires(r.R), wires(r.O)} {
			for _, w := range le {
				if w >= 1 && w < c.NbPublic() && w-1 < len(c.schema.names) {
					seen[c.schema.names[w-1]] = true
				}
			}
		}
		names := make([]string, 0, len(seen))
		for n := range seen {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) > publicNamesShown {
			names = append(names[:publicNamesShown], "…")
		}
		return names
	}
}

func wires(le constraint.LinearExpression) []int {
	out := make([]int, 0, len(le))
	for _, t := range le {
		if !t.IsConstant() {
			out = append(out, t.WireID())
		}
	}
	return out
}

// longNumber matches what could be a value: a run of 5 or more decimal digits, or any
// 0x-hex number, or a run of 16 or more hex digits.
var longNumber = regexp.MustCompile(`(?i)0x[0-9a-f]+|[0-9a-f]{16,}|[0-9]{5,}`)

// scrubValues replaces anything in s that could be a field element with "…".
func scrubValues(s string) string { return longNumber.ReplaceAllString(s, "…") }

// asUnsatisfied finds gnark's unsatisfied-constraint error in err.
func asUnsatisfied(err error) (*cs.UnsatisfiedConstraintError, bool) {
	var u *cs.UnsatisfiedConstraintError
	ok := errors.As(err, &u)
	return u, ok
}
