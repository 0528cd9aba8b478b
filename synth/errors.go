package synth

import (
	"errors"
	"fmt"
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
		return fmt.Sprintf("input %q: %s", e.Field, msg)
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
