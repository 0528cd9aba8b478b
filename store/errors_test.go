package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable decides whether a finished proof is stored again after an error, so a
// server's answer must never be mistaken for a lost connection, nor the reverse.
func TestUnavailableTellsLostConnectionsFromAnswers(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{fmt.Errorf("store proof: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("begin: %w", pgconn.ErrConnClosed), true},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key value"}, false},
		{&pgconn.PgError{Code: "40001", Message: "could not serialize access"}, false},
		{context.Canceled, false},
		{errors.New("record attempt 1 of \"x\": no attempt row"), false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
