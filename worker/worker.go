// Package worker is the proving pipeline: River claims proof jobs, a collector groups
// them per circuit into batches, each request reserves its memory and is synthesized
// by a bounded pool, solved batches wait in a bounded channel for one prover goroutine
// per device, and every proof is verified and stored with its attempt row and the River
// job completion in one transaction.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// Device is one prover: a backend bound to one device, with a goroutine of its own.
type Device struct {
	Backend prover.Backend
	Label   string // device name/UUID for attempt rows; defaults to Backend.Name()
	Driver  string // NVIDIA driver version of a GPU, recorded in the performance config
	// Telemetry, when set, returns the device's latest readings (utilization, memory,
	// temperature) as JSON; it is stored in each attempt proven on the device. It must
	// not block: it reads what a poller sampled.
	Telemetry func() []byte
}

// Worker is one cuzk worker process's pipeline.
type Worker struct {
	cfg     Config
	log     *slog.Logger
	pool    *pgxpool.Pool
	catalog Catalog
	devices []Device
	budget  *Budget

	client   *river.Client[pgx.Tx]
	clientID string    // River client ID of this process (newClientID)
	lock     *nameLock // this process's hold on cfg.Name (identity.go)
	// predecessorID is the client ID of the process that ran under cfg.Name before
	// this one: its last heartbeat is no conflict.
	predecessorID string
	collector     *collector
	synthSem      chan struct{}
	proveCh       chan *batch

	timeouts sync.Map // circuit -> time.Duration
	origin   store.Origin

	// drainCtx is cancelled when shutdown begins: requests that have not started
	// synthesis go back to the queue at once instead of holding the worker up.
	drainCtx context.Context
	drain    context.CancelFunc

	// lost[i] is set when device i failed with prover.ErrDeviceLost: its prover stops.
	// When every device is lost, stop ends Run with that error, so the process exits
	// and its supervisor starts a new one, which gets a clean device.
	lost      []atomic.Bool
	stop      context.CancelCauseFunc
	stopReady chan struct{}
}

// errHandBack ends an attempt that a worker shutdown stopped: the job goes back to the
// queue for another worker, without using an attempt.
var errHandBack = errors.New("handed back: worker shutting down")

// New builds a worker; Run starts it.
func New(pool *pgxpool.Pool, cfg Config, catalog Catalog, devices []Device, log *slog.Logger) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	if len(devices) == 0 {
		return nil, errors.New("worker: no prover devices")
	}
	if log == nil {
		log = slog.Default()
	}
	for i := range devices {
		if devices[i].Label == "" {
			devices[i].Label = devices[i].Backend.Name()
		}
	}
	w := &Worker{
		cfg:      cfg,
		log:      log,
		pool:     pool,
		catalog:  catalog,
		devices:  devices,
		budget:   NewBudget(cfg.MemBudget),
		synthSem: make(chan struct{}, cfg.SynthConcurrency),
		proveCh:  make(chan *batch, cfg.QueueDepth),
	}
	w.origin = w.makeOrigin()
	w.clientID = newClientID(cfg.Name)
	w.drainCtx, w.drain = context.WithCancel(context.Background())
	w.lost = make([]atomic.Bool, len(devices))
	w.stopReady = make(chan struct{})
	w.collector = newCollector(cfg.MaxBatch, cfg.BatchWait, w.startBatch)

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely[jobs.ProveArgs](workers, &proveWorker{w: w}); err != nil {
		return nil, fmt.Errorf("worker: register job kind: %w", err)
	}
	// River's control messages are acted on only when the database backs them (notify.go).
	client, err := river.NewClient[pgx.Tx](newTrustedDriver(pool, log.With("component", "river")), &river.Config{
		ID:     w.clientID,
		Logger: log.With("component", "river"),
		Queues: map[string]river.QueueConfig{
			jobs.Queue: {MaxWorkers: w.maxClaimed(), FetchPollInterval: cfg.PollInterval},
		},
		Workers:              workers,
		RescueStuckJobsAfter: cfg.RescueAfter,
		// Per-job timeouts come from the circuit's size (proveWorker.Timeout).
		JobTimeout:  -1,
		RetryPolicy: retryPolicy{base: cfg.RetryBackoff},
	})
	if err != nil {
		return nil, fmt.Errorf("worker: river client: %w", err)
	}
	w.client = client
	return w, nil
}

