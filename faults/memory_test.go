package faults

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// porep is the circuit of the memory and urgency tests: shaped like a PoRep partition,
// large enough that its key, compiled circuit and partitions' working sets are most
// of a worker's memory.
const porep = "porep-k16"

// setupPorep registers porep on the test's database with keys in the test's keys dir
// (cuzk setup: the ceremony runs once per test).
func (e *env) setupPorep() {
	e.t.Helper()
	e.cuzk("setup", "--circuit", porep, "--backend", "cpu", "--keys-dir", e.keys, "--cache-dir", sh.cache)
}

// submitPartitioned inserts request id of circuit as n partitions with plain SQL;
// n = 1 is a single proof.
func (e *env) submitPartitioned(id, circuit string, n, priority int) {
	e.t.Helper()
	inputs := sh.inputs[circuit]
	if n > 1 || inputs == "" {
		inputs = e.cuzk("inputs", "--circuit", circuit, "--partitions", strconv.Itoa(n))
	}
	if _, err := e.pool.Exec(context.Background(),
		`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority) VALUES ($1, $2, $3::jsonb, $4)`,
		id, circuit, inputs, priority); err != nil {
		e.t.Fatalf("insert request %s: %v", id, err)
	}
}

// freeAddr is a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// budgetKinds reads the memory budget's line of a worker's /readyz: per kind, the
// bytes it holds now and at most.
func budgetKinds(t *testing.T, addr string) (now, peak map[string]int64) {
	t.Helper()
	var body string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); resp.StatusCode == http.StatusOK && strings.Contains(body, "memory budget") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz of %s: %v %q", addr, err, body)
		}
	}
	now, peak = map[string]int64{}, map[string]int64{}
	for _, m := range regexp.MustCompile(`(\w+) (\d+) \(peak (\d+)\)`).FindAllStringSubmatch(body, -1) {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		p, _ := strconv.ParseInt(m[3], 10, 64)
		now[m[1]], peak[m[1]] = n, p
	}
	return now, peak
}

// budgets returns budgetFor, the --mem-budget whose room holds that many syntheses of
// circuit beside what a worker holds anyway: the process, the proving key and the
// compiled circuit, as a probe worker on the test's database reports them on /readyz
// once it has proven a request of circuit (probe-CIRCUIT), with 2 MiB to spare for a
// process that starts a little larger; and one synthesis's bytes.
func (e *env) budgets(circuit string) (budgetFor func(syntheses float64) int64, synthesis int64) {
	e.t.Helper()
	const probeBudget = 2 << 30
	addr := freeAddr(e.t)
	probe := e.start("probe", "--mem-budget", strconv.Itoa(probeBudget), "--http", addr)
	id := "probe-" + circuit
	e.submitPartitioned(id, circuit, 1, 2)
	e.waitStates(2*time.Minute, "succeeded", []string{id})
	now, peak := budgetKinds(e.t, addr)
	probe.signal(e.t, syscall.SIGTERM)
	if code := probe.wait(e.t, time.Minute); code != 0 {
		e.t.Fatalf("probe exited %d", code)
	}
	synthesis = scalar[int64](e.t, e.pool, `SELECT mem_estimate_bytes FROM cuzk.circuits WHERE name = $1`, circuit)
	// The process's share is its memory at start and 1/32 of the budget (cuzk worker).
	base := now["process"] - probeBudget/32
	held := now["key"] + now["circuit"]
	if peak["synthesis"] < synthesis || base <= 0 || held <= 0 {
		e.t.Fatalf("probe's budget: now %v, peak %v; want process, key, circuit and a synthesis of %d bytes", now, peak, synthesis)
	}
	return func(syntheses float64) int64 {
		return int64(float64(base+2<<20+held+int64(syntheses*float64(synthesis))) / (1 - 1.0/32))
	}, synthesis
}

// memSampler samples a process's resident memory until stopped; peak is the most it
// saw, with the kernel's high-water mark (VmHWM) read last.
type memSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
}

func sampleMemory(pid int) *memSampler {
	s := &memSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			if rss, _, err := procMem(pid); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, rss)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return s
}

// end stops sampling and returns the peak resident memory: the high-water mark of
// the process, at least what the samples saw.
func (s *memSampler) end(t *testing.T) int64 {
	t.Helper()
	close(s.stop)
	<-s.done
	_, hwm, err := procMem(s.pid)
	if err != nil {
		t.Fatalf("read memory of %d: %v", s.pid, err)
	}
	return max(s.peak, hwm)
}

// procMem reads VmRSS and VmHWM of pid, in bytes.
func procMem(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		for key, v := range map[string]*int64{"VmRSS:": &rss, "VmHWM:": &hwm} {
			if s, ok := strings.CutPrefix(line, key); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(s), " kB"), 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("%s %q: %w", key, s, err)
				}
				*v = kb << 10
			}
		}
	}
	return rss, hwm, nil
}

