package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/sql/queries"
)

// Origin is what produces an attempt: the worker process, its build and the settings
// that change performance, recorded so timings can be compared across them.
type Origin struct {
	Worker     string // host/pid
	Build      string // module version and VCS revision, "+dirty" when modified
	ConfigHash string // stable hash of Config
	Config     []byte // jsonb of the performance settings
}

// BeginAttempt claims a request for a new attempt: it marks attempts left 'running' by
// a dead worker as 'interrupted', moves the request to 'running', and inserts the
// attempt row. All in one transaction, so two workers never share an attempt number.
//
// Attempt rows are numbered 1, 2, 3, ... per request, every row that was ever begun.
// proof_requests.attempts counts the attempts that used up one of max_attempts, as
// River's job attempt does: an attempt handed back on worker shutdown (HandBack) keeps
// its row, numbered, but gives its count back. So attempts <= the highest row number.
func BeginAttempt(ctx context.Context, db DB, requestID string, jobID int64, origin Origin, queuedAt time.Time) (*Request, error) {
	var r Request
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// The claim need not wait for its WAL flush (about one disk sync, most of the
		// claim's cost): River's fetch, which commits synchronously, already made the
		// job running. If the server crashes before the flush, this attempt row is
		// lost; the proof's store then finds no attempt row and fails, and the job is
		// retried with a fresh claim. Nothing is stored without a durable claim.
		if _, err := tx.Exec(ctx, queries.SQL("ClaimWithoutFlushWait")); err != nil {
			return fmt.Errorf("claim %q: %w", requestID, err)
		}
		var state string
		var inputs *string
		var counted int
		err := tx.QueryRow(ctx, queries.SQL("LockRequestForAttempt"), requestID).
			Scan(&r.ID, &r.RequestID, &r.Circuit, &inputs, &r.Witness, &r.Partitions, &r.Priority, &r.MaxAttempts, &counted, &state, &r.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %q", ErrUnknownRequest, requestID)
		}
		if err != nil {
			return fmt.Errorf("load request %q: %w", requestID, err)
		}
		if inputs != nil {
			r.Inputs = []byte(*inputs)
		}
		if state != "queued" && state != "running" {
			return &NotRunnableError{RequestID: requestID, State: state}
		}
		// A statement of its own, so that it sees the rows of an attempt begun by the
		// transaction that held the lock just before.
		if err := tx.QueryRow(ctx, queries.SQL("NextAttemptNumber"), requestID).Scan(&r.Attempt); err != nil {
			return fmt.Errorf("number the attempt of %q: %w", requestID, err)
		}
		if _, err := tx.Exec(ctx, queries.SQL("InterruptRunningAttempts"), requestID); err != nil {
			return fmt.Errorf("mark interrupted attempts of %q: %w", requestID, err)
		}
		if _, err := tx.Exec(ctx, queries.SQL("MarkRequestRunning"), r.ID, counted+1); err != nil {
			return fmt.Errorf("mark %q running: %w", requestID, err)
		}
		if err := tx.QueryRow(ctx, queries.SQL("InsertAttempt"),
			requestID, r.Attempt, r.Circuit, jobID, origin.Worker, nullString(origin.Build),
			nullString(origin.ConfigHash), origin.Config, queuedAt).Scan(&r.QueueMs); err != nil {
			return fmt.Errorf("insert attempt %d of %q: %w", r.Attempt, requestID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Attempt is the finished record of one attempt. Nil timings are phases it never
// reached; PhaseMs reads them by the names of package phase.
type Attempt struct {
	RequestID string
	Circuit   string // not written by FinishAttempt: set for observers
	Attempt   int
	Outcome   string // succeeded | failed | retryable | interrupted | cancelled
	Error     string

	Backend, Device  string
	BatchID          uuid.UUID
	BatchSize        int
	MemReservedBytes int64

	SynthStartedAt, ProveStartedAt, FinishedAt time.Time

	QueueMs *float64 // written by BeginAttempt; here for observers

	BatchWaitMs, MemWaitMs, SrsMs, SynthMs, ProveWaitMs, ProveMs, NttMs, MsmMs, VerifyMs, PersistMs, TotalMs *float64
	H2DMs, MsmG1Ms, MsmG2Ms                                                                                  *float64 // device phases inside prove_ms

	Telemetry []byte // jsonb, may be nil
}

// Ms converts a duration to the fractional milliseconds stored in attempt rows.
func Ms(d time.Duration) *float64 {
	v := float64(d) / float64(time.Millisecond)
	return &v
}

// PhaseMs is the attempt's time in the phase called name, nil when it never reached it
// or name is no phase.
func (a *Attempt) PhaseMs(name string) *float64 {
	if f := a.phaseField(name); f != nil {
		return *f
	}
	return nil
}

// phaseField is the field holding phase name, one for each of phase.All.
func (a *Attempt) phaseField(name string) **float64 {
	switch name {
	case phase.Queue:
		return &a.QueueMs
	case phase.BatchWait:
		return &a.BatchWaitMs
	case phase.MemWait:
		return &a.MemWaitMs
	case phase.SRS:
		return &a.SrsMs
	case phase.Synth:
		return &a.SynthMs
	case phase.ProveWait:
		return &a.ProveWaitMs
	case phase.Prove:
		return &a.ProveMs
	case phase.H2D:
		return &a.H2DMs
	case phase.NTT:
		return &a.NttMs
	case phase.MSM:
		return &a.MsmMs
	case phase.MSMG1:
		return &a.MsmG1Ms
	case phase.MSMG2:
		return &a.MsmG2Ms
	case phase.Verify:
		return &a.VerifyMs
	case phase.Persist:
		return &a.PersistMs
	case phase.Total:
		return &a.TotalMs
	}
	return nil
}

// FinishAttempt writes an attempt's outcome and timings: every phase's column but
// queue_ms, which BeginAttempt wrote from the database's clock.
func FinishAttempt(ctx context.Context, db DB, a *Attempt) error {
	var batchID *uuid.UUID
	if a.BatchID != uuid.Nil {
		batchID = &a.BatchID
	}
	var batchSize *int
	if a.BatchSize > 0 {
		batchSize = &a.BatchSize
	}
	var mem *int64
	if a.MemReservedBytes > 0 {
		mem = &a.MemReservedBytes
	}
	args := []any{a.RequestID, a.Attempt, a.Outcome, nullString(CapError(a.Error)), nullString(a.Backend), nullString(a.Device),
		batchID, batchSize, mem, nullTime(a.SynthStartedAt), nullTime(a.ProveStartedAt), nullTime(a.FinishedAt), a.Telemetry}
	// The phases after the queue's, in the order the query lists their columns.
	for _, p := range phase.All() {
		if p.Name != phase.Queue {
			args = append(args, a.PhaseMs(p.Name))
		}
	}
	tag, err := db.Exec(ctx, queries.SQL("FinishAttempt"), args...)
	if err != nil {
		return fmt.Errorf("record attempt %d of %q: %w", a.Attempt, a.RequestID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("record attempt %d of %q: no attempt row", a.Attempt, a.RequestID)
	}
	return nil
}

// SetPhases sets the attempt's phase times from d (by the names of package phase), in
// the fractional milliseconds of the attempt row; a phase d lacks keeps its value.
func (a *Attempt) SetPhases(d map[string]time.Duration) {
	for _, p := range phase.All() {
		if v, ok := d[p.Name]; ok {
			*a.phaseField(p.Name) = Ms(v)
		}
	}
}
