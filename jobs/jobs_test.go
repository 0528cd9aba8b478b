package jobs

import (
	"testing"
	"time"
)

func TestBackoffDoublesFromItsBaseUpToTenMinutes(t *testing.T) {
	for _, c := range []struct {
		base    time.Duration
		attempt int
		want    time.Duration
	}{
		{5 * time.Second, 0, 5 * time.Second},
		{5 * time.Second, 1, 5 * time.Second},
		{5 * time.Second, 2, 10 * time.Second},
		{5 * time.Second, 4, 40 * time.Second},
		{5 * time.Second, 50, 10 * time.Minute},
		{300 * time.Millisecond, 3, 1200 * time.Millisecond},
		{0, 2, 10 * time.Second}, // no base: the default
		{20 * time.Minute, 1, 10 * time.Minute},
	} {
		if got := Backoff(c.base, c.attempt); got != c.want {
			t.Errorf("Backoff(%s, %d) = %s, want %s", c.base, c.attempt, got, c.want)
		}
	}
	if RetryBackoff(3) != Backoff(DefaultRetryBase, 3) {
		t.Errorf("RetryBackoff is not Backoff from DefaultRetryBase")
	}
}

func TestUrgentRequestsHaveTheirOwnQueue(t *testing.T) {
	for p, want := range map[int]string{1: UrgentQueue, 2: Queue, 3: Queue, 4: Queue} {
		if got := QueueFor(p); got != want {
			t.Errorf("QueueFor(%d) = %q, want %q", p, got, want)
		}
	}
	if q := Queues(); len(q) != 2 || q[0] != Queue || q[1] != UrgentQueue {
		t.Errorf("Queues() = %q", q)
	}
}