// maxClaimed is how many jobs this worker holds at once: enough to keep every stage
// busy (a batch per queue slot and per device, plus the batch being synthesized) and no
// more, so the rest stays in the queue for other hosts.
func (w *Worker) maxClaimed() int {
	return w.cfg.MaxBatch*(w.cfg.QueueDepth+len(w.devices)) + w.cfg.SynthConcurrency
}

// Budget is the worker's memory budget (for metrics and tests).
func (w *Worker) Budget() *Budget { return w.budget }

// Run starts claiming jobs and blocks until ctx is done; then it stops claiming, lets
// in-flight work finish within the shutdown grace period, hands what remains back to
// the queue without using an attempt, and returns.
func (w *Worker) Run(ctx context.Context) error {
	ctx, w.stop = context.WithCancelCause(ctx)
	close(w.stopReady)
	var provers sync.WaitGroup
	for i := range w.devices {
		provers.Add(1)
		go func() {
			defer provers.Done()
			w.runProver(i)
		}()
	}
	drained := true
	defer func() {
		if drained {
			close(w.proveCh)
			provers.Wait()
		}
	}()

	w.loadTimeouts(ctx)
	go w.preload(ctx)
	// Before claiming anything: a predecessor under the same name that is gone gets its
	// running jobs handed back now, not after --rescue-after.
	w.predecessorID = w.takeOver(ctx)
	lockDone := make(chan struct{})
	go func() {
		defer close(lockDone)
		w.lock.keep(ctx)
	}()
	defer func() {
		<-lockDone
		w.lock.release()
	}()
	// River gets a context of its own: a cancelled Start context would cancel every
	// running job at once, and in-flight work is meant to finish within the grace period.
	// A database that went away since the process connected is waited for, as below.
	if err := w.retryDB(ctx, w.log, "start river", func(context.Context) error {
		return w.client.Start(context.WithoutCancel(ctx))
	}); err != nil {
		w.drain()
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing is in flight
		}
		return fmt.Errorf("worker: start river: %w", err)
	}
	w.log.Info("worker started", "worker", w.cfg.Name, "devices", len(w.devices),
		"mem_budget", w.cfg.MemBudget, "max_batch", w.cfg.MaxBatch, "max_claimed", w.maxClaimed())

	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(ctx)
	}()

	<-ctx.Done()
	w.log.Info("worker stopping", "grace", w.cfg.ShutdownGrace)
	w.drain()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownGrace)
	defer cancel()
	err := w.client.Stop(stopCtx) // stops claiming, waits for the jobs it holds
	if errors.Is(err, context.DeadlineExceeded) {
		// Grace is over: cancel what is left; fail hands each of those jobs back.
		w.log.Warn("shutdown grace over, handing in-flight work back", "grace", w.cfg.ShutdownGrace)
		hardCtx, hardCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer hardCancel()
		err = w.client.StopAndCancel(hardCtx)
	}
	<-hbDone
	w.markStopped()
	if err != nil && !errors.Is(err, context.Canceled) {
		// Some job did not return even when cancelled: the pipeline may still send to
		// the provers, so it stays open; the process is ending and the rescuer will
		// retry those jobs.
		drained = false
		return fmt.Errorf("worker: stop: %w", err)
	}
	w.log.Info("worker stopped", "worker", w.cfg.Name)
	if cause := context.Cause(ctx); errors.Is(cause, prover.ErrDeviceLost) {
		return fmt.Errorf("worker: %w", cause)
	}
	return nil
}

