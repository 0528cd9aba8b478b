// Package store is cuzk's one seam to PostgreSQL: the queries the worker and the CLI run
// against the schema that package migrations creates. Orchestrators never need it;
// they use the SQL functions and views directly.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/phase"
)

// Store runs cuzk's queries on a pool.
type Store struct {
	Pool *pgxpool.Pool
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{Pool: pool} }

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
func (s *Store) BeginAttempt(ctx context.Context, requestID string, jobID int64, origin Origin, queuedAt time.Time) (*Request, error) {
	var r Request
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		// The claim need not wait for its WAL flush (about one disk sync, most of the
		// claim's cost): River's fetch, which commits synchronously, already made the
		// job running. If the server crashes before the flush, this attempt row is
		// lost; the proof's store then finds no attempt row and fails, and the job is
		// retried with a fresh claim. Nothing is stored without a durable claim.
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
			return fmt.Errorf("claim %q: %w", requestID, err)
		}
		var state string
		var inputs *string
		var counted int
		err := tx.QueryRow(ctx, `
			SELECT id, request_id, circuit, inputs::text, witness, priority, max_attempts, attempts, state, created_at
			  FROM cuzk.proof_requests WHERE request_id = $1 FOR UPDATE`, requestID).
			Scan(&r.ID, &r.RequestID, &r.Circuit, &inputs, &r.Witness, &r.Priority, &r.MaxAttempts, &counted, &state, &r.CreatedAt)
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
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(attempt), 0) + 1 FROM cuzk.proof_attempts WHERE request_id = $1`,
			requestID).Scan(&r.Attempt); err != nil {
			return fmt.Errorf("number the attempt of %q: %w", requestID, err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE cuzk.proof_attempts
			   SET outcome = 'interrupted', finished_at = now(),
			       error = coalesce(error, 'worker stopped during the attempt (rescued)')
			 WHERE request_id = $1 AND outcome = 'running'`, requestID); err != nil {
			return fmt.Errorf("mark interrupted attempts of %q: %w", requestID, err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE cuzk.proof_requests SET state = 'running', attempts = $2, updated_at = now()
			 WHERE id = $1`, r.ID, counted+1); err != nil {
			return fmt.Errorf("mark %q running: %w", requestID, err)
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO cuzk.proof_attempts (request_id, attempt, circuit, job_id, worker, build, config_hash, config,
			                                 started_at, queue_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
			        now(), greatest(0, extract(epoch FROM now() - $9::timestamptz) * 1000))
			RETURNING queue_ms`,
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

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
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
func FinishAttempt(ctx context.Context, tx pgx.Tx, a *Attempt) error {
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
	var set strings.Builder
	set.WriteString(`
		UPDATE cuzk.proof_attempts SET
		    outcome = $3, error = $4, backend = $5, device = $6, batch_id = $7, batch_size = $8,
		    mem_reserved_bytes = $9, synth_started_at = $10, prove_started_at = $11,
		    finished_at = coalesce($12, now()), telemetry = $13`)
	for _, p := range phase.All() {
		if p.Name == phase.Queue {
			continue
		}
		args = append(args, a.PhaseMs(p.Name))
		fmt.Fprintf(&set, ", %s = $%d", p.Column, len(args))
	}
	set.WriteString(`
		 WHERE request_id = $1 AND attempt = $2`)
	tag, err := tx.Exec(ctx, set.String(), args...)
	if err != nil {
		return fmt.Errorf("record attempt %d of %q: %w", a.Attempt, a.RequestID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("record attempt %d of %q: no attempt row", a.Attempt, a.RequestID)
	}
	return nil
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
}

// ErrDuplicateProof means another attempt already stored this request's proof (a
// rescued job finishing late); nothing was written.
var ErrDuplicateProof = errors.New("proof already stored by another attempt")

// ErrCancelled means the request was cancelled while the attempt ran.
var ErrCancelled = errors.New("request was cancelled")

// StoreProof inserts the proof and moves the request to 'succeeded', scrubbing its
// private inputs when asked. It refuses (ErrDuplicateProof, ErrCancelled) rather than
// writing a second proof or resurrecting a cancelled request.
func StoreProof(ctx context.Context, tx pgx.Tx, p *Proof, scrub bool) error {
	var state string
	if err := tx.QueryRow(ctx, `SELECT state FROM cuzk.proof_requests WHERE request_id = $1 FOR UPDATE`, p.RequestID).Scan(&state); err != nil {
		return fmt.Errorf("lock request %q: %w", p.RequestID, err)
	}
	if state == "cancelled" {
		return ErrCancelled
	}
	version, err := keyVersion(ctx, tx, p.Circuit, p.VKDigest)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO cuzk.proofs (request_id, circuit, proof, public_witness, attempt, worker, backend, key_version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (request_id) DO NOTHING`,
		p.RequestID, p.Circuit, p.Proof, p.PublicWitness, p.Attempt, p.Worker, p.Backend, version)
	if err != nil {
		return fmt.Errorf("insert proof of %q: %w", p.RequestID, err)
	}
	if tag.RowsAffected() == 0 {
		// The row may be this very attempt's, from a commit whose answer the connection
		// lost before a retry: then storing is done, not a duplicate.
		var attempt int
		var worker string
		if err := tx.QueryRow(ctx, `SELECT attempt, worker FROM cuzk.proofs WHERE request_id = $1`, p.RequestID).Scan(&attempt, &worker); err != nil {
			return fmt.Errorf("read stored proof of %q: %w", p.RequestID, err)
		}
		if attempt != p.Attempt || worker != p.Worker {
			return ErrDuplicateProof
		}
	}
	scrubSQL := ""
	if scrub {
		scrubSQL = ", inputs = NULL, witness = NULL, inputs_scrubbed_at = now()"
	}
	if _, err := tx.Exec(ctx, `
		UPDATE cuzk.proof_requests SET state = 'succeeded', last_error = NULL, finished_at = now(), updated_at = now()`+scrubSQL+`
		 WHERE request_id = $1`, p.RequestID); err != nil {
		return fmt.Errorf("mark %q succeeded: %w", p.RequestID, err)
	}
	return nil
}

// SetRequestOutcome records a failed attempt on the request: 'failed' when no attempt
// is left (final), else back to 'queued' for River's retry. A cancelled request stays
// cancelled, and an attempt that a later one has superseded (its job was rescued while
// it ran) changes nothing.
func SetRequestOutcome(ctx context.Context, tx pgx.Tx, requestID string, attempt int, errMsg string, final bool) error {
	state := "queued"
	if final {
		state = "failed"
	}
	_, err := tx.Exec(ctx, `
		UPDATE cuzk.proof_requests r
		   SET state = $2, last_error = $3, updated_at = now(),
		       finished_at = CASE WHEN $2 = 'failed' THEN now() ELSE NULL END
		 WHERE r.request_id = $1 AND r.state = 'running'
		   AND NOT EXISTS (SELECT 1 FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id AND a.attempt > $4)`,
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
func DiscardJob(ctx context.Context, tx pgx.Tx, jobID int64, attempt int, at time.Time, errMsg string) error {
	_, err := tx.Exec(ctx, `
		UPDATE public.river_job
		   SET state = 'discarded', finalized_at = now(),
		       errors = array_append(errors, jsonb_build_object('at', $3::timestamptz, 'attempt', $2::int, 'error', $4::text, 'trace', ''))
		 WHERE id = $1 AND state = 'running' AND attempt = $2`, jobID, attempt, at, CapError(errMsg))
	if err != nil {
		return fmt.Errorf("discard job %d: %w", jobID, err)
	}
	return nil
}

// HandBack returns a request whose attempt was stopped by a worker shutdown to the
// queue and gives back the attempt it counted: the attempt row stays (outcome
// 'interrupted'), but it does not use up one of max_attempts, matching River, which
// makes the job available again without counting the attempt.
func HandBack(ctx context.Context, tx pgx.Tx, requestID string, attempt int, reason string) error {
	_, err := tx.Exec(ctx, `
		UPDATE cuzk.proof_requests r
		   SET state = 'queued', attempts = greatest(r.attempts - 1, 0), last_error = $3, updated_at = now()
		 WHERE r.request_id = $1 AND r.state = 'running'
		   AND NOT EXISTS (SELECT 1 FROM cuzk.proof_attempts a WHERE a.request_id = r.request_id AND a.attempt > $2)`,
		requestID, attempt, CapError(reason))
	if err != nil {
		return fmt.Errorf("hand %q back to the queue: %w", requestID, err)
	}
	return nil
}

// FailOrphaned ends requests whose River job was discarded while the request still
// looked alive: River's rescuer discards a stuck job that has no attempts left without
// telling cuzk (its worker died during the last attempt), and a worker that could not
// reach the database leaves the same state behind. Such requests become 'failed' and
// their running attempt 'interrupted'. It returns how many requests it ended.
func FailOrphaned(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
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

// RescuedJob is a running job handed back because its worker stopped heartbeating.
type RescuedJob struct {
	JobID     int64
	Worker    string
	Discarded bool // it had no attempt left
}

// RescueDeadWorkers marks workers other than self whose heartbeat is older than
// deadAfter as stopped and hands their running jobs in queue back: available again at
// once when attempts remain (the dead attempt counts, as with River's own rescuer),
// discarded otherwise. River's rescuer would do the same, but only after the job's
// rescue-after, which must be longer than the longest proof; a heartbeat tells a dead
// worker from a slow one much sooner. If the worker was alive after all (a network
// partition), its late completion finds the job no longer running, and the one-proof
// rules keep a second proof out.
func RescueDeadWorkers(ctx context.Context, db *pgxpool.Pool, self string, deadAfter time.Duration, queue string) ([]RescuedJob, error) {
	rows, err := db.Query(ctx, `
		WITH dead AS (
		    UPDATE cuzk.workers SET stopped_at = now()
		     WHERE stopped_at IS NULL AND worker <> $1 AND river_client_id IS NOT NULL
		       AND last_seen_at < now() - make_interval(secs => $2)
		    RETURNING worker, river_client_id,
		              'worker ' || worker || ' stopped heartbeating during the attempt (rescued)' AS reason)
		`+handBackJobs, self, deadAfter.Seconds(), queue)
	return collectRescued(rows, err, "rescue the jobs of dead workers")
}

// HandBackClientJobs hands the running jobs in queue last claimed under River client
// clientID back, as RescueDeadWorkers does, with reason in each job's errors: for a
// worker restarted under its name, whose previous process is known to be gone.
func HandBackClientJobs(ctx context.Context, db *pgxpool.Pool, clientID, queue, reason string) ([]RescuedJob, error) {
	rows, err := db.Query(ctx, `
		WITH dead AS (SELECT ''::text AS worker, $1::text AS river_client_id, $2::text AS reason)
		`+handBackJobs, clientID, reason, queue)
	return collectRescued(rows, err, "hand back the jobs of the previous process")
}

// handBackJobs follows a CTE dead(worker, river_client_id, reason) and takes the
// queue as $3.
const handBackJobs = `
		UPDATE river_job j
		   SET state = (CASE WHEN j.attempt < j.max_attempts THEN 'available' ELSE 'discarded' END)::river_job_state,
		       scheduled_at = now(),
		       finalized_at = CASE WHEN j.attempt < j.max_attempts THEN NULL ELSE now() END,
		       errors = array_append(j.errors, jsonb_build_object(
		           'at', now(), 'attempt', j.attempt, 'trace', '', 'error', d.reason))
		  FROM dead d
		 WHERE j.state = 'running' AND j.queue = $3
		   AND j.attempted_by[array_upper(j.attempted_by, 1)] = d.river_client_id
		RETURNING j.id, d.worker, j.state = 'discarded'`

func collectRescued(rows pgx.Rows, err error, what string) ([]RescuedJob, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RescuedJob, error) {
		var j RescuedJob
		return j, r.Scan(&j.JobID, &j.Worker, &j.Discarded)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// PruneWorkers deletes cuzk.workers rows of workers stopped longer ago than keep: each
// process start adds a row (host/pid), and a fleet restarted daily for months would
// otherwise carry them all.
func PruneWorkers(ctx context.Context, db *pgxpool.Pool, keep time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM cuzk.workers WHERE stopped_at < now() - make_interval(secs => $1)`, keep.Seconds())
	if err != nil {
		return 0, fmt.Errorf("prune stopped workers: %w", err)
	}
	return tag.RowsAffected(), nil
}
