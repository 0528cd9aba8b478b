package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/backend/witness"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/hostinfo"
	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// testKeys runs gnark's Setup once per circuit for the whole test binary.
type testKeys struct {
	reg *synth.Registry
	mu  sync.Mutex
	pk  map[string]*groth16bls.ProvingKey
	vk  map[string]*groth16bls.VerifyingKey
}

var keys = &testKeys{pk: map[string]*groth16bls.ProvingKey{}, vk: map[string]*groth16bls.VerifyingKey{}}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cuzk-worker-test-")
	if err != nil {
		panic(err)
	}
	keys.reg = synth.NewRegistry(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func (k *testKeys) setup(t testing.TB, name string) (*synth.Compiled, *groth16bls.ProvingKey, *groth16bls.VerifyingKey) {
	t.Helper()
	c, err := k.reg.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if pk, ok := k.pk[name]; ok {
		return c, pk, k.vk[name]
	}
	pk, vk, err := groth16.Setup(c.CS)
	if err != nil {
		t.Fatalf("setup %s: %v", name, err)
	}
	k.pk[name], k.vk[name] = pk.(*groth16bls.ProvingKey), vk.(*groth16bls.VerifyingKey)
	return c, k.pk[name], k.vk[name]
}

func (k *testKeys) load(_ context.Context, name string, _ func(read, total int64)) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pk, ok := k.pk[name]
	if !ok {
		return nil, nil, fmt.Errorf("no test key for %s", name)
	}
	return pk, k.vk[name], nil
}

// register sets a circuit up and records it in cuzk.circuits, as cuzk setup does.
func register(t testing.TB, pool *pgxpool.Pool, name string) {
	t.Helper()
	c, pk, vk := keys.setup(t, name)
	var vkBuf, pkBuf bytes.Buffer
	if _, err := vk.WriteTo(&vkBuf); err != nil {
		t.Fatal(err)
	}
	if _, err := pk.WriteTo(&pkBuf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pkBuf.Bytes())
	err := store.RegisterCircuit(context.Background(), pool, &store.Circuit{
		Name: name, Constraints: int64(c.NbConstraints()), PublicInputs: c.NbPublic() - 1, SecretInputs: c.NbSecret(),
		Wires: int64(c.NbWires()), VK: vkBuf.Bytes(), PKDigest: hex.EncodeToString(sum[:]),
		MemEstimateBytes: synth.EstimateBytes(c), MaxInputsBytes: c.MaxInputsBytes(),
	})
	if err != nil {
		t.Fatal(err)
	}
}

type runningWorker struct {
	w      *worker.Worker
	cancel context.CancelFunc
	done   chan error
}

func startWorker(t testing.TB, pool *pgxpool.Pool, mutate func(*worker.Config)) *runningWorker {
	t.Helper()
	return startWorkerWith(t, pool, nil, nil, mutate)
}

// startWorkerWith starts a worker on devices (default: one CPU backend) logging to log
// (default: slog's default).
func startWorkerWith(t testing.TB, pool *pgxpool.Pool, devices []worker.Prover, log *slog.Logger, mutate func(*worker.Config)) *runningWorker {
	t.Helper()
	return startWorkerCatalog(t, pool, worker.NewCatalog(keys.reg.Get, keys.load, log), devices, log, mutate)
}