// item is one request's attempt on its way through the pipeline.
type item struct {
	ctx   context.Context
	job   *river.Job[jobs.ProveArgs]
	req   *store.Request
	start time.Time
	att   store.Attempt

	collectedAt time.Time
	compiled    *synth.Compiled
	res         *Reservation
	sol         *synth.Solution
	synthDone   time.Time
	keyWait     time.Duration // after synthesis, for the key to be read (Catalog.Prepare)
	key         *ResidentKey
	proof       *groth16bls.Proof
	public      []byte

	err  error
	done chan struct{}
}

func (it *item) finish(err error) {
	it.err = err
	close(it.done)
}

// finished says whether a stage has delivered the item already.
func (it *item) finished() bool {
	select {
	case <-it.done:
		return true
	default:
		return false
	}
}

type proveWorker struct {
	river.WorkerDefaults[jobs.ProveArgs]
	w *Worker
}

// Timeout is the circuit's size-based limit, capped at --rescue-after: River's rescuer
// leaves a stuck job alone until its timeout has passed too, so an uncapped timeout
// (at least 10 minutes) would delay rescuing a dead worker's jobs past --rescue-after.
func (p *proveWorker) Timeout(job *river.Job[jobs.ProveArgs]) time.Duration {
	d := jobs.Timeout(1 << 27) // unknown size: assume a large circuit
	if v, ok := p.w.timeouts.Load(job.Args.Circuit); ok {
		d = v.(time.Duration)
	}
	return min(d, p.w.cfg.RescueAfter)
}

func (p *proveWorker) Work(ctx context.Context, job *river.Job[jobs.ProveArgs]) error {
	return p.w.work(ctx, job)
}

func (w *Worker) work(ctx context.Context, job *river.Job[jobs.ProveArgs]) error {
	start := time.Now()
	log := w.log.With("request_id", job.Args.RequestID, "circuit", job.Args.Circuit, "job_id", job.ID)
	queuedAt := job.ScheduledAt
	if job.CreatedAt.After(queuedAt) {
		queuedAt = job.CreatedAt
	}
	// A database that is restarting costs a moment, not one of the request's attempts.
	var req *store.Request
	err := w.retryDB(ctx, log, "begin attempt", func(ctx context.Context) (err error) {
		req, err = store.BeginAttempt(ctx, w.pool, job.Args.RequestID, job.ID, w.origin, queuedAt)
		return err
	})
	var nr *store.NotRunnableError
	switch {
	case errors.As(err, &nr):
		log.Info("job skipped", "reason", err)
		return nil // nothing to do: completing the job is right
	case errors.Is(err, store.ErrUnknownRequest):
		return river.JobCancel(err)
	case err != nil:
		return fmt.Errorf("begin attempt: %w", err)
	}
	log = log.With("attempt", req.Attempt)

	it := &item{ctx: ctx, job: job, req: req, start: start, done: make(chan struct{})}
	it.att = store.Attempt{RequestID: req.RequestID, Circuit: req.Circuit, Attempt: req.Attempt, QueueMs: &req.QueueMs}
	w.collector.add(it)
	<-it.done // every stage delivers, also when ctx ends
	if it.res != nil {
		defer it.res.Release()
	}
	log = log.With("batch_id", it.att.BatchID)
	if it.err != nil {
		return w.fail(ctx, it, log)
	}
	return w.persist(ctx, it, log)
}

