package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/sql/queries"
)

// River's own tables, read (and claimed from, ClaimJobsExcept) where River's API has no
// call for it.

// CancelRequest is what River's job row says about a cancel: Requested when
// cancel_attempted_at is in its metadata (as cuzk.cancel_proof and River's JobCancel
// write it), Running when the job is still running, so that a worker has one to stop.
type CancelRequest struct{ Requested, Running bool }

// CancelRequested reads job's cancel state in queue; a job not in queue (or none) has
// no cancel requested.
func CancelRequested(ctx context.Context, db DB, jobID int64, queue string) (CancelRequest, error) {
	var c CancelRequest
	err := db.QueryRow(ctx, queries.SQL("CancelRequested"), jobID, queue).Scan(&c.Requested, &c.Running)
	if errors.Is(err, pgx.ErrNoRows) {
		return CancelRequest{}, nil
	}
	if err != nil {
		return CancelRequest{}, fmt.Errorf("read cancel request of job %d: %w", jobID, err)
	}
	return c, nil
}

// QueuePaused says whether River's queue is paused; ok is false when River has no row
// for it.
func QueuePaused(ctx context.Context, db DB, queue string) (paused, ok bool, err error) {
	err = db.QueryRow(ctx, queries.SQL("QueuePaused"), queue).Scan(&paused)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read pause state of queue %s: %w", queue, err)
	}
	return paused, true, nil
}

// JobCount is how many of a queue's jobs are in one of River's states.
type JobCount struct {
	State string
	N     int64
}

// QueueJobs counts queue's jobs that are not finished, by state, in the order
// available, running, scheduled, retryable, pending (every state, zero included).
func QueueJobs(ctx context.Context, db DB, queue string) ([]JobCount, error) {
	counts := []JobCount{{State: "available"}, {State: "running"}, {State: "scheduled"}, {State: "retryable"}, {State: "pending"}}
	dest := make([]any, len(counts))
	for i := range counts {
		dest[i] = &counts[i].N
	}
	err := db.QueryRow(ctx, queries.SQL("QueueJobs"), queue).Scan(dest...)
	if err != nil {
		return nil, fmt.Errorf("count River jobs in queue %s: %w", queue, err)
	}
	return counts, nil
}

// RepairedJob is a queued request whose River job was changed outside cuzk, and what
// cuzk.repair_jobs did about it: "requeued" (waiting for a new job), "cancelled", or
// "moved" (a waiting job put in the queue of its request's priority, cuzk.job_queue).
type RepairedJob struct {
	RequestID string
	JobID     int64
	Action    string
}

// RepairJobs runs cuzk.repair_jobs: queued requests whose River job was deleted or
// completed outside cuzk (River UI, River's API, SQL) wait for a new job, and those
// whose job was cancelled there are cancelled, so that none stays queued forever; a
// waiting job in the queue of another priority than its request's is moved to its own.
func RepairJobs(ctx context.Context, db DB) ([]RepairedJob, error) {
	rows, _ := db.Query(ctx, queries.SQL("RepairJobs"))
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[RepairedJob])
	if err != nil {
		return nil, fmt.Errorf("repair requests whose River job was changed outside cuzk: %w", err)
	}
	return list, nil
}

// AdmitWaiting runs cuzk.admit_waiting: every submitter's waiting requests get the
// River jobs its admitted ones leave room for, where an admission was missed. It
// returns how many it admitted.
func AdmitWaiting(ctx context.Context, db DB) (int, error) {
	var n int
	if err := db.QueryRow(ctx, queries.SQL("AdmitWaiting")).Scan(&n); err != nil {
		return 0, fmt.Errorf("admit waiting requests: %w", err)
	}
	return n, nil
}

// ScrubEndedInputs runs cuzk.scrub_ended_inputs: the inputs of up to limit failed or
// cancelled requests ended longer ago than cuzk.settings ended_inputs_kept are
// removed. It returns how many requests it scrubbed.
func ScrubEndedInputs(ctx context.Context, db DB, limit int) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, queries.SQL("ScrubEndedInputs"), limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("scrub the inputs of ended requests: %w", err)
	}
	return n, nil
}

// ClaimJobsExcept is River's fetch of available jobs (riverdriver's JobGetAvailable,
// whose params it takes) that leaves out the jobs except: the rows are locked as
// running for the client as River's query would, and read back through the driver, in
// one transaction.
func ClaimJobsExcept(ctx context.Context, db DB, p *riverdriver.JobGetAvailableParams, except []int64) ([]*rivertype.JobRow, error) {
	var jobs []*rivertype.JobRow
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, queries.SQL("ClaimJobsExcept"), p.Queue, p.ClientID, p.MaxToLock, p.MaxAttemptedBy, p.Now, except, p.Kind)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		jobs, err = riverpgxv5.New(nil).UnwrapExecutor(tx).JobGetByIDMany(ctx, &riverdriver.JobGetByIDManyParams{ID: ids})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim jobs of queue %s: %w", p.Queue, err)
	}
	return jobs, nil
}
