package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Request is a proof request as a worker sees it when it starts an attempt.
type Request struct {
	ID          int64
	RequestID   string
	Circuit     string
	Inputs      []byte // inputs JSON, or nil when Witness is set
	Witness     []byte // gnark full-witness binary, or nil
	Priority    int
	MaxAttempts int
	Attempt     int     // this attempt's number (1-based, across retries)
	QueueMs     float64 // from being queued to this claim, as recorded in the attempt row
	CreatedAt   time.Time
}

// Payload is what synthesis parses: the inputs JSON or the binary witness.
func (r *Request) Payload() []byte {
	if r.Inputs != nil {
		return r.Inputs
	}
	return r.Witness
}

// NotRunnableError says a job's request can no longer be worked on (it was cancelled,
// has succeeded, or failed for good); the job is completed without an attempt.
type NotRunnableError struct{ RequestID, State string }

func (e *NotRunnableError) Error() string {
	return fmt.Sprintf("request %q is %s", e.RequestID, e.State)
}

// ErrUnknownRequest is returned for a job whose request row no longer exists.
var ErrUnknownRequest = errors.New("unknown request")

// FailOrphaned ends requests whose River job was discarded while the request still
// looked alive: River's rescuer discards a stuck job that has no attempts left without
// telling cuzk (its worker died during the last attempt), and a worker that could not
// reach the database leaves the same state behind. Such requests become 'failed' and
// their running attempt 'interrupted'. It returns how many requests it ended.
func FailOrphaned(ctx context.Context, db DB) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			UPDATE cuzk.proof_requests r
			   SET state = 'failed', finished_at = now(), updated_at = now(),
			       last_error = 'no attempts left: the worker of the last attempt stopped without finishing it'
			  FROM public.river_job j
			 WHERE j.id = r.job_id AND j.state = 'discarded' AND r.state IN ('queued', 'running')
			RETURNING r.request_id`)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return err
		}
		n = int64(len(ids))
		_, err = tx.Exec(ctx, `
			UPDATE cuzk.proof_attempts
			   SET outcome = 'interrupted', finished_at = now(),
			       error = coalesce(error, 'worker stopped during the attempt (no attempts left)')
			 WHERE request_id = ANY($1) AND outcome = 'running'`, ids)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("fail orphaned requests: %w", err)
	}
	return n, nil
}

// QueuedCircuits are the registered circuits with queued requests, most urgent first.
func QueuedCircuits(ctx context.Context, db DB) ([]string, error) {
	rows, _ := db.Query(ctx, `
		SELECT r.circuit FROM cuzk.proof_requests r JOIN cuzk.circuits c ON c.name = r.circuit
		 WHERE r.state = 'queued'
		 GROUP BY r.circuit ORDER BY min(r.priority), min(r.created_at)`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the circuits of queued requests: %w", err)
	}
	return names, nil
}