// startBatch runs a flushed batch through memory reservation and synthesis, while its
// circuit's proving key is read into memory, then hands the solved part to the provers
// through the bounded channel. The key is read here rather than by the prover, so a
// batch whose key is still loading waits for that load without holding a device that
// a batch of another circuit, whose key is resident, could use.
func (w *Worker) startBatch(b *batch) {
	go func() {
		ctxs := make([]context.Context, len(b.items))
		for i, it := range b.items {
			ctxs[i] = it.ctx
		}
		keyCtx, stopKey := allDone(ctxs)
		defer stopKey()
		type prepared struct {
			loaded bool      // the key was not in memory: read or waited for
			at     time.Time // when it was
			err    error
		}
		keyDone := make(chan prepared, 1)
		go func() {
			waited, err := w.catalog.Prepare(keyCtx, b.circuit)
			keyDone <- prepared{waited > 0, time.Now(), err}
		}()

		var wg sync.WaitGroup
		for _, it := range b.items {
			it.att.BatchID = b.id
			it.att.BatchSize = len(b.items)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.safely("synthesize", func() error { return w.synthesize(it) }); err != nil {
					it.sol = nil
					it.finish(err)
				}
			}()
		}
		wg.Wait()
		solved := b.items[:0:0]
		for _, it := range b.items {
			if it.sol != nil {
				solved = append(solved, it)
			}
		}
		if len(solved) == 0 {
			return
		}
		// The srs phase is what the batch waited for its key once synthesized.
		synthesized := time.Now()
		k := <-keyDone
		err, wait := k.err, time.Duration(0)
		if k.loaded && k.at.After(synthesized) {
			wait = k.at.Sub(synthesized)
		}
		for _, it := range solved {
			it.keyWait = wait
			if err != nil {
				it.att.SrsMs = msPtr(wait)
				it.sol = nil
				it.finish(fmt.Errorf("load proving key of %q: %w", b.circuit, err))
			}
		}
		if err != nil {
			return
		}
		b.items = solved
		w.proveCh <- b // blocks when the provers are behind: backpressure
	}()
}

func (w *Worker) synthesize(it *item) error {
	compiled, err := w.catalog.Circuit(it.ctx, it.req.Circuit)
	if err != nil {
		return fmt.Errorf("load circuit %q: %w", it.req.Circuit, err)
	}
	it.compiled = compiled

	// Until synthesis starts the request holds only its claim: a shutdown hands it
	// back at once (errHandBack) rather than keep the worker past its grace period.
	waitCtx, stopWait := context.WithCancelCause(it.ctx)
	defer stopWait(nil)
	defer context.AfterFunc(w.drainCtx, func() { stopWait(errHandBack) })()
	if w.drainCtx.Err() != nil {
		return errHandBack
	}

	need := synth.EstimateBytes(compiled)
	t := time.Now()
	res, err := w.budget.Reserve(waitCtx, need)
	it.att.MemWaitMs = msPtr(time.Since(t))
	if err != nil {
		if errors.Is(context.Cause(waitCtx), errHandBack) {
			return errHandBack
		}
		return fmt.Errorf("reserve %d bytes: %w", need, err)
	}
	it.res = res
	it.att.MemReservedBytes = need

	select {
	case w.synthSem <- struct{}{}:
	case <-waitCtx.Done():
		return context.Cause(waitCtx)
	}
	defer func() { <-w.synthSem }()
	if w.drainCtx.Err() != nil {
		return errHandBack
	}
	it.att.SynthStartedAt = time.Now()
	if it.req.Inputs == nil && len(it.req.Witness) == 0 {
		// An empty payload reads as empty inputs JSON to synth; this one is a witness.
		return fmt.Errorf("synthesize: %w", &synth.InputError{Msg: "witness is empty"})
	}
	sol, err := synth.Solve(it.ctx, compiled, it.req.Payload())
	it.synthDone = time.Now()
	it.att.SynthMs = msPtr(it.synthDone.Sub(it.att.SynthStartedAt))
	if err != nil {
		return fmt.Errorf("synthesize: %w", err)
	}
	it.sol = sol
	return nil
}

// runProver proves batches on device i until the channel is closed or the device is
// lost.
func (w *Worker) runProver(i int) {
	d := &w.devices[i]
	for b := range w.proveCh {
		if w.lost[i].Load() {
			// Every device is lost (else this prover has returned) and the worker is
			// stopping: what still waits for a prover goes back to the queue now.
			for _, it := range b.items {
				if !it.finished() {
					it.sol = nil
					it.finish(errHandBack)
				}
			}
			continue
		}
		err := w.safely("prove on "+d.Backend.Name(), func() error { w.proveBatch(d, b); return nil })
		if err != nil {
			for _, it := range b.items {
				if !it.finished() {
					it.sol = nil
					it.finish(err)
				}
			}
		}
		if w.lost[i].Load() && !w.allLost() {
			return
		}
	}
}

