package worker

import (
	"runtime"
	"sync"
)

// heapSweeper collects the Go heap's garbage once solutions of at least threshold
// bytes in all have been consumed since the last collection. A solution's vectors
// (9 GiB for a porep-k27 partition) are garbage as soon as its proof is made (its wire
// values once the proof is verified), while the budget already counts their bytes as
// free and lets the next solve allocate as much. Left to the runtime, the heap then
// holds both until it reaches its memory limit, where the scavenger hands freed pages back to the kernel and the next solve
// faults them in again (300k page faults a porep-k24 solve on the development
// machine, 7-11% of its time). Collected at once, the garbage is reused instead.
type heapSweeper struct {
	threshold int64
	gc        func() // runtime.GC outside tests

	mu      sync.Mutex
	pending int64 // bytes consumed since the running or last collection began
	running bool
}

func newHeapSweeper(threshold int64) *heapSweeper {
	return &heapSweeper{threshold: threshold, gc: runtime.GC}
}

// sweepThreshold is the consumed bytes that start a collection for a worker with the
// given memory budget: a sixteenth of it, at least 1 GiB, so that a worker of small
// proofs does not collect after each of them.
func sweepThreshold(budget int64) int64 { return max(budget/16, 1<<30) }

// consumed records n bytes of solutions that are garbage now, and starts a collection
// in the background when enough have gathered; bytes consumed while one runs start
// another after it.
func (s *heapSweeper) consumed(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending += n
	if s.running || s.pending < s.threshold {
		return
	}
	s.running = true
	s.pending = 0
	go s.run()
}

func (s *heapSweeper) run() {
	for {
		s.gc()
		s.mu.Lock()
		if s.pending < s.threshold {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.pending = 0
		s.mu.Unlock()
	}
}