// startWorkerCatalog is startWorkerWith with the catalog cat.
func startWorkerCatalog(t testing.TB, pool *pgxpool.Pool, cat worker.Catalog, devices []worker.Prover, log *slog.Logger, mutate func(*worker.Config)) *runningWorker {
	t.Helper()
	if devices == nil {
		devices = []worker.Prover{{Backend: prover.NewCPU()}}
	}
	cfg := worker.DefaultConfig()
	cfg.MemBudget = 8 << 30
	cfg.PollInterval = 100 * time.Millisecond
	cfg.ShutdownGrace = 10 * time.Second
	if mutate != nil {
		mutate(&cfg)
	}
	w, err := worker.New(pool, cfg, cat, devices, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rw := &runningWorker{w: w, cancel: cancel, done: make(chan error, 1)}
	go func() { rw.done <- w.Run(ctx) }()
	t.Cleanup(func() { rw.stop(t) })
	return rw
}

func (rw *runningWorker) stop(t testing.TB) {
	if rw.cancel == nil {
		return
	}
	rw.cancel()
	rw.cancel = nil
	select {
	case err := <-rw.done:
		if err != nil {
			t.Errorf("worker stopped with error: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("worker did not stop within 60s")
	}
}

// psql runs SQL through the psql client: the orchestrator's side has no Go.
var psql = pgtest.Psql

func waitState(t testing.TB, pool *pgxpool.Pool, requestID string, want ...string) (state, lastErr string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var le *string
		err := pool.QueryRow(context.Background(),
			"SELECT state, last_error FROM cuzk.proof_status WHERE request_id = $1", requestID).Scan(&state, &le)
		if err != nil {
			t.Fatalf("status of %s: %v", requestID, err)
		}
		if le != nil {
			lastErr = *le
		}
		for _, w := range want {
			if state == w {
				return state, lastErr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("request %s still %s (last error %q), want %v", requestID, state, lastErr, want)
	return
}

// verifyStored checks the stored bytes with gnark alone: vk from cuzk.circuits, proof
// and public witness from cuzk.proofs.
func verifyStored(t testing.TB, pool *pgxpool.Pool, requestID string) {
	t.Helper()
	var proofB, pubB, vkB []byte
	err := pool.QueryRow(context.Background(), `
		SELECT p.proof, p.public_witness, c.vk FROM cuzk.proofs p JOIN cuzk.circuits c ON c.name = p.circuit
		 WHERE p.request_id = $1`, requestID).Scan(&proofB, &pubB, &vkB)
	if err != nil {
		t.Fatalf("load proof of %s: %v", requestID, err)
	}
	proof := groth16.NewProof(ecc.BLS12_381)
	if _, err := proof.ReadFrom(bytes.NewReader(proofB)); err != nil {
		t.Fatalf("decode proof: %v", err)
	}
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(bytes.NewReader(vkB)); err != nil {
		t.Fatalf("decode vk: %v", err)
	}
	pw, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.UnmarshalBinary(pubB); err != nil {
		t.Fatalf("decode public witness: %v", err)
	}
	if err := groth16.Verify(proof, vk, pw); err != nil {
		t.Fatalf("stored proof of %s does not verify: %v", requestID, err)
	}
}

func TestBuiltinCircuitsEndToEndViaPsql(t *testing.T) {
	db := pgtest.New(t)
	circuits := []string{"synthetic-k8", "merkle-poseidon2-d4-c2", "sha256-preimage-b32"}
	for _, name := range circuits {
		register(t, db.Pool, name)
	}
	startWorker(t, db.Pool, nil)
	for i, name := range circuits {
		inputs, err := synth.Inputs(name, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		rid := "e2e-" + name
		psql(t, db.URL, fmt.Sprintf(
			"INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('%s', '%s', $json$%s$json$);", rid, name, inputs))
	}
	for _, name := range circuits {
		rid := "e2e-" + name
		if st, le := waitState(t, db.Pool, rid, "succeeded", "failed"); st != "succeeded" {
			t.Fatalf("%s: %s: %s", rid, st, le)
		}
		verifyStored(t, db.Pool, rid)
		checkAttemptTimings(t, db.Pool, rid)
		var scrubbed bool
		if err := db.Pool.QueryRow(context.Background(),
			"SELECT inputs IS NULL AND witness IS NULL AND inputs_scrubbed_at IS NOT NULL FROM cuzk.proof_requests WHERE request_id = $1", rid).Scan(&scrubbed); err != nil {
			t.Fatal(err)
		}
		if !scrubbed {
			t.Errorf("%s: private inputs were not scrubbed after success", rid)
		}
	}
}

// checkAttemptTimings asserts the succeeded attempt has every phase it went through,
// and that total covers the phases run in sequence.
func checkAttemptTimings(t testing.TB, pool *pgxpool.Pool, rid string) {
	t.Helper()
	var n int
	var queue, batchWait, memWait, srs, synthMs, proveWait, prove, verify, persist, total *float64
	var backend, worker *string
	var synthStarted, proveStarted, finished *time.Time
	err := pool.QueryRow(context.Background(), `
		SELECT count(*) OVER (), queue_ms, batch_wait_ms, mem_wait_ms, srs_ms, synth_ms, prove_wait_ms, prove_ms,
		       verify_ms, persist_ms, total_ms, backend, worker, synth_started_at, prove_started_at, finished_at
		  FROM cuzk.proof_attempts WHERE request_id = $1 AND outcome = 'succeeded'`, rid).
		Scan(&n, &queue, &batchWait, &memWait, &srs, &synthMs, &proveWait, &prove, &verify, &persist, &total,
			&backend, &worker, &synthStarted, &proveStarted, &finished)
	if err != nil {
		t.Fatalf("%s: succeeded attempt: %v", rid, err)
	}
	if n != 1 {
		t.Fatalf("%s: %d succeeded attempts, want 1", rid, n)
	}
	phases := map[string]*float64{"queue": queue, "batch_wait": batchWait, "mem_wait": memWait, "srs": srs,
		"synth": synthMs, "prove_wait": proveWait, "prove": prove, "verify": verify, "persist": persist, "total": total}
	sum := 0.0
	for name, v := range phases {
		if v == nil {
			t.Errorf("%s: %s_ms is NULL on a succeeded attempt", rid, name)
			continue
		}
		if *v < 0 {
			t.Errorf("%s: %s_ms = %f < 0", rid, name, *v)
		}
		if name != "total" {
			sum += *v
		}
	}
	if total != nil && *total+0.5 < sum { // 0.5 ms: clock reads between phases
		t.Errorf("%s: total_ms %.3f < sum of sequential phases %.3f", rid, *total, sum)
	}
	if backend == nil || *backend != "cpu" || worker == nil || *worker == "" || synthStarted == nil || proveStarted == nil || finished == nil {
		t.Errorf("%s: attempt identity/timestamps missing", rid)
	}
	var build, hash, cfgBackend, cfgCPU *string
	if err := pool.QueryRow(context.Background(), `
		SELECT build, config_hash, config->>'backend', config->>'cpu' FROM cuzk.proof_attempts
		 WHERE request_id = $1 AND outcome = 'succeeded'`, rid).Scan(&build, &hash, &cfgBackend, &cfgCPU); err != nil {
		t.Fatalf("%s: attempt origin: %v", rid, err)
	}
	if build == nil || *build == "" || hash == nil || len(*hash) != 12 || cfgBackend == nil || *cfgBackend != "cpu" {
		t.Errorf("%s: attempt origin incomplete: build=%v config_hash=%v config.backend=%v", rid, build, hash, cfgBackend)
	}
	if cfgCPU == nil || *cfgCPU != hostinfo.CPUModel() {
		t.Errorf("%s: config.cpu = %v, want this host's processor %q", rid, cfgCPU, hostinfo.CPUModel())
	}
}
