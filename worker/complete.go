package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// persist verifies the item's proof (out.proved) and stores it, the attempt row and the
// job completion in one transaction.
func (w *Worker) persist(ctx context.Context, it *item, out outcome, log *slog.Logger) error {
	att, p := out.att, out.proved
	proofBytes, err := w.checkProof(ctx, att, p)
	if err != nil {
		return w.fail(ctx, it.job, att, err, log)
	}

	t := time.Now()
	var persisted []phaseTime // the last write's, which a failed attempt's row keeps
	err = w.retryDB(ctx, log, "store proof", func(ctx context.Context) error {
		return store.CompleteAttempt(ctx, w.pool, it.job, &store.Proof{
			RequestID: it.req.RequestID, Circuit: it.req.Circuit,
			Proof: proofBytes, PublicWitness: p.public,
			Attempt: it.req.Attempt, Worker: w.cfg.Name, Backend: att.row.Backend, VKDigest: p.vkDigest,
		}, w.cfg.ScrubInputs, &att.row, func(a *store.Attempt) {
			persisted = []phaseTime{{phase.Persist, time.Since(t)}}
			a.FinishedAt = time.Now()
			a.SetPhases(att.clock.phases(a.FinishedAt, persisted...))
		})
	})
	if err != nil {
		return w.fail(ctx, it.job, att, fmt.Errorf("store proof: %w", err), log, persisted...)
	}
	w.observe(&att.row)
	log.Info("proof stored", "outcome", att.row.Outcome, "total_ms", *att.row.TotalMs,
		"synth_ms", deref(att.row.SynthMs), "prove_ms", deref(att.row.ProveMs), "backend", att.row.Backend)
	return nil
}

// checkProof encodes and verifies a proof, timing the attempt's verify phase. A proof
// that does not verify is never stored. Its witness is then checked constraint by
// constraint: one it fails is the inputs' fault, and the attempt fails with that
// constraint's input error; otherwise the proof points at a faulty backend or key, so
// the attempt is retried. The witness is dropped either way, and its bytes counted
// as consumed for the heap sweeper, as the rest of the solution's were when the proof
// was made.
func (w *Worker) checkProof(ctx context.Context, att *attempt, p *proved) ([]byte, error) {
	t := time.Now()
	defer func() { att.clock.record(phase.Verify, time.Since(t)) }()
	defer func() {
		w.sweeper.consumed(int64(len(p.w)) * fr.Bytes)
		p.w = nil
	}()
	proofBytes, err := prover.EncodeProof(p.proof)
	if err != nil {
		return nil, err
	}
	if err := prover.VerifyProof(p.vk, p.proof, p.public); err != nil {
		if bad := p.badInputs(ctx); bad != nil {
			return nil, bad
		}
		return nil, fmt.Errorf("proof failed verification: %w", err)
	}
	return proofBytes, nil
}

