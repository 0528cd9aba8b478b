package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// gatedKeys loads test keys, but slow's load does not finish until release is closed
// (or a deadline passes): a key load that takes as long as the test needs.
type gatedKeys struct {
	slow    string
	release chan struct{}
	started chan struct{} // closed when slow's load begins

	mu       sync.Mutex
	slowLoad int       // loads of slow begun
	slowDone time.Time // when slow's load finished
}

func (g *gatedKeys) load(ctx context.Context, name string, progress func(read, total int64)) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
	if name == g.slow {
		g.mu.Lock()
		g.slowLoad++
		if g.slowLoad == 1 {
			close(g.started)
		}
		g.mu.Unlock()
		select {
		case <-g.release:
		case <-time.After(2 * time.Minute):
		}
		defer func() {
			g.mu.Lock()
			g.slowDone = time.Now()
			g.mu.Unlock()
		}()
	}
	return keys.load(ctx, name, progress)
}

// A worker started with queued requests of two circuits starts loading both keys at
// once; the requests of the circuit whose key is ready are proven while the other
// circuit's key is still loading (its batch waits for the key, not on the device),
// and the slow circuit's requests wait for that one load rather than starting another.
// The slow circuit's requests are the more urgent, so they are claimed first.
func TestQueuedCircuitNotHeldUpByAnotherKeyLoad(t *testing.T) {
	db := pgtest.New(t)
	const fast, slow = "synthetic-k6", "synthetic-k7"
	register(t, db.Pool, fast)
	register(t, db.Pool, slow)
	var fastIDs, slowIDs []string
	for i := range 2 {
		for _, c := range []struct {
			name     string
			priority int
			ids      *[]string
		}{{slow, 1, &slowIDs}, {fast, 3, &fastIDs}} {
			inputs, err := synth.Inputs(c.name, uint64(i+1))
			if err != nil {
				t.Fatal(err)
			}
			rid := fmt.Sprintf("%s-%d", c.name, i)
			*c.ids = append(*c.ids, rid)
			psql(t, db.URL, fmt.Sprintf("INSERT INTO cuzk.proof_requests (request_id, circuit, inputs, priority) VALUES ('%s', '%s', $json$%s$json$, %d);",
				rid, c.name, inputs, c.priority))
		}
	}

	g := &gatedKeys{slow: slow, release: make(chan struct{}), started: make(chan struct{})}
	defer func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	}()
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	cat := worker.NewCatalog(keys.reg.Get, g.load, log)
	startWorkerCatalog(t, db.Pool, cat, nil, log, nil)

	select {
	case <-g.started:
	case <-time.After(time.Minute):
		t.Fatal("the slow circuit's key load did not start within a minute")
	}
	if !hasState(cat, slow, worker.KeyLoading) {
		t.Errorf("while its load runs, the slow key's states are %+v, want loading", cat.KeyStates())
	}
	// The fast circuit's requests finish while the slow key is still loading; past the
	// deadline the gate opens anyway and the ordering check below fails.
	deadline := time.Now().Add(90 * time.Second)
	for _, rid := range fastIDs {
		for state(t, db, rid) != "succeeded" && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	close(g.release)
	for _, rid := range append(slowIDs, fastIDs...) {
		if st, le := waitState(t, db.Pool, rid, "succeeded", "failed"); st != "succeeded" {
			t.Fatalf("%s: %s: %s", rid, st, le)
		}
		verifyStored(t, db.Pool, rid)
	}

	g.mu.Lock()
	slowDone, loads := g.slowDone, g.slowLoad
	g.mu.Unlock()
	for _, rid := range fastIDs {
		var finished time.Time
		if err := db.Pool.QueryRow(context.Background(),
			"SELECT finished_at FROM cuzk.proof_attempts WHERE request_id = $1 AND outcome = 'succeeded'", rid).Scan(&finished); err != nil {
			t.Fatal(err)
		}
		if !finished.Before(slowDone) {
			t.Errorf("%s finished at %s, after the slow key's load ended at %s: it waited for another circuit's key",
				rid, finished.Format(time.StampMicro), slowDone.Format(time.StampMicro))
		}
	}
	if loads != 1 {
		t.Errorf("the slow key was loaded %d times, want once (every request waits for the same load)", loads)
	}
	for _, rid := range slowIDs {
		var srs float64
		if err := db.Pool.QueryRow(context.Background(),
			"SELECT srs_ms FROM cuzk.proof_attempts WHERE request_id = $1 AND outcome = 'succeeded'", rid).Scan(&srs); err != nil {
			t.Fatal(err)
		}
		if srs <= 0 {
			t.Errorf("%s: srs_ms %v, want the time it waited for the key load", rid, srs)
		}
		checkAttemptTimings(t, db.Pool, rid)
	}
	if !hasState(cat, slow, worker.KeyResident) || !hasState(cat, fast, worker.KeyResident) {
		t.Errorf("key states after both loads: %+v, want both resident", cat.KeyStates())
	}
	recs := buf.String()
	if !strings.Contains(recs, `"msg":"preloading proving keys"`) || !strings.Contains(recs, `"queued":"`+slow+","+fast+`"`) {
		t.Errorf("want a line preloading the queued circuits' keys, most urgent first; logged:\n%s", recs)
	}
}

func state(t *testing.T, db *pgtest.DB, rid string) string {
	t.Helper()
	var s string
	if err := db.Pool.QueryRow(context.Background(), "SELECT state FROM cuzk.proof_requests WHERE request_id = $1", rid).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// hasState says whether every entry of circuit's key (its files and each device) is in
// state st, and there is at least one.
func hasState(cat worker.KeyStates, circuit, st string) bool {
	n := 0
	for _, s := range cat.KeyStates() {
		if s.Circuit == circuit {
			if s.State != st {
				return false
			}
			n++
		}
	}
	return n > 0
}