func (w *Worker) allLost() bool {
	for i := range w.lost {
		if !w.lost[i].Load() {
			return false
		}
	}
	return true
}

// deviceLost records that d failed with prover.ErrDeviceLost: its prover takes no more
// batches, and when no device is left the worker stops (Run returns err).
func (w *Worker) deviceLost(d *Device, err error) {
	left := 0
	for i := range w.devices {
		if &w.devices[i] == d {
			if w.lost[i].Swap(true) {
				return
			}
		}
		if !w.lost[i].Load() {
			left++
		}
	}
	w.catalog.DeviceReset(d.Backend, err)
	w.log.Error("device lost, no more proofs on it", "device", d.Backend.Name(), "devices_left", left, "err", err)
	if left == 0 {
		<-w.stopReady
		w.stop(err)
	}
}

// safely runs f and turns a panic into an error (the stack goes to the log): a fault in
// one request's synthesis or one batch's proof fails those attempts, which are retried,
// and must not end the process with every other request in it.
func (w *Worker) safely(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: panic: %v", what, p)
			w.log.Error("recovered from a panic", "op", what, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	return f()
}

func (w *Worker) proveBatch(d *Device, b *batch) {
	picked := time.Now()
	live := b.items[:0:0]
	for _, it := range b.items {
		it.att.ProveWaitMs = msPtr(picked.Sub(it.synthDone) - it.keyWait)
		it.att.Backend = d.Backend.Name()
		it.att.Device = d.Label
		if err := context.Cause(it.ctx); err != nil {
			it.sol = nil
			it.finish(err)
			continue
		}
		live = append(live, it)
	}
	if len(live) == 0 {
		return
	}
	fail := func(err error) {
		for _, it := range live {
			it.sol = nil
			it.finish(err)
		}
	}

	// The key is shared by the batch; loading it (reading it after synthesis, then
	// making it resident here) is the srs phase of every attempt in it.
	// One request's cancel must not abort the others' proofs; when all are cancelled
	// (a shutdown past its grace period), the batch's proof stops.
	ctxs := make([]context.Context, len(live))
	for i, it := range live {
		ctxs[i] = it.ctx
	}
	ctx, stop := allDone(ctxs)
	defer stop()
	key, loaded, err := w.catalog.Key(ctx, b.circuit, d.Backend)
	for _, it := range live {
		it.att.SrsMs = msPtr(it.keyWait + loaded)
	}
	if err != nil {
		fail(fmt.Errorf("load proving key of %q on %s: %w", b.circuit, d.Backend.Name(), err))
		if errors.Is(err, prover.ErrDeviceLost) {
			w.deviceLost(d, err)
		}
		return
	}

	sols := make([]*synth.Solution, len(live))
	for i, it := range live {
		sols[i] = it.sol
		it.public = it.sol.Public
	}
	start := time.Now()
	release := sync.OnceFunc(key.Release)
	defer release() // also when Prove panics: a key left in use could never be evicted
	proofs, times, err := prover.Prove(ctx, d.Backend, key.PK, key.Key, sols)
	elapsed := time.Since(start)
	release()
	switch {
	case errors.Is(err, prover.ErrDeviceReset):
		// The device lost every key resident on it: the retry loads them again.
		w.catalog.DeviceReset(d.Backend, err)
	case errors.Is(err, prover.ErrDeviceLost):
		defer w.deviceLost(d, err) // after this batch's attempts are failed (retryable)
	}
	var telemetry []byte
	if d.Telemetry != nil {
		telemetry = d.Telemetry()
	}
	for _, it := range live {
		it.att.Telemetry = telemetry
		it.att.ProveStartedAt = start
		it.att.ProveMs = msPtr(elapsed)
		if times.NTT > 0 {
			it.att.NttMs = msPtr(times.NTT)
		}
		if times.MSM > 0 {
			it.att.MsmMs = msPtr(times.MSM)
		}
		if times.H2D > 0 {
			it.att.H2DMs = msPtr(times.H2D)
		}
		if times.MSMG1 > 0 {
			it.att.MsmG1Ms = msPtr(times.MSMG1)
		}
		if times.MSMG2 > 0 {
			it.att.MsmG2Ms = msPtr(times.MSMG2)
		}
		it.key = key
	}
	if err != nil {
		fail(fmt.Errorf("prove on %s: %w", d.Backend.Name(), err))
		return
	}
	for i, it := range live {
		it.proof = proofs[i]
		it.sol = nil
		// First release step: the solution's vectors are gone; keep a token amount
		// until the proof is stored.
		it.res.Shrink(it.res.Bytes() / 16)
		it.finish(nil)
	}
}

// persist verifies the proof and stores it, the attempt row and the job completion in
// one transaction.
func (w *Worker) persist(ctx context.Context, it *item, log *slog.Logger) error {
	t := time.Now()
	proofBytes, err := prover.EncodeProof(it.proof)
	if err != nil {
		it.err = err
		return w.fail(ctx, it, log)
	}
	if err := prover.VerifyProof(it.key.VK, it.proof, it.public); err != nil {
		it.att.VerifyMs = msPtr(time.Since(t))
		// A proof that does not verify is never stored; it points at a faulty backend
		// or key, so the attempt is retried.
		it.err = fmt.Errorf("proof failed verification: %w", err)
		return w.fail(ctx, it, log)
	}
	it.att.VerifyMs = msPtr(time.Since(t))

	t = time.Now()
	err = w.retryDB(ctx, log, "store proof", func(ctx context.Context) error {
		return store.CompleteAttempt(ctx, w.pool, it.job, &store.Proof{
			RequestID: it.req.RequestID, Circuit: it.req.Circuit,
			Proof: proofBytes, PublicWitness: it.public,
			Attempt: it.req.Attempt, Worker: w.cfg.Name, Backend: it.att.Backend, VKDigest: it.key.VKDigest,
		}, w.cfg.ScrubInputs, &it.att, func(a *store.Attempt) {
			a.PersistMs = msPtr(time.Since(t))
			a.FinishedAt = time.Now()
			a.TotalMs = w.totalMs(it)
		})
	})
	if err != nil {
		it.err = fmt.Errorf("store proof: %w", err)
		return w.fail(ctx, it, log)
	}
	w.observe(&it.att)
	log.Info("proof stored", "outcome", it.att.Outcome, "total_ms", *it.att.TotalMs,
		"synth_ms", deref(it.att.SynthMs), "prove_ms", deref(it.att.ProveMs), "backend", it.att.Backend)
	return nil
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

// totalMs is the attempt's time from being queued to being stored: queue time plus
// the attempt's own wall time, so it is at least the sum of the phases run in sequence.
func (w *Worker) totalMs(it *item) *float64 {
	queue := it.start.Sub(it.job.ScheduledAt)
	if it.job.CreatedAt.After(it.job.ScheduledAt) {
		queue = it.start.Sub(it.job.CreatedAt)
	}
	return msPtr(max(queue, 0) + time.Since(it.start))
}

// fail records a failed attempt and tells River what to do with the job: bad input and
// requests that can never fit end at once (request failed, job discarded, no retry); a
// cancelled request is recorded as such; a worker shutdown hands the job back without
// using an attempt (River's snooze); anything else is retried with backoff until
// max_attempts.
func (w *Worker) fail(ctx context.Context, it *item, log *slog.Logger) error {
	err := it.err
	var tooLarge *TooLargeError
	var commit *prover.CommitmentError
	permanent := synth.IsBadInput(err) || errors.As(err, &tooLarge) || errors.As(err, &commit)
	cause := context.Cause(ctx)
	final := permanent || it.job.Attempt >= it.job.MaxAttempts
	handBack := false

	switch {
	case errors.Is(cause, rivertype.ErrJobCancelledRemotely):
		it.att.Outcome, final = "cancelled", true
	case !permanent && (errors.Is(err, errHandBack) || ctx.Err() != nil && w.drainCtx.Err() != nil):
		// Shutdown: before synthesis began, or in flight when the grace period ran out.
		it.att.Outcome, final, handBack = "interrupted", false, true
		if !errors.Is(err, errHandBack) {
			err = fmt.Errorf("%w: %w", errHandBack, err)
		}
	case permanent || final:
		it.att.Outcome = "failed"
	case ctx.Err() != nil:
		// Past its time limit: River's rescuer may already have given the job to
		// another worker.
		it.att.Outcome = "interrupted"
	default:
		it.att.Outcome = "retryable"
	}
	if !handBack && errors.Is(cause, context.DeadlineExceeded) {
		err = fmt.Errorf("attempt ran past its time limit (the circuit's timeout, at most --rescue-after): %w", err)
	}
	it.att.Error = store.CapError(err.Error())
	it.att.FinishedAt = time.Now()
	it.att.TotalMs = w.totalMs(it)

	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	dbErr := w.retryDB(dbCtx, log, "record failed attempt", func(ctx context.Context) error {
		return store.FailAttempt(ctx, w.pool, &it.att, store.Failure{
			Err: err.Error(), HandBack: handBack, Final: final, Job: it.job.JobRow, StartedAt: it.start,
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
	w.observe(&it.att)
	switch {
	case handBack:
		log.Info("attempt handed back", "err", err)
		return river.JobSnooze(0) // available again at once, attempt not counted
	case permanent:
		log.Warn("attempt failed", "outcome", it.att.Outcome, "err", err)
		// The job is discarded above already; should that write have failed, a
		// cancelled job at least is not retried.
		return river.JobCancel(err)
	}
	log.Warn("attempt failed", "outcome", it.att.Outcome, "err", err)
	return err
}

// cappedError is an error whose text is cut to store.MaxErrorBytes; errors.Is and
// errors.As see the whole chain.
type cappedError struct{ err error }

func (e cappedError) Error() string { return store.CapError(e.err.Error()) }
func (e cappedError) Unwrap() error { return e.err }

// failOrphaned ends requests whose job River discarded behind cuzk's back (the rescuer,
// when a dead worker's job has no attempts left), so that none stays 'running' forever.
func (w *Worker) failOrphaned(ctx context.Context) {
	n, err := store.FailOrphaned(ctx, w.pool)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("ending orphaned requests", "err", err)
	case n > 0:
		w.log.Warn("requests failed: their worker stopped during their last attempt", "requests", n)
	}
}

// loadTimeouts caches each registered circuit's job timeout (proveWorker.Timeout has
// no context to query with).
func (w *Worker) loadTimeouts(ctx context.Context) {
	sizes, err := store.CircuitSizes(ctx, w.pool)
	if err != nil {
		w.log.Warn("loading circuit sizes for job timeouts", "err", err)
	}
	for name, n := range sizes {
		w.timeouts.Store(name, jobs.Timeout(n))
	}
}

type retryPolicy struct{ base time.Duration }

func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(jobs.Backoff(p.base, job.Attempt))
}

func msPtr(d time.Duration) *float64 { return store.Ms(d) }

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// allDone returns a context that is cancelled once every one of ctxs is done, and a
// func that releases it.
func allDone(ctxs []context.Context) (context.Context, context.CancelFunc) {
	if len(ctxs) == 1 {
		return context.WithCancel(ctxs[0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int64
	left.Store(int64(len(ctxs)))
	stops := make([]func() bool, len(ctxs))
	for i, c := range ctxs {
		stops[i] = context.AfterFunc(c, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
