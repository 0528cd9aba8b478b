// Package worker is the proving pipeline: River claims proof jobs, a collector groups
// them per circuit into batches, each request reserves its memory and is synthesized
// by a bounded pool, solved batches wait in a bounded channel for one prover goroutine
// per device, and every proof is verified and stored with its attempt row and the River
// job completion in one transaction.
//
// Each stage has its file: claim.go (a River job becomes an attempt and waits for its
// batch), collector.go (batches per circuit), synthesize.go (memory, key read, witness),
// prove.go (one goroutine per device) and complete.go (store the proof, or record the
// failure and tell River what to do with the job). The stages hand each other typed
// values: the collector a batch of claimed requests, synthesis a solvedBatch of
// synthesized ones, the prover each request's proved outcome; each carries the
// attempt's record, with its clock (clock.go) and its part of the batch's memory
// (batchmem.go).
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// Prover is a backend bound to one device (a GPU, or the CPU), with a proving
// goroutine of its own; the GPU itself is described by devinfo.Device.
type Prover struct {
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
	devices []Prover
	budget  *Budget

	client   *river.Client[pgx.Tx]
	clientID string    // River client ID of this process (newClientID)
	lock     *nameLock // this process's hold on cfg.Name (identity.go)
	// predecessorID is the client ID of the process that ran under cfg.Name before
	// this one: its last heartbeat is no conflict.
	predecessorID string
	collector     *collector
	sweeper       *heapSweeper // collects consumed solutions' garbage (sweep.go)
	synthSem      chan struct{}
	urgentSynth   chan struct{} // urgent requests' solves: they never wait behind the others' (urgent.go)
	largeSynth    chan struct{} // solves of large block-split circuits (Config.LargeSolves); nil: no bound
	solving       atomic.Int32  // solves under way: each splits the cores with the others (synthesize.go)
	cores         *synth.Cores  // the line the solves take the cores from: urgent first, then oldest
	proveCh       chan *solvedBatch
	urgentCh      chan *solvedBatch // batches with an urgent request: provers take them first
	proversStop   chan struct{}     // closed with proveCh: the urgent lanes stop
	urgent        urgentGate        // urgent requests not yet queued for a prover
	assembling    sync.WaitGroup    // batches' proofs being assembled after their device work (prove.go)

	timeouts        sync.Map      // circuit -> time.Duration (claim.go)
	memNeeds        sync.Map      // circuit -> int64: bytes its synthesis reserves, 0 when unknown (claim.go)
	memExact        sync.Map      // circuit -> int64: the same, exact, once this process has loaded the circuit (synthesize.go)
	timeoutsAt      atomic.Int64  // when timeouts was last read, Unix ns
	timeoutsLoading atomic.Bool   // a background read of timeouts is under way
	leaderTicks     chan struct{} // maintenance due, while this client is River's leader (maintain.go)
	stayOff         stayOff       // jobs put back for a worker whose budget holds them (fleetbudget.go)
	origin          store.Origin

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

// largeSlots is the bound on large solves at once, or nil where SynthConcurrency is no
// more than it.
func largeSlots(cfg Config) chan struct{} {
	if cfg.LargeSolves == 0 || cfg.LargeSolves >= cfg.SynthConcurrency {
		return nil
	}
	return make(chan struct{}, cfg.LargeSolves)
}

// New builds a worker; Run starts it.
func New(pool *pgxpool.Pool, cfg Config, catalog Catalog, devices []Prover, log *slog.Logger) (*Worker, error) {
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
		sweeper:  newHeapSweeper(cmp.Or(cfg.sweepBytes, sweepThreshold(cfg.MemBudget))),
		synthSem: make(chan struct{}, cfg.SynthConcurrency),
		// With no urgent slots no urgent request is claimed; one slot keeps it usable.
		urgentSynth: make(chan struct{}, max(1, cfg.UrgentSlots)),
		largeSynth:  largeSlots(cfg),
		cores:       synth.NewCores(runtime.GOMAXPROCS(0)),
		proveCh:     make(chan *solvedBatch, cfg.QueueDepth),
		urgentCh:    make(chan *solvedBatch, cfg.QueueDepth),
		proversStop: make(chan struct{}),

		leaderTicks: make(chan struct{}, 1),
	}
	if err := w.reserveFixed(); err != nil {
		return nil, err
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
	// River's control messages are acted on only when the database backs them (notify.go);
	// its fetches leave out the jobs this worker stays off (fleetbudget.go).
	riverLog := slog.New(cancelAsInfo{quietTicks{log.Handler()}}).With("component", "river")
	queues := map[string]river.QueueConfig{
		// FetchCooldown: River fetches at most this often (default 100 ms), each fetch
		// refilling the slots freed since the last. Small proofs in batches of 16 finish
		// at ~400/s on one GPU, so 100 ms was 40 jobs drained between fetches, and the
		// device waited on an empty channel for 5-12 ms at a time in an execution trace
		// (docs/lab/BENCHMARKS.md). 20 ms caps a busy worker at 50 fetch queries/s.
		jobs.Queue: {MaxWorkers: w.maxClaimed(), FetchPollInterval: cfg.PollInterval, FetchCooldown: fetchCooldown},
	}
	if cfg.UrgentSlots > 0 {
		// Slots of their own: an urgent request is claimed while every slot above holds
		// a long request; inside the pipeline it then goes first (urgent.go).
		queues[jobs.UrgentQueue] = river.QueueConfig{MaxWorkers: cfg.UrgentSlots, FetchPollInterval: cfg.PollInterval, FetchCooldown: fetchCooldown}
	}
	client, err := river.NewClient[pgx.Tx](newTrustedDriver(pool, riverLog, &w.stayOff), &river.Config{
		ID:                   w.clientID,
		Logger:               riverLog,
		Queues:               queues,
		PeriodicJobs:         []*river.PeriodicJob{w.leaderTick()},
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

// reserveFixed counts in the budget what the worker holds for its life: the process
// as it started (Config.BaseBytes) and the backends' own host buffers; and makes the
// catalog count the circuits and keys it holds.
func (w *Worker) reserveFixed() error {
	backends := make([]prover.Backend, len(w.devices))
	for i, d := range w.devices {
		backends[i] = d.Backend
	}
	if c, ok := w.catalog.(*catalog); ok {
		c.useBudget(w.budget, backends)
	}
	if _, err := w.budget.ReserveFor(context.Background(), KindProcess, w.cfg.BaseBytes); err != nil {
		return fmt.Errorf("worker: the process itself: %w", err)
	}
	for _, b := range backends {
		if h, ok := b.(prover.HostMemory); ok && h.HostBytes() > 0 {
			if _, err := w.budget.ReserveFor(context.Background(), KindStaging, h.HostBytes()); err != nil {
				return fmt.Errorf("worker: host buffers of %s: %w", b.Name(), err)
			}
		}
	}
	return nil
}

// fetchCooldown is the least time between two of River's fetches of jobs (see New).
const fetchCooldown = 20 * time.Millisecond

// maxClaimed is how many jobs this worker holds at once: enough to keep every stage
// busy (a batch per queue slot and per device, plus the batch being synthesized) and no
// more, so the rest stays in the queue for other hosts.
func (w *Worker) maxClaimed() int {
	return w.cfg.MaxBatch*(w.cfg.QueueDepth+w.lanes()) + w.cfg.SynthConcurrency
}

// lanes is the number of provers: one per lane of each device.
func (w *Worker) lanes() int {
	n := 0
	for _, d := range w.devices {
		n += prover.ProveLanes(d.Backend)
	}
	return n
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
		// A backend whose calls overlap (one batch's upload beside another's MSMs)
		// gets a prover per lane.
		for range prover.ProveLanes(w.devices[i].Backend) {
			provers.Add(1)
			go func() {
				defer provers.Done()
				w.runProver(i, w.nextBatch)
			}()
		}
		if w.cfg.UrgentSlots > 0 {
			// A lane kept for urgent batches: one waits for the device, not for a
			// lane to finish another request's proof (urgent.go).
			provers.Add(1)
			go func() {
				defer provers.Done()
				w.runProver(i, w.nextUrgent)
			}()
		}
	}
	drained := true
	defer func() {
		if drained {
			close(w.proveCh)
			close(w.proversStop)
			provers.Wait()
			w.assembling.Wait()
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
	// The first heartbeat is written before River claims anything: the row, with this
	// process's River client ID, is all that other workers (--dead-after) and a process
	// restarted under the name (takeOver) know this process's jobs by, so a process
	// killed between its first claim and a later first heartbeat would leave its jobs
	// running until --rescue-after. The heartbeat goes on while River starts.
	beat := w.newBeat()
	if err := w.retryDB(ctx, w.log, "first heartbeat", beat); err != nil {
		w.drain()
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing is in flight
		}
		return fmt.Errorf("worker: %w", err)
	}
	hbCtx, hbStop := context.WithCancel(ctx)
	defer hbStop()
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(hbCtx, beat)
	}()
	// River gets a context of its own: a cancelled Start context would cancel every
	// running job at once, and in-flight work is meant to finish within the grace period.
	// A database that went away since the process connected is waited for, as below.
	if err := w.retryDB(ctx, w.log, "start river", func(context.Context) error {
		return w.client.Start(context.WithoutCancel(ctx))
	}); err != nil {
		w.drain()
		hbStop()
		<-hbDone
		w.markStopped()
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing is in flight
		}
		return fmt.Errorf("worker: start river: %w", err)
	}
	w.log.Info("worker started", "worker", w.cfg.Name, "devices", len(w.devices),
		"mem_budget", w.cfg.MemBudget, "max_batch", w.cfg.MaxBatch, "max_claimed", w.maxClaimed(), "urgent_slots", w.cfg.UrgentSlots)

	if w.cfg.UrgentSlots == 0 {
		w.log.Warn("no urgent slots: this worker claims no urgent requests (priority 1); they wait for a worker with urgent slots")
	}

	mtDone := make(chan struct{})
	go func() {
		defer close(mtDone)
		w.maintain(ctx)
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
	<-mtDone
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

type retryPolicy struct{ base time.Duration }

func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(jobs.Backoff(p.base, job.Attempt))
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
