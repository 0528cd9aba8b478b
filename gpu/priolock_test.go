package gpu

import (
	"sync"
	"testing"
	"time"
)

// waiters is how many callers wait for m: urgent ones, others.
func (m *prioMutex) waiters() (int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.urgent, m.normal
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// An urgent caller that comes after others takes the lock before them once it is
// released; the others then take it one at a time.
func TestPrioMutexUrgentFirst(t *testing.T) {
	var m prioMutex
	m.Lock()
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	take := func(name string, urgent bool) {
		wg.Go(func() {
			m.lockAs(urgent)
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			m.Unlock()
		})
	}
	take("normal-1", false)
	take("normal-2", false)
	waitUntil(t, "two callers wait", func() bool { _, n := m.waiters(); return n == 2 })
	take("urgent", true)
	waitUntil(t, "the urgent caller waits", func() bool { u, _ := m.waiters(); return u == 1 })
	m.Unlock()
	wg.Wait()
	if len(order) != 3 || order[0] != "urgent" {
		t.Fatalf("order %v, want the urgent caller first", order)
	}
	if u, n := m.waiters(); u != 0 || n != 0 || m.held {
		t.Fatalf("after all: urgent %d, normal %d waiting, held %v", u, n, m.held)
	}
}

// The lock excludes: callers of both kinds never hold it at once.
func TestPrioMutexExcludes(t *testing.T) {
	var m prioMutex
	var in, most int
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for range 200 {
				m.lockAs(i%4 == 0)
				in++
				most = max(most, in)
				in--
				m.Unlock()
			}
		})
	}
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d callers held the lock at once", most)
	}
}