// retryDB runs op until it succeeds, fails for a reason other than a lost or refused
// connection, ctx ends, or a minute has passed: a PostgreSQL restart must not cost a
// finished proof or leave an attempt unrecorded.
func (w *Worker) retryDB(ctx context.Context, log *slog.Logger, what string, op func(context.Context) error) error {
	deadline := time.Now().Add(time.Minute)
	delay := 100 * time.Millisecond
	for {
		err := op(ctx)
		if err == nil || !store.Unavailable(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		log.Warn("database unavailable, retrying", "op", what, "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// fail records a failed attempt and tells River what to do with the job: bad input and
// requests that can never fit end at once (request failed, job discarded, no retry); a
// cancelled request is recorded as such; a worker shutdown hands the job back without
// using an attempt (River's snooze); anything else is retried with backoff until
// max_attempts. Closing holds the phases that the attempt's last write measured
// before it failed with err.
func (w *Worker) fail(ctx context.Context, job *river.Job[jobs.ProveArgs], att *attempt, err error, log *slog.Logger, closing ...phaseTime) error {
	var tooLarge *TooLargeError
	var commit *prover.CommitmentError
	permanent := synth.IsBadInput(err) || errors.As(err, &tooLarge) || errors.As(err, &commit)
	cause := context.Cause(ctx)
	// A request this worker's budget cannot hold that another's can (when the circuit's
	// recorded estimate did not already put it back in work) goes back for that one.
	var snooze error
	if tooLarge != nil && cause == nil {
		// Other workers advertise whole budgets: count what this one holds anyway.
		snooze = w.budgetSnooze(ctx, job, tooLarge.Need+tooLarge.Held, log)
	}
	final := permanent || job.Attempt >= job.MaxAttempts
	handBack := false

	switch {
	case errors.Is(cause, rivertype.ErrJobCancelledRemotely):
		att.row.Outcome, final = "cancelled", true
	case snooze != nil:
		att.row.Outcome, permanent, final, handBack = "interrupted", false, false, true
		err = fmt.Errorf("put back for a worker whose memory budget holds it: %w", err)
	case !permanent && (errors.Is(err, errHandBack) || ctx.Err() != nil && w.drainCtx.Err() != nil):
		// Shutdown: before synthesis began, or in flight when the grace period ran out.
		att.row.Outcome, final, handBack = "interrupted", false, true
		if !errors.Is(err, errHandBack) {
			err = fmt.Errorf("%w: %w", errHandBack, err)
		}
	case permanent || final:
		att.row.Outcome = "failed"
	case ctx.Err() != nil:
		// Past its time limit: River's rescuer may already have given the job to
		// another worker.
		att.row.Outcome = "interrupted"
	default:
		att.row.Outcome = "retryable"
	}
	if !handBack && errors.Is(cause, context.DeadlineExceeded) {
		err = fmt.Errorf("attempt ran past its time limit (the circuit's timeout, at most --rescue-after): %w", err)
	}
	att.row.Error = store.CapError(err.Error())
	att.row.FinishedAt = time.Now()
	att.row.SetPhases(att.clock.phases(att.row.FinishedAt, closing...))

	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	dbErr := w.retryDB(dbCtx, log, "record failed attempt", func(ctx context.Context) error {
		return store.FailAttempt(ctx, w.pool, &att.row, store.Failure{
			Err: err.Error(), HandBack: handBack, Final: final, Job: job.JobRow, StartedAt: att.clock.begun,
		})
	})
	// What is logged and what River keeps in the job's errors is bounded like the
	// stored text (FinishAttempt and SetRequestOutcome cap theirs).
	var unsat *synth.UnsatisfiedError
	if errors.As(err, &unsat) {
		// The stored and logged text names the constraint only; gnark's own, with values
		// computed from the private inputs, is for debugging on the worker's host.
		log.Debug("unsatisfied constraint with witness values", "detail", store.CapError(unsat.Detail()))
	}
	err = cappedError{err}
	if dbErr != nil {
		log.Error("recording failed attempt", "err", cappedError{dbErr}, "attempt_err", err)
	}
	w.observe(&att.row)
	switch {
	case snooze != nil:
		return snooze
	case handBack:
		log.Info("attempt handed back", "err", err)
		return river.JobSnooze(0) // available again at once, attempt not counted
	case att.row.Outcome == "cancelled":
		// Someone asked for it (cuzk.cancel_proof): no fault, and the request's
		// last_error says who.
		log.Info("attempt cancelled", "reason", w.cancelReason(dbCtx, att.row.RequestID))
		return err
	case permanent:
		log.Warn("attempt failed", "outcome", att.row.Outcome, "err", err)
		// The job is discarded above already; should that write have failed, a
		// cancelled job at least is not retried.
		return river.JobCancel(err)
	}
	log.Warn("attempt failed", "outcome", att.row.Outcome, "err", err)
	return err
}

// cancelReason is the cancelled request's last_error ("cancelled by role …"), or
// where the cancel came from when that cannot be read.
func (w *Worker) cancelReason(ctx context.Context, requestID string) string {
	state, lastErr, err := store.RequestState(ctx, w.pool, requestID)
	if err != nil || state != "cancelled" || lastErr == "" {
		return "cancelled through River (its job was cancelled)"
	}
	return lastErr
}

// cappedError is an error whose text is cut to store.MaxErrorBytes; errors.Is and
// errors.As see the whole chain.
type cappedError struct{ err error }

func (e cappedError) Error() string { return store.CapError(e.err.Error()) }
func (e cappedError) Unwrap() error { return e.err }

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
