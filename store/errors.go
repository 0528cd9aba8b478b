package store

import (
	"fmt"
	"unicode/utf8"
)

// MaxErrorBytes bounds every error text cuzk stores (proof_requests.last_error,
// proof_attempts.error, River's job errors) or logs: an error can quote its input, and
// an input may be megabytes.
const MaxErrorBytes = 4096

// CapError returns s if it fits MaxErrorBytes, else its beginning (cut at a character
// boundary) marked as cut with the full length, MaxErrorBytes in all.
func CapError(s string) string {
	if len(s) <= MaxErrorBytes {
		return s
	}
	mark := fmt.Sprintf("… [cut, %d bytes total]", len(s))
	cut := MaxErrorBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
