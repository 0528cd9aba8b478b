package devinfo

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Telemetry runs a Poller in the background for the life of a worker and hands out
// the latest sample of each device without querying the driver: what an attempt row
// stores (worker.Prover.Telemetry) and what the metrics layer reads.
type Telemetry struct {
	*Poller
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
	onClose []func()
}

// StartTelemetry polls indices from src every interval (DefaultPollInterval if <= 0)
// until Close. The first sample of every device is taken before it returns, so an
// attempt proven right after start has readings.
func StartTelemetry(src Sampler, indices []int, interval time.Duration, onErr func(index int, err error)) *Telemetry {
	p := NewPoller(src, indices, interval, onErr)
	ctx, cancel := context.WithCancel(context.Background())
	p.pollOnce(ctx)
	t := &Telemetry{Poller: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(p.interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				p.pollOnce(ctx)
			}
		}
	}()
	return t
}

// JSON returns a function that encodes the latest sample of device index (the
// Sample JSON: utilization, memory used/total, temperature, ...), or nil before any
// sample succeeded. It never blocks on the driver.
func (t *Telemetry) JSON(index int) func() []byte {
	return func() []byte {
		s, ok := t.Latest(index)
		if !ok {
			return nil
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil
		}
		return b
	}
}

// OnClose registers f to run once polling has stopped (e.g. closing the Sampler).
// Call it before Close.
func (t *Telemetry) OnClose(f func()) { t.onClose = append(t.onClose, f) }

// Close stops polling, waits for the poller to finish, then runs the OnClose
// functions; the latest samples stay readable. It may be called more than once, and
// on a nil *Telemetry (no GPU) it does nothing.
func (t *Telemetry) Close() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		t.cancel()
		<-t.done
		for _, f := range t.onClose {
			f()
		}
	})
}
