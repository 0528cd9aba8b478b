package synth

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// InputError reports input that can never succeed: an unknown circuit name, malformed
// inputs, or a witness that does not satisfy the circuit. Callers fail such requests
// permanently instead of retrying them; every other error from this package is
// potentially transient or an internal fault.
type InputError struct {
	Field string // offending input field (dotted name), empty when no single field is at fault
	Msg   string
	Err   error // underlying cause, if any
}

func (e *InputError) Error() string {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Field != "" {
		// The name may come from the inputs (an unknown field): never echo megabytes.
		return fmt.Sprintf("input %q: %s", abbreviateName(e.Field), msg)
	}
	return msg
}

func (e *InputError) Unwrap() error { return e.Err }

// IsBadInput reports whether err (or any error it wraps) is an *InputError.
func IsBadInput(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

func badField(field, format string, args ...any) *InputError {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func badInput(format string, args ...any) *InputError {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// abbreviateName shortens a field name longer than any circuit's to its first 200
// bytes and its length.
func abbreviateName(s string) string {
	const most = 200
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}
