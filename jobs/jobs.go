// Package jobs holds the River job that stands for a proof request, in Go terms of the
// SQL contract: cuzk.admit_locked (called by the proof_requests triggers on insert,
// claim, cancel and retry) inserts a river_job row of Kind with args
// {"request_id", "circuit"} and metadata {"queued_at"} for each request it admits, in
// the queue of the request's priority (QueueFor, cuzk.job_queue in SQL).
package jobs

import (
	"time"

	"github.com/riverqueue/river"
)

const (
	// Kind is river_job.kind for proof requests.
	Kind = "cuzk_prove"
	// Queue is river_job.queue for proof requests of priority 2 to 4.
	Queue = "cuzk"
	// UrgentQueue is river_job.queue for urgent requests (priority 1): every worker
	// keeps a few slots for it, so an urgent request is claimed while every slot of
	// Queue holds a long request.
	UrgentQueue = "cuzk_urgent"
	// UrgentPriority is the priority of urgent requests.
	UrgentPriority = 1
)

// Queues are the queues proof jobs are in.
func Queues() []string { return []string{Queue, UrgentQueue} }

// QueueFor is the queue of the job of a request of the given priority.
func QueueFor(priority int) string {
	if priority == UrgentPriority {
		return UrgentQueue
	}
	return Queue
}

// ProveArgs are the args of a proof job. The request row is the source of truth; the
// circuit is carried only so a worker can size the job's timeout without a query.
type ProveArgs struct {
	RequestID string `json:"request_id"`
	Circuit   string `json:"circuit"`
}

// Kind implements river.JobArgs.
func (ProveArgs) Kind() string { return Kind }

// InsertOpts implements river.JobArgsWithInsertOpts, for inserts made from Go: Queue,
// the queue of priorities 2 to 4 (an urgent job goes in QueueFor(UrgentPriority)).
func (ProveArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: Queue} }

// Timeout is how long one attempt of a circuit of the given size may take, end to end
// (batching, memory wait, synthesis, proving, persistence). River's 1-minute default
// would kill real proofs; this allows about 100 µs a constraint on top of a fixed
// 10 minutes for waits, so 2^27 constraints get about 4 hours.
func Timeout(constraints int64) time.Duration {
	if constraints < 0 {
		constraints = 0
	}
	return 10*time.Minute + time.Duration(constraints)*100*time.Microsecond
}

// DefaultRetryBase is the first retry's delay.
const DefaultRetryBase = 5 * time.Second

// RetryBackoff is the delay before attempt n+1 after n failed attempts: exponential
// from 5 s, capped at 10 minutes, so a flapping GPU or database is retried promptly
// but not hammered.
func RetryBackoff(attempt int) time.Duration { return Backoff(DefaultRetryBase, attempt) }

// Backoff is RetryBackoff from another first delay (tests use a short one).
func Backoff(base time.Duration, attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if base <= 0 {
		base = DefaultRetryBase
	}
	d := base
	for i := 1; i < attempt && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}
