package store

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
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

// Unavailable says whether err means the database could not be reached (a lost,
// refused or shut-down connection) rather than an answer from it: the first is worth
// retrying a moment later, the second is not. It goes by the error's type and
// PostgreSQL's error code, never by its text.
func Unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57P01-57P03: server shutting down or starting.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// Locked says whether err is a lock wait that ran out (lock_timeout, SQLSTATE 55P03): a
// row that another transaction holds, such as one a submitter left open after
// cancelling its own request.
func Locked(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}
