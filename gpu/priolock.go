package gpu

import "sync"

// prioMutex is a mutex whose urgent waiters (lockAs(true)) take it before the others
// that wait: an urgent proof waits for the device step under way, not also for the
// steps that other proofs queued before it.
type prioMutex struct {
	mu     sync.Mutex
	cond   sync.Cond
	held   bool
	urgent int // urgent callers waiting
	normal int // other callers waiting
}

func (m *prioMutex) Lock() { m.lockAs(false) }

func (m *prioMutex) lockAs(urgent bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cond.L == nil {
		m.cond.L = &m.mu
	}
	if urgent {
		m.urgent++
		for m.held {
			m.cond.Wait()
		}
		m.urgent--
	} else {
		m.normal++
		for m.held || m.urgent > 0 {
			m.cond.Wait()
		}
		m.normal--
	}
	m.held = true
}

func (m *prioMutex) Unlock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		panic("gpu: unlock of unlocked prioMutex")
	}
	m.held = false
	if m.urgent+m.normal > 0 {
		m.cond.Broadcast()
	}
}
