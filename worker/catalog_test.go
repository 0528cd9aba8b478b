package worker

import (
	"context"
	"testing"
	"time"
)

// A caller that finds a load in progress (a preload, another batch) reports it as
// loading, so its srs_ms is the wait; one that finds the value resident does not.
func TestLoadOnceWaiterCountsAsLoading(t *testing.T) {
	var o loadOnce[int]
	release, started := make(chan struct{}), make(chan struct{})
	first := make(chan bool)
	go func() {
		_, loaded, _ := o.get(context.Background(), "k", func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
		first <- loaded
	}()
	<-started
	waiter := make(chan bool)
	go func() {
		v, loaded, err := o.get(context.Background(), "k", func(context.Context) (int, error) { t.Error("loaded twice"); return 0, nil })
		if v != 1 || err != nil {
			t.Errorf("waiter got %d, %v", v, err)
		}
		waiter <- loaded
	}()
	time.Sleep(50 * time.Millisecond) // let the waiter block on the load in progress
	close(release)
	if !<-first {
		t.Error("the caller that loaded did not say so")
	}
	if !<-waiter {
		t.Error("a caller that waited for a load in progress reported the value as resident")
	}
	if _, loaded, _ := o.get(context.Background(), "k", nil); loaded {
		t.Error("a caller that found the value resident reported a load")
	}
}
