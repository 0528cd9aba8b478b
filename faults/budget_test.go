package faults

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A request that needs more memory than one worker's whole --mem-budget is not failed
// by that worker while another live worker's budget holds it: the small worker puts it
// back without an attempt and stays off it, and the large one proves it. Once no live
// worker's budget holds it, it fails with the budget's error. The small worker's
// budget leaves less room than one synthesis of the circuit beside the process itself,
// whose size the large worker's /readyz tells.
func TestRequestTooLargeForOneWorkerGoesToOneItFits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setupPorep()
	need := scalar[int64](t, e.pool, `SELECT mem_estimate_bytes FROM cuzk.circuits WHERE name = $1`, porep)
	const roomyBudget = 2 << 30
	addr := freeAddr(t)
	roomy := e.start("roomy", "--mem-budget", strconv.Itoa(roomyBudget), "--http", addr)
	e.waitFor(time.Minute, "roomy advertises its budget", func(ctx context.Context) (bool, string, error) {
		var budget int64
		err := e.pool.QueryRow(ctx, `SELECT coalesce((SELECT (config->>'mem_budget')::bigint FROM cuzk.workers WHERE worker = 'roomy'), 0)`).Scan(&budget)
		return budget >= need, fmt.Sprintf("mem_budget %d", budget), err
	})
	// Stopped with its River client up: the row is written before River starts.
	e.waitFor(time.Minute, "roomy started", func(context.Context) (bool, string, error) {
		return strings.Contains(roomy.output(), "worker started"), "no start line yet", nil
	})
	now, _ := budgetKinds(t, addr)
	// The process's share is its memory at start and 1/32 of the budget (cuzk worker);
	// tight's room is half a synthesis.
	base := now["process"] - roomyBudget/32
	tightBudget := int64(float64(base+need/2) / (1 - 1.0/32))
	// Alive (its row says so for --dead-after) but claiming nothing while tight meets
	// the request.
	roomy.signal(t, syscall.SIGSTOP)
	tight := e.start("tight", "--mem-budget", strconv.FormatInt(tightBudget, 10), "--dead-after", "10m")
	e.submitPartitioned("fits-roomy", porep, 1, 2)
	ids := []string{"fits-roomy"}
	const putBack = "request needs more memory than this worker's budget: put back for a worker whose budget holds it"
	e.waitFor(time.Minute, "tight puts the request back", func(context.Context) (bool, string, error) {
		return strings.Contains(tight.output(), putBack), "not put back yet", nil
	})
	roomy.signal(t, syscall.SIGCONT)
	// tight leaves the request out of its fetches for a while after each put back (a
	// second, then doubling), so roomy, polling every 200 ms, claims it as soon as it
	// runs again; should tight look again first (roomy still catching up on a loaded
	// machine), it puts it back again without an attempt.
	e.waitStates(4*time.Minute, "succeeded", ids)
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
	e.submitPartitioned("fits-none", porep, 1, 2)
	e.waitStates(time.Minute, "failed", []string{"fits-none"})
	// Whichever reservation is refused first names the bytes: the request's whole need
	// (synthesis, circuit and key), or the key's host copy taken ahead of its batch.
	want := regexp.MustCompile(fmt.Sprintf(`(^synthesis %d, compiled circuit \d+ and proving key \d+ bytes|memory for the host copy of the proving key of %s): needs \d+ bytes of memory, more than the budget of %d bytes leaves `, need, porep, tightBudget))
	if msg := scalar[string](t, e.pool, `SELECT last_error FROM cuzk.proof_requests WHERE request_id = 'fits-none'`); !want.MatchString(msg) {
		t.Errorf("last_error %q does not match %s", msg, want)
	}
	tight.alive(t)
}

// A setup by an older build may have recorded more memory for a synthesis than it
// needs. Once a worker has loaded the circuit it goes by the exact estimate: a request
// that fits its room is proven there, not put back for a worker whose budget holds the
// recorded one.
func TestOverstatedEstimateDoesNotPutBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setupPorep()
	const budget = 2 << 30
	if _, err := e.pool.Exec(context.Background(), `UPDATE cuzk.circuits SET mem_estimate_bytes = $1 WHERE name = $2`,
		int64(4*budget), porep); err != nil {
		t.Fatal(err)
	}
	// --dead-after: the stopped worker below stays live in its eyes.
	w := e.start("exact", "--mem-budget", strconv.Itoa(budget), "--dead-after", "10m")
	// Alone, it proves the first request whatever the recorded estimate says.
	e.submitPartitioned("loads-circuit", porep, 1, 2)
	e.waitStates(4*time.Minute, "succeeded", []string{"loads-circuit"})
	// A live worker (stopped, claiming nothing) whose budget holds the recorded estimate.
	roomy := e.start("roomy", "--mem-budget", strconv.Itoa(8*budget))
	e.waitFor(time.Minute, "roomy started", func(context.Context) (bool, string, error) {
		return strings.Contains(roomy.output(), "worker started"), "no start line yet", nil
	})
	roomy.signal(t, syscall.SIGSTOP)
	defer roomy.signal(t, syscall.SIGCONT)
	e.submitPartitioned("fits-exact", porep, 1, 2)
	e.waitStates(4*time.Minute, "succeeded", []string{"fits-exact"})
	const putBack = "put back for a worker whose budget holds it"
	if strings.Contains(w.output(), putBack) {
		t.Errorf("exact put a request back by the recorded estimate:\n%s", w.output())
	}
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = 'fits-exact' AND worker = 'exact'`); n != 1 {
		t.Errorf("exact made %d attempts at fits-exact, want 1", n)
	}
}
