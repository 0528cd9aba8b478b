package faults

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A truncated proving key (the pk.dump cuzk setup writes) is a transient fault: the
// attempt fails with an error naming the file, its size and the size it should have, is
// retried after backoff, and once the file is repaired the request succeeds.
func TestTruncatedKeyRetriedUntilRepaired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pk, saved := e.pkFile(small)
	half := len(saved) / 2
	if err := os.Truncate(pk, int64(half)); err != nil {
		t.Fatal(err)
	}
	ids := e.submit("torn", small, 1, 20)
	w := e.start("torn-a", "--retry-backoff", "200ms")
	var first string
	e.waitFor(time.Minute, "a failed attempt", func(ctx context.Context) (bool, string, error) {
		err := e.pool.QueryRow(ctx, `SELECT error FROM cuzk.proof_attempts WHERE request_id = $1 AND outcome = 'retryable' ORDER BY attempt LIMIT 1`, ids[0]).Scan(&first)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, "no failed attempt yet", nil
		}
		return err == nil, first, err
	})
	for _, want := range []string{pk, "truncated or damaged", strconv.Itoa(half) + " bytes", strconv.Itoa(len(saved)) + " expected", "cuzk.circuits.pk_digest"} {
		if !strings.Contains(first, want) {
			t.Errorf("attempt error %q does not say %q", first, want)
		}
	}
	if err := os.WriteFile(pk, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitStates(time.Minute, "succeeded", ids)
	w.alive(t)
	e.exactlyOnce(ids)
}
