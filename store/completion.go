package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/sql/queries"
)

// CompleteAttempt stores a verified proof, completes its River job and records the
// attempt, all in one transaction on db, so that a proof is never stored without its
// job done and its attempt row, nor the reverse. A proof that StoreProof refuses is
// no error: the attempt is recorded as interrupted (another attempt stored the
// request's proof) or cancelled, and the job completed all the same. stamp runs once
// the job is complete, just before the attempt row is written, to set the attempt's
// last timings (the time spent storing is known only then).
func CompleteAttempt[A river.JobArgs](ctx context.Context, db DB, job *river.Job[A], p *Proof, scrub bool,
	a *Attempt, stamp func(*Attempt)) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		err := StoreProof(ctx, tx, p, scrub)
		switch {
		case errors.Is(err, ErrDuplicateProof):
			a.Outcome, a.Error = "interrupted", err.Error()
		case errors.Is(err, ErrCancelled):
			a.Outcome, a.Error = "cancelled", err.Error()
		case err != nil:
			return err
		default:
			a.Outcome = "succeeded"
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("complete job %d: %w", job.ID, err)
		}
		stamp(a)
		return FinishAttempt(ctx, tx, a)
	})
}

// Failure is what becomes of the request and the job of an attempt that failed.
type Failure struct {
	Err string // the attempt's error, for the request's last_error and the job's errors
	// HandBack: a worker shutdown stopped the attempt; the request goes back to the
	// queue and its attempt is not counted (HandBack).
	HandBack bool
	// Final: no attempt is left, or none would help; the request fails for good.
	Final bool
	// Job and StartedAt are for the job's errors when the attempt's outcome is
	// 'failed' (DiscardJob).
	Job       *rivertype.JobRow
	StartedAt time.Time
}

// FailAttempt records a failed attempt and moves its request on as f says, in one
// transaction on db: handed back, queued again for River's retry, or failed with its
// job discarded.
func FailAttempt(ctx context.Context, db DB, a *Attempt, f Failure) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := FinishAttempt(ctx, tx, a); err != nil {
			return err
		}
		if f.HandBack {
			return HandBack(ctx, tx, a.RequestID, a.Attempt, f.Err)
		}
		if err := SetRequestOutcome(ctx, tx, a.RequestID, a.Attempt, f.Err, f.Final); err != nil {
			return err
		}
		if a.Outcome == "failed" {
			return DiscardJob(ctx, tx, f.Job.ID, f.Job.Attempt, f.StartedAt, f.Err)
		}
		return nil
	})
}

// Proof is a verified proof to store.
type Proof struct {
	RequestID, Circuit   string
	Proof, PublicWitness []byte
	Attempt              int
	Worker, Backend      string
	// VKDigest is the hex SHA-256 of the verifying key (gnark WriteTo) the proof was
	// made and checked with; it names the key version stored with the proof. Empty:
	// the circuit's current key.
	VKDigest string
	// Partitions > 1: the request is partitioned, its partitions' proofs are stored
	// (StorePartition), and Proof and PublicWitness are unused.
	Partitions int
}

// ErrDuplicateProof means another attempt already stored this request's proof (a
// rescued job finishing late); nothing was written.
var ErrDuplicateProof = errors.New("proof already stored by another attempt")

// ErrCancelled means the request was cancelled while the attempt ran.
var ErrCancelled = errors.New("request was cancelled")

// StoreProof inserts the proof and moves the request to 'succeeded', scrubbing its
// private inputs when asked. It refuses (ErrDuplicateProof, ErrCancelled) rather than
// writing a second proof or resurrecting a cancelled request.
func StoreProof(ctx context.Context, db DB, p *Proof, scrub bool) error {
	var state string
	if err := db.QueryRow(ctx, queries.SQL("LockRequestState"), p.RequestID).Scan(&state); err != nil {
		return fmt.Errorf("lock request %q: %w", p.RequestID, err)
	}
	if state == "cancelled" {
		return ErrCancelled
	}
	inserted, err := insertProof(ctx, db, p)
	if err != nil {
		return err
	}
	if inserted == 0 {
		// The row may be this very attempt's, from a commit whose answer the connection
		// lost before a retry: then storing is done, not a duplicate.
		var attempt int
		var worker string
		if err := db.QueryRow(ctx, queries.SQL("StoredProofOrigin"), p.RequestID).Scan(&attempt, &worker); err != nil {
			return fmt.Errorf("read stored proof of %q: %w", p.RequestID, err)
		}
		if attempt != p.Attempt || worker != p.Worker {
			return ErrDuplicateProof
		}
	}
	if _, err := db.Exec(ctx, queries.SQL("MarkRequestSucceeded"), p.RequestID, scrub); err != nil {
		return fmt.Errorf("mark %q succeeded: %w", p.RequestID, err)
	}
	return nil
}

// insertProof writes the request's proofs row unless it has one, and says how many rows
// it wrote.
func insertProof(ctx context.Context, db DB, p *Proof) (int64, error) {
	if p.Partitions > 1 {
		return insertPartitionedProof(ctx, db, p, p.Partitions)
	}
	version, err := keyVersion(ctx, db, p.Circuit, p.VKDigest)
	if err != nil {
		return 0, err
	}
	tag, err := db.Exec(ctx, queries.SQL("InsertProof"),
		p.RequestID, p.Circuit, p.Proof, p.PublicWitness, p.Attempt, p.Worker, p.Backend, version)
	if err != nil {
		return 0, fmt.Errorf("insert proof of %q: %w", p.RequestID, err)
	}
	return tag.RowsAffected(), nil
}

// SetRequestOutcome records a failed attempt on the request: 'failed' when no attempt
// is left (final), else back to 'queued' for River's retry. A cancelled request stays
// cancelled, and an attempt that a later one has superseded (its job was rescued while
// it ran) changes nothing.
func SetRequestOutcome(ctx context.Context, db DB, requestID string, attempt int, errMsg string, final bool) error {
	state := "queued"
	if final {
		state = "failed"
	}
	_, err := db.Exec(ctx, queries.SQL("SetRequestOutcome"),
		requestID, state, CapError(errMsg), attempt)
	if err != nil {
		return fmt.Errorf("mark %q %s: %w", requestID, state, err)
	}
	return nil
}

// DiscardJob ends the running River job of a request that failed for good as
// discarded, with errMsg as the attempt's entry in the job's errors. It runs in the
// transaction that marks the request failed, so River shows every failed request the
// same way whether it ran out of attempts or failed at once (bad input), which River
// would otherwise show as cancelled. River's own completion of the job afterwards
// changes nothing: it updates running jobs only. A job rescued meanwhile and running
// another attempt is left alone.
func DiscardJob(ctx context.Context, db DB, jobID int64, attempt int, at time.Time, errMsg string) error {
	_, err := db.Exec(ctx, queries.SQL("DiscardJob"), jobID, attempt, at, CapError(errMsg))
	if err != nil {
		return fmt.Errorf("discard job %d: %w", jobID, err)
	}
	return nil
}

// HandBack returns a request whose attempt was stopped by a worker shutdown to the
// queue and gives back the attempt it counted: the attempt row stays (outcome
// 'interrupted'), but it does not use up one of max_attempts, matching River, which
// makes the job available again without counting the attempt.
func HandBack(ctx context.Context, db DB, requestID string, attempt int, reason string) error {
	_, err := db.Exec(ctx, queries.SQL("HandBack"),
		requestID, attempt, CapError(reason))
	if err != nil {
		return fmt.Errorf("hand %q back to the queue: %w", requestID, err)
	}
	return nil
}