// One --mem-budget counts everything a worker holds. A worker sized from what a first
// worker reported (its process, proving key, compiled circuit and one partition's
// working set) proves a request of 10 partitions with room for one partition at a
// time and never holds more than its budget and 5%: its peak resident memory
// (VmHWM) is checked. A budget smaller than one partition with the rest fails such a
// request at once, naming the bytes it needs and the budget.
func TestMemoryBudgetBoundsResidentMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setupPorep()

	budgetFor, partition := e.budgets(porep)
	budget := budgetFor(1.5)
	addr := freeAddr(t)
	w := e.start("tight", "--mem-budget", strconv.FormatInt(budget, 10), "--http", addr)
	mem := sampleMemory(w.cmd.Process.Pid)
	e.submitPartitioned("ten", porep, 10, 2)
	e.waitStates(5*time.Minute, "succeeded", []string{"ten"})
	rss := mem.end(t)
	_, peak := budgetKinds(t, addr)
	t.Logf("budget %d bytes: peak resident %d bytes (%.3f of the budget); budget peaks %v", budget, rss, float64(rss)/float64(budget), peak)
	if rss > budget+budget/20 {
		t.Errorf("peak resident memory %d bytes, more than the budget %d and 5%%", rss, budget)
	}
	if peak["synthesis"] >= 2*partition || peak["synthesis"] < partition {
		t.Errorf("synthesis peak %d bytes, want one partition's %d and less than two in a budget for one and a half", peak["synthesis"], partition)
	}
	if out := e.cuzk("verify", "ten"); out != "ten: ok (10 partitions)\n" {
		t.Errorf("cuzk verify ten: %q", out)
	}
	w.signal(t, syscall.SIGTERM)
	if code := w.wait(t, time.Minute); code != 0 {
		t.Fatalf("tight exited %d", code)
	}

	// Half a partition of room: the request fails at once, not retried.
	small := budgetFor(0.5)
	e.start("small", "--mem-budget", strconv.FormatInt(small, 10))
	e.submitPartitioned("none", porep, 10, 2)
	e.waitStates(2*time.Minute, "failed", []string{"none"})
	msg := scalar[string](t, e.pool, `SELECT last_error FROM cuzk.proof_requests WHERE request_id = 'none'`)
	want := regexp.MustCompile(`^partition 0 of 10: synthesis \d+, compiled circuit \d+ and proving key \d+ bytes: needs (\d+) bytes of memory, more than the budget of ` +
		strconv.FormatInt(small, 10) + ` bytes leaves \((\d+) bytes, `)
	m := want.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("last_error %q, want it to match %s", msg, want)
	}
	need, _ := strconv.ParseInt(m[1], 10, 64)
	room, _ := strconv.ParseInt(m[2], 10, 64)
	if need <= room {
		t.Errorf("last_error %q: needs %d, no more than the room %d", msg, need, room)
	}
	if n := scalar[int](t, e.pool, `SELECT attempts FROM cuzk.proof_requests WHERE request_id = 'none'`); n != 1 {
		t.Errorf("none used %d attempts, want 1 (no retry)", n)
	}
}

// requestTimes is when request id was created and finished, and its latency.
func (e *env) requestTimes(id string) (created, finished time.Time, latency time.Duration) {
	e.t.Helper()
	err := e.pool.QueryRow(context.Background(),
		`SELECT created_at, finished_at FROM cuzk.proof_status WHERE request_id = $1`, id).Scan(&created, &finished)
	if err != nil {
		e.t.Fatalf("times of %s: %v", id, err)
	}
	return created, finished, finished.Sub(created)
}

// An urgent request (priority 1) submitted while a worker is busy with a long request
// of 10 partitions finishes long before it: it is claimed beside the long request,
// goes first at the provers, and the long request starts no partition while it is on
// its way. Its latency is bounded by its own time alone (measured first, in the same
// test) and one partition's proof, the work it cannot interrupt.
func TestUrgentRequestOvertakesPartitionedRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setupPorep()
	e.start("w")

	// Alone, warm (its key loaded by the first).
	var solo time.Duration
	for i := range 2 {
		id := fmt.Sprintf("solo-%d", i)
		e.submitPartitioned(id, small, 1, 1)
		e.waitStates(time.Minute, "succeeded", []string{id})
		_, _, solo = e.requestTimes(id)
	}

	e.submitPartitioned("long", porep, 10, 2)
	e.waitFor(2*time.Minute, "two partitions of long stored", func(ctx context.Context) (bool, string, error) {
		var n int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM cuzk.partition_proofs WHERE request_id = 'long'`).Scan(&n)
		return n >= 2, fmt.Sprintf("%d stored", n), err
	})
	e.submitPartitioned("urgent", small, 1, 1)
	e.waitStates(2*time.Minute, "succeeded", []string{"urgent"})
	e.waitStates(5*time.Minute, "succeeded", []string{"long"})

	_, urgentDone, urgent := e.requestTimes("urgent")
	_, longDone, _ := e.requestTimes("long")
	var stored int
	var partition float64 // the longest partition's synthesis and proof, ms
	if err := e.pool.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM cuzk.partition_proofs WHERE request_id = 'long' AND created_at < $1),
		       (SELECT max(synth_ms + prove_ms) FROM cuzk.partition_attempts WHERE request_id = 'long')`, urgentDone).
		Scan(&stored, &partition); err != nil {
		t.Fatal(err)
	}
	bound := 2*solo + time.Duration(partition*float64(time.Millisecond))
	t.Logf("urgent: %s (%.1f times its %s alone), bound %s (twice alone and the longest partition's %.0f ms); long's partitions stored before it: %d of 10",
		urgent, float64(urgent)/float64(solo), solo, bound, partition, stored)
	if !urgentDone.Before(longDone) {
		t.Errorf("urgent finished at %s, not before long (%s)", urgentDone, longDone)
	}
	if urgent > bound {
		t.Errorf("urgent took %s, more than twice its time alone (%s) and one partition's synthesis and proof (%.0f ms)", urgent, solo, partition)
	}
	if stored >= 10 {
		t.Errorf("every partition of long was stored before urgent finished")
	}
}
