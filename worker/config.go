package worker

import (
	"fmt"
	"os"
	"time"

	"github.com/cuzk/cuzk/jobs"
)

// Config are the worker's settings. The CLI fills them from flags and CUZK_* variables.
type Config struct {
	Name             string        // identity in attempt rows; default host/pid
	MemBudget        int64         // bytes for everything the worker holds (Budget)
	BaseBytes        int64         // memory the process holds before any work, counted in MemBudget
	MaxBatch         int           // proofs of one circuit proven together
	BatchWait        time.Duration // longest a request waits for its batch to fill
	SynthConcurrency int           // solves at once (a request's partitions too), sharing the cores
	LargeSolves      int           // solves at once, within SynthConcurrency, of block-split circuits of LargeSolveConstraints or more; 0: no bound of its own
	QueueDepth       int           // solved batches waiting for a prover, per device
	UrgentSlots      int           // jobs of urgent requests held beside the others (jobs.UrgentQueue); 0: it claims none
	RescueAfter      time.Duration // a job 'running' this long without finishing is retried; also each attempt's time limit
	ShutdownGrace    time.Duration // in-flight work gets this long to finish on stop
	RetryBackoff     time.Duration // delay before the first retry, doubling each attempt (jobs.Backoff)
	PollInterval     time.Duration // how often River looks for jobs without a notification
	HeartbeatEvery   time.Duration // cuzk.workers refresh
	DeadAfter        time.Duration // a worker silent this long is dead: its jobs go back at once (0: off)
	ScrubInputs      bool          // delete private inputs once the proof is stored
	Build            string        // recorded in attempt rows; default BuildString()
	Observer         Observer      // told about each finished attempt; may be nil
	// PreloadKeys are circuits whose keys are made resident on every device at start,
	// in the background, before those of the circuits with queued requests.
	PreloadKeys []string

	sweepBytes int64 // consumed solutions that start a collection; 0: sweepThreshold(MemBudget)
}

// DefaultConfig is a sensible single-host configuration.
func DefaultConfig() Config {
	return Config{
		Name:             DefaultName(),
		MaxBatch:         1,
		BatchWait:        50 * time.Millisecond,
		SynthConcurrency: 2,
		QueueDepth:       2,
		UrgentSlots:      2,
		RescueAfter:      time.Hour,
		ShutdownGrace:    2 * time.Minute,
		RetryBackoff:     jobs.DefaultRetryBase,
		PollInterval:     time.Second,
		HeartbeatEvery:   10 * time.Second,
		DeadAfter:        time.Minute,
		ScrubInputs:      true,
	}
}

// DefaultName is host/pid.
func DefaultName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

func (c *Config) validate() error {
	switch {
	case c.MemBudget <= 0:
		return fmt.Errorf("memory budget must be positive, got %d", c.MemBudget)
	case c.MaxBatch < 1:
		return fmt.Errorf("max batch must be at least 1, got %d", c.MaxBatch)
	case c.LargeSolves < 0:
		return fmt.Errorf("large solves at once must not be negative, got %d", c.LargeSolves)
	case c.SynthConcurrency < 1:
		return fmt.Errorf("synthesis concurrency must be at least 1, got %d", c.SynthConcurrency)
	case c.QueueDepth < 1:
		return fmt.Errorf("queue depth must be at least 1, got %d", c.QueueDepth)
	case c.UrgentSlots < 0:
		return fmt.Errorf("urgent slots must not be negative, got %d", c.UrgentSlots)
	case c.BatchWait < 0:
		return fmt.Errorf("batch wait must not be negative, got %s", c.BatchWait)
	case c.RescueAfter < time.Second:
		return fmt.Errorf("rescue-after must be at least 1s, got %s", c.RescueAfter)
	}
	if c.Name == "" {
		c.Name = DefaultName()
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.PollInterval < fetchCooldown {
		return fmt.Errorf("poll interval must be at least %s (the least time between two fetches), got %s", fetchCooldown, c.PollInterval)
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = jobs.DefaultRetryBase
	}
	if c.ShutdownGrace < 0 {
		c.ShutdownGrace = 0
	}
	if c.HeartbeatEvery <= 0 {
		c.HeartbeatEvery = 10 * time.Second
	}
	if c.DeadAfter > 0 && c.DeadAfter < 3*c.HeartbeatEvery {
		// Fewer than three missed beats would call a worker dead on one slow query.
		return fmt.Errorf("dead-after (%s) must be 0 (off) or at least three heartbeats (%s)", c.DeadAfter, 3*c.HeartbeatEvery)
	}
	return nil
}
