package worker

import (
	"strings"
	"testing"
	"time"
)

// River refuses a poll interval below its fetch cooldown; the worker says so in its
// own terms before River is built.
func TestPollIntervalAtLeastFetchCooldown(t *testing.T) {
	for _, c := range []struct {
		poll time.Duration
		ok   bool
	}{{fetchCooldown - time.Millisecond, false}, {fetchCooldown, true}, {time.Second, true}, {0, true}} {
		cfg := DefaultConfig()
		cfg.MemBudget = 1 << 30
		cfg.PollInterval = c.poll
		err := cfg.validate()
		if (err == nil) != c.ok {
			t.Errorf("poll interval %v: validate = %v, want ok=%v", c.poll, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "poll interval must be at least 20ms") {
			t.Errorf("poll interval %v: error %q does not name the bound", c.poll, err)
		}
	}
}
