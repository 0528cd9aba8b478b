package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// laneDevice is the CPU backend declaring lanes (prover.Lanes): its Prove waits, up to
// a minute, until another Prove call is inside too, and records the most calls inside
// at once.
type laneDevice struct {
	prover.Backend
	lanes int

	mu       sync.Mutex
	in, peak int
	both     chan struct{} // closed when two calls were inside at once
}

func newLaneDevice(lanes int) *laneDevice {
	return &laneDevice{Backend: prover.NewCPU(), lanes: lanes, both: make(chan struct{})}
}

func (d *laneDevice) ProveLanes() int { return d.lanes }

func (d *laneDevice) Prove(ctx context.Context, k prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	d.mu.Lock()
	d.in++
	if d.in > d.peak {
		d.peak = d.in
		if d.peak == 2 {
			close(d.both)
		}
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.in--
		d.mu.Unlock()
	}()
	select {
	case <-d.both:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	return d.Backend.Prove(ctx, k, sols)
}

func (d *laneDevice) peakCalls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.peak
}

// A backend with two lanes gets two provers: two of its Prove calls run at once (each
// waits inside for the other, so with one prover the first would sit out its minute),
// no more, and every proof verifies.
func TestTwoLanesProveAtOnce(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	dev := newLaneDevice(2)
	startWorkerWith(t, db.Pool, []worker.Prover{{Backend: dev}}, nil, func(c *worker.Config) { c.MaxBatch = 1 })
	insertRequests(t, db.Pool, "lane", circuit, 6, 1)
	waitSucceeded(t, db.Pool, "lane", 6)
	if p := dev.peakCalls(); p != 2 {
		t.Errorf("at most %d Prove calls at once on a device of 2 lanes, want 2", p)
	}
	for _, id := range []string{"lane-1", "lane-6"} {
		verifyStored(t, db.Pool, id)
	}
}

// With two lanes a key load that finds the device full while its other keys are in use
// by the other lane waits for one to be released, instead of failing the batch.
func TestKeyLoadWaitsForTheOtherLane(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	ctx := context.Background()
	dev := &laneSmallDevice{smallDevice: newSmallDevice(1)}
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)
	held, _, err := cat.Key(ctx, a, dev)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		kb, _, err := cat.Key(ctx, b, dev)
		if err == nil {
			kb.Release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("loading %s returned while %s is in use: %v; want it to wait", b, a, err)
	case <-time.After(200 * time.Millisecond):
	}
	held.Release()
	if err := <-got; err != nil {
		t.Fatalf("loading %s once %s was released: %v", b, a, err)
	}
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyEvicted {
		t.Errorf("%s after %s took its room: %+v, want evicted", a, b, st)
	}

	// A waiting load ends with its context.
	held, _, err = cat.Key(ctx, b, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, _, err := cat.Key(short, a, dev); err == nil {
		t.Fatalf("loading %s while %s is held: no error after the context ended", a, b)
	}
}

// laneSmallDevice is a smallDevice of two lanes.
type laneSmallDevice struct{ *smallDevice }

func (d *laneSmallDevice) ProveLanes() int { return 2 }
