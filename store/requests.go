package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/sql/queries"
)

// Request is a proof request as a worker sees it when it starts an attempt.
type Request struct {
	ID          int64
	RequestID   string
	Circuit     string
	Inputs      []byte // inputs JSON, or nil when Witness is set
	Witness     []byte // gnark full-witness binary, or nil
	Partitions  int    // 1, or the length of the inputs array of a partitioned request
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
		rows, err := tx.Query(ctx, queries.SQL("FailOrphanedRequests"))
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return err
		}
		n = int64(len(ids))
		_, err = tx.Exec(ctx, queries.SQL("InterruptOrphanedAttempts"), ids)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("fail orphaned requests: %w", err)
	}
	return n, nil
}

// QueuedCircuits are the registered circuits with queued requests, most urgent first.
func QueuedCircuits(ctx context.Context, db DB) ([]string, error) {
	rows, _ := db.Query(ctx, queries.SQL("QueuedCircuits"))
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the circuits of queued requests: %w", err)
	}
	return names, nil
}

// Submission is a proof request as cuzk.submit_proof takes it.
type Submission struct {
	RequestID, Circuit string
	Inputs             []byte // inputs JSON, or nil
	Witness            []byte // gnark full-witness binary, or nil
	// Priority and MaxAttempts of 0 leave cuzk.submit_proof's defaults.
	Priority, MaxAttempts int
}

// Submit submits a request through cuzk.submit_proof and returns its id; a request
// id submitted before returns the existing request's id and enqueues nothing.
func Submit(ctx context.Context, db DB, s *Submission) (int64, error) {
	var inputs any
	if s.Inputs != nil {
		inputs = string(s.Inputs)
	}
	var priority, maxAttempts *int
	if s.Priority != 0 {
		priority = &s.Priority
	}
	if s.MaxAttempts != 0 {
		maxAttempts = &s.MaxAttempts
	}
	var id int64
	if err := db.QueryRow(ctx, queries.SQL("Submit"), s.RequestID, s.Circuit, inputs, s.Witness, priority, maxAttempts).Scan(&id); err != nil {
		return 0, fmt.Errorf("submit %q: %w", s.RequestID, err)
	}
	return id, nil
}

// RequestState is a request's state and last error (cuzk.proof_status).
func RequestState(ctx context.Context, db DB, requestID string) (state, lastError string, err error) {
	var le *string
	if err := db.QueryRow(ctx, queries.SQL("RequestState"), requestID).Scan(&state, &le); err != nil {
		return "", "", fmt.Errorf("read state of %q: %w", requestID, err)
	}
	if le != nil {
		lastError = *le
	}
	return state, lastError, nil
}

// Status is a row of cuzk.proof_status.
type Status struct {
	RequestID  string
	Circuit    string
	State      string
	Attempts   int
	LastError  string
	CreatedAt  time.Time
	FinishedAt *time.Time
}

// StatusFilter picks the rows of Statuses: the named requests (all when none), in
// state (any when ""), the limit most recent.
type StatusFilter struct {
	RequestIDs []string
	State      string
	Limit      int
}

// Statuses lists requests' status, most recent first.
func Statuses(ctx context.Context, db DB, f StatusFilter) ([]Status, error) {
	rows, err := db.Query(ctx, queries.SQL("Statuses"), f.RequestIDs, f.State, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("read request status: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Status])
	if err != nil {
		return nil, fmt.Errorf("read request status: %w", err)
	}
	return list, nil
}

// FailedSince lists the requests that failed within the last d, oldest first.
func FailedSince(ctx context.Context, db DB, d time.Duration) ([]string, error) {
	rows, err := db.Query(ctx, queries.SQL("FailedSince"), interval(d))
	if err != nil {
		return nil, fmt.Errorf("read failed requests: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read failed requests: %w", err)
	}
	return ids, nil
}

// Retry queues a failed or cancelled request again (cuzk.retry_proof) and returns its
// new job's id, or nil while the request waits for admission behind its submitter's
// other queued requests.
func Retry(ctx context.Context, db DB, requestID string) (*int64, error) {
	var job *int64
	if err := db.QueryRow(ctx, queries.SQL("Retry"), requestID).Scan(&job); err != nil {
		return nil, fmt.Errorf("cuzk.retry_proof: %w", err)
	}
	return job, nil
}

// Cancel cancels a request (cuzk.cancel_proof). cancelled is false when it had
// already ended; state then says how ("" for an unknown request).
func Cancel(ctx context.Context, db DB, requestID string) (cancelled bool, state string, err error) {
	if err := db.QueryRow(ctx, queries.SQL("Cancel"), requestID).Scan(&cancelled, &state); err != nil {
		return false, "", fmt.Errorf("cuzk.cancel_proof: %w", err)
	}
	return cancelled, state, nil
}

// RequestCounts counts every request that has finished, and those that failed.
func RequestCounts(ctx context.Context, db DB) (finished, failed int, err error) {
	if err := db.QueryRow(ctx, queries.SQL("RequestCounts")).Scan(&finished, &failed); err != nil {
		return 0, 0, fmt.Errorf("count finished requests: %w", err)
	}
	return finished, failed, nil
}
