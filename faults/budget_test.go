package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cuzk/cuzk/worker"
)

// A request that needs more memory than one worker's whole --mem-budget is not failed
// by that worker while another live worker's budget holds it: the small worker puts it
// back without an attempt and the large one proves it. Once no live worker's budget
// holds it, it fails with the budget's error.
func TestRequestTooLargeForOneWorkerGoesToOneItFits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	need := scalar[int64](t, e.pool, `SELECT mem_estimate_bytes FROM cuzk.circuits WHERE name = $1`, big)
	roomy := e.start("roomy") // 2GiB
	e.waitFor(time.Minute, "roomy advertises its budget", func(ctx context.Context) (bool, string, error) {
		var budget int64
		err := e.pool.QueryRow(ctx, `SELECT coalesce((SELECT (config->>'mem_budget')::bigint FROM cuzk.workers WHERE worker = 'roomy'), 0)`).Scan(&budget)
		return budget >= need, fmt.Sprintf("mem_budget %d", budget), err
	})
	// Alive (its row says so for --dead-after) but claiming nothing while tight meets
	// the request.
	roomy.signal(t, syscall.SIGSTOP)
	tight := e.start("tight", "--mem-budget", strconv.FormatInt(need-1, 10), "--dead-after", "10m")
	ids := e.submit("fits-roomy", big, 1, 2)
	const putBack = "request needs more memory than this worker's budget: put back for a worker whose budget holds it"
	e.waitFor(time.Minute, "tight puts the request back", func(context.Context) (bool, string, error) {
		return strings.Contains(tight.output(), putBack), "not put back yet", nil
	})
	roomy.signal(t, syscall.SIGCONT)
	e.waitStates(time.Minute, "succeeded", ids)
	e.exactlyOnce(ids)
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE worker = 'tight'`); n != 0 {
		t.Errorf("tight recorded %d attempts, want none (put back before an attempt begins)", n)
	}
	if n := scalar[int](t, e.pool, `SELECT attempts FROM cuzk.proof_requests WHERE request_id = $1`, ids[0]); n != 1 {
		t.Errorf("%s used %d attempts, want 1 (roomy's)", ids[0], n)
	}

	// roomy stops: no live worker's budget holds the next one, which fails at once.
	roomy.signal(t, syscall.SIGTERM)
	if code := roomy.wait(t, time.Minute); code != 0 {
		t.Fatalf("roomy exited %d", code)
	}
	late := e.submit("fits-none", big, 1, 2)
	e.waitStates(time.Minute, "failed", late)
	// The circuit's proving key, reserved before the request's synthesis, is refused
	// first when it is the larger.
	refused := need
	for _, c := range sh.circuits {
		if c.Name == big {
			if bound := worker.HostKeyBound(c.Wires, c.Constraints); bound > need-1 {
				refused = bound
			}
		}
	}
	want := fmt.Sprintf("needs %d bytes of memory, more than the whole budget of %d bytes", refused, need-1)
	if msg := scalar[string](t, e.pool, `SELECT last_error FROM cuzk.proof_requests WHERE request_id = $1`, late[0]); !strings.Contains(msg, want) {
		t.Errorf("last_error %q does not say %q", msg, want)
	}
	tight.alive(t)
}
