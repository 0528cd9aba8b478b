package worker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

const partitionCircuit = "synthetic-k8"

// partitionInputs is the inputs array of n partitions of partitionCircuit, with
// partition bad (if 0 <= bad < n) made unsatisfiable.
func partitionInputs(t *testing.T, n, bad int) string {
	t.Helper()
	b, err := synth.PartitionedInputs(partitionCircuit, 1, n)
	if err != nil {
		t.Fatal(err)
	}
	if bad < 0 {
		return string(b)
	}
	var parts []map[string]any
	if err := json.Unmarshal(b, &parts); err != nil {
		t.Fatal(err)
	}
	other, err := synth.Inputs(partitionCircuit, 99)
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := json.Unmarshal(other, &o); err != nil {
		t.Fatal(err)
	}
	// The public output of another seed: partition bad's constraints cannot hold.
	parts[bad]["Out"] = o["Out"]
	if b, err = json.Marshal(parts); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// verifyPartitions checks the stored proofs row of a request of n partitions with gnark
// alone: each element of proofs and public_witnesses verifies with the circuit's vk,
// and proof and public_witness are the same encodings, each preceded by its length.
func verifyPartitions(t *testing.T, pool *pgxpool.Pool, rid string, n int) {
	t.Helper()
	var proofs, publics [][]byte
	var cat, catPub, vkB []byte
	var parts int
	err := pool.QueryRow(context.Background(), `
		SELECT p.partitions, p.proofs, p.public_witnesses, p.proof, p.public_witness, c.vk
		  FROM cuzk.proofs p JOIN cuzk.circuits c ON c.name = p.circuit WHERE p.request_id = $1`, rid).
		Scan(&parts, &proofs, &publics, &cat, &catPub, &vkB)
	if err != nil {
		t.Fatalf("load proofs of %s: %v", rid, err)
	}
	if parts != n || len(proofs) != n || len(publics) != n {
		t.Fatalf("%s: partitions %d, %d proofs, %d public witnesses; want %d", rid, parts, len(proofs), len(publics), n)
	}
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(bytes.NewReader(vkB)); err != nil {
		t.Fatalf("decode vk: %v", err)
	}
	for i := range n {
		proof := groth16.NewProof(ecc.BLS12_381)
		if _, err := proof.ReadFrom(bytes.NewReader(proofs[i])); err != nil {
			t.Fatalf("%s: decode proof %d: %v", rid, i, err)
		}
		pw, _ := witness.New(ecc.BLS12_381.ScalarField())
		if err := pw.UnmarshalBinary(publics[i]); err != nil {
			t.Fatalf("%s: decode public witness %d: %v", rid, i, err)
		}
		if err := groth16.Verify(proof, vk, pw); err != nil {
			t.Errorf("%s: partition %d does not verify: %v", rid, i, err)
		}
	}
	for name, c := range map[string]struct {
		cat   []byte
		parts [][]byte
	}{"proof": {cat, proofs}, "public_witness": {catPub, publics}} {
		rest := c.cat
		for i, want := range c.parts {
			if len(rest) < 4 || int(binary.BigEndian.Uint32(rest)) != len(want) || !bytes.Equal(rest[4:4+len(want)], want) {
				t.Fatalf("%s: %s: element %d is not length-prefixed element %d of the array", rid, name, i, i)
			}
			rest = rest[4+len(want):]
		}
		if len(rest) != 0 {
			t.Errorf("%s: %s: %d bytes after the last element", rid, name, len(rest))
		}
	}
}

// partitionRows are the partitions that attempt of rid worked on, by outcome.
func partitionRows(t *testing.T, pool *pgxpool.Pool, rid string, attempt int) map[string][]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT outcome, partition FROM cuzk.partition_attempts
	                                               WHERE request_id = $1 AND attempt = $2 ORDER BY partition`, rid, attempt)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]int{}
	for rows.Next() {
		var o string
		var p int
		if err := rows.Scan(&o, &p); err != nil {
			t.Fatal(err)
		}
		out[o] = append(out[o], p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPartitionedRequestThroughSQL(t *testing.T) {
	db := pgtest.New(t)
	register(t, db.Pool, partitionCircuit)
	startWorker(t, db.Pool, nil)
	one, err := synth.Inputs(partitionCircuit, 7)
	if err != nil {
		t.Fatal(err)
	}
	psql(t, db.URL, fmt.Sprintf(`SELECT cuzk.submit_proof(request_id => 'c2', circuit => '%[1]s', inputs => $j$%[2]s$j$::jsonb);
		SELECT cuzk.submit_proof(request_id => 'single', circuit => '%[1]s', inputs => $j$%[3]s$j$::jsonb);`,
		partitionCircuit, partitionInputs(t, 3, -1), one))
	for _, rid := range []string{"c2", "single"} {
		if st, le := waitState(t, db.Pool, rid, "succeeded", "failed"); st != "succeeded" {
			t.Fatalf("%s: %s: %s", rid, st, le)
		}
	}
	verifyPartitions(t, db.Pool, "c2", 3)
	// A single proof is stored as it always was: proof and public_witness alone.
	verifyStored(t, db.Pool, "single")
	if got := scalarString(t, db.Pool, `SELECT format('%s %s %s %s', r.partitions, p.partitions, p.proofs IS NULL, p.public_witnesses IS NULL)
	                                     FROM cuzk.proofs p JOIN cuzk.proof_requests r USING (request_id) WHERE request_id = 'single'`); got != "1 1 t t" {
		t.Errorf("single proof: partitions, partitions, proofs IS NULL, public_witnesses IS NULL = %s, want 1 1 t t", got)
	}
	if got := scalar(t, db.Pool, `SELECT count(*) FROM cuzk.partition_attempts WHERE request_id = 'single'`); got != 0 {
		t.Errorf("single proof: %d partition rows, want none", got)
	}
	if got := fmt.Sprint(partitionRows(t, db.Pool, "c2", 1)); got != "map[succeeded:[0 1 2]]" {
		t.Errorf("partition rows of attempt 1: %s, want partitions 0 to 2 succeeded", got)
	}
	// The attempt's phase columns are the sums of its partitions'.
	var synthSum, synth, proveSum, prove float64
	var done, parts int
	if err := db.Pool.QueryRow(context.Background(), `
		SELECT (SELECT sum(synth_ms) FROM cuzk.partition_attempts WHERE request_id = 'c2'), a.synth_ms,
		       (SELECT sum(prove_ms) FROM cuzk.partition_attempts WHERE request_id = 'c2'), a.prove_ms,
		       (SELECT count(*) FROM cuzk.partition_proofs WHERE request_id = 'c2'), r.partitions
		  FROM cuzk.proof_attempts a JOIN cuzk.proof_requests r USING (request_id) WHERE a.request_id = 'c2'`).
		Scan(&synthSum, &synth, &proveSum, &prove, &done, &parts); err != nil {
		t.Fatal(err)
	}
	if d := synthSum - synth; d > 0.001 || d < -0.001 {
		t.Errorf("attempt synth_ms %.3f, partitions' sum %.3f", synth, synthSum)
	}
	if d := proveSum - prove; d > 0.001 || d < -0.001 {
		t.Errorf("attempt prove_ms %.3f, partitions' sum %.3f", prove, proveSum)
	}
	if done != 3 || parts != 3 {
		t.Errorf("%d of %d partitions proven, want 3 of 3", done, parts)
	}
	// Each partition's phases lie on one time line: entered the pipeline, synthesized,
	// then proven, all before its row was written.
	if got := scalar(t, db.Pool, `SELECT count(*) FROM cuzk.partition_attempts
	                                WHERE request_id = 'c2' AND started_at <= synth_started_at
	                                  AND synth_started_at + synth_ms * interval '1 ms' <= prove_started_at
	                                  AND prove_started_at + prove_ms * interval '1 ms' <= finished_at`); got != 3 {
		t.Errorf("%d of 3 partition rows have started_at <= synth_started_at, synthesis ending by prove_started_at and proving by finished_at", got)
	}
}

func TestUnsatisfiablePartitionFailsNamingIt(t *testing.T) {
	db := pgtest.New(t)
	register(t, db.Pool, partitionCircuit)
	startWorker(t, db.Pool, nil)
	psql(t, db.URL, fmt.Sprintf("INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('bad1', '%s', $j$%s$j$);",
		partitionCircuit, partitionInputs(t, 3, 1)))
	st, le := waitState(t, db.Pool, "bad1", "succeeded", "failed")
	// The constraint solves no wire: the partition's proof fails verification, and
	// the check of its witness names the constraint.
	if st != "failed" || !strings.HasPrefix(le, "partition 1 of 3: inputs do not satisfy circuit "+partitionCircuit+": constraint #") {
		t.Fatalf("bad1: %s %q, want failed naming partition 1 of 3 and its unsatisfied constraint", st, le)
	}
	// Partition 2 may have entered the pipeline while partition 1 was being solved: a
	// partition already started finishes, and its proof is stored.
	if got := fmt.Sprint(partitionRows(t, db.Pool, "bad1", 1)); got != "map[failed:[1] succeeded:[0]]" &&
		got != "map[failed:[1] succeeded:[0 2]]" {
		t.Errorf("partition rows: %s, want 0 succeeded, 1 failed, 2 succeeded or never started", got)
	}
	var attempts int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = 'bad1'").Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 {
		t.Errorf("%d attempts of a request with bad input, want 1 (not retried)", attempts)
	}
}

// gatedProve is the CPU backend with one call held: call number at (1-based) either
// fails with a retryable error, or, with hold, waits for its context to end.
type gatedProve struct {
	prover.Backend
	at      int32
	hold    bool
	calls   atomic.Int32
	entered chan struct{}
}

func (g *gatedProve) Prove(ctx context.Context, k prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	if g.calls.Add(1) != g.at {
		return g.Backend.Prove(ctx, k, sols)
	}
	if !g.hold {
		return nil, prover.PhaseTimes{}, errors.New("injected device fault")
	}
	close(g.entered)
	<-ctx.Done()
	return nil, prover.PhaseTimes{}, context.Cause(ctx)
}

// A request that ran out of attempts at the partition of its third proof proves only
// that one when retried. Partitions solved side by side reach the device in any order:
// the third proof fails, whichever partition it is.
func TestRetryProvesOnlyMissingPartitions(t *testing.T) {
	db := pgtest.New(t)
	register(t, db.Pool, partitionCircuit)
	startWorkerWith(t, db.Pool, []worker.Prover{{Backend: &gatedProve{Backend: prover.NewCPU(), at: 3}}}, nil, nil)
	psql(t, db.URL, fmt.Sprintf("SELECT cuzk.submit_proof(request_id => 'r', circuit => '%s', inputs => $j$%s$j$::jsonb, max_attempts => 1);",
		partitionCircuit, partitionInputs(t, 3, -1)))
	st, le := waitState(t, db.Pool, "r", "succeeded", "failed")
	rows := partitionRows(t, db.Pool, "r", 1)
	if st != "failed" || len(rows["failed"]) != 1 || len(rows["succeeded"]) != 2 {
		t.Fatalf("r: %s %q, attempt 1 %v: want failed, two partitions succeeded and the third proof's failed", st, le, rows)
	}
	f := rows["failed"][0]
	if want := fmt.Sprintf("partition %d of 3: ", f); !strings.HasPrefix(le, want) || !strings.Contains(le, "injected device fault") {
		t.Errorf("r: last error %q, want it to begin %q and name the fault", le, want)
	}
	retryPartitioned(t, db, "r", 3, fmt.Sprint(map[string][]int{"succeeded": {f}}))
}

// retryPartitioned retries rid, of n partitions, and checks that it succeeds with
// attempt 2 proving the partitions want says (partitionRows) and no others.
func retryPartitioned(t *testing.T, db *pgtest.DB, rid string, n int, want string) {
	t.Helper()
	psql(t, db.URL, fmt.Sprintf("SELECT cuzk.retry_proof('%s');", rid))
	if st, le := waitState(t, db.Pool, rid, "succeeded", "failed"); st != "succeeded" {
		t.Fatalf("%s after retry: %s: %s", rid, st, le)
	}
	verifyPartitions(t, db.Pool, rid, n)
	if got := fmt.Sprint(partitionRows(t, db.Pool, rid, 2)); got != want {
		t.Errorf("%s: attempt 2 (the retry): %s, want %s", rid, got, want)
	}
}

// Cancelling a request mid-partition keeps its finished partitions; a retry proves the
// rest. Partitions solved side by side reach the device in any order: the second proof
// is held, whichever partition it is.
func TestCancelPartitionedRequest(t *testing.T) {
	db := pgtest.New(t)
	register(t, db.Pool, partitionCircuit)
	gate := &gatedProve{Backend: prover.NewCPU(), at: 2, hold: true, entered: make(chan struct{})}
	rw := startWorkerWith(t, db.Pool, []worker.Prover{{Backend: gate}}, nil, nil)
	psql(t, db.URL, fmt.Sprintf("SELECT cuzk.submit_proof(request_id => 'x', circuit => '%s', inputs => $j$%s$j$::jsonb);",
		partitionCircuit, partitionInputs(t, 3, -1)))
	<-gate.entered // one partition is on the device, the one proven before it stored
	if out := psql(t, db.URL, "SELECT cuzk.cancel_proof('x');"); out != "t" {
		t.Fatalf("cancel_proof: %q", out)
	}
	waitState(t, db.Pool, "x", "cancelled")
	waitAttemptOutcome(t, db.Pool, "x", 1, "cancelled")
	rows := partitionRows(t, db.Pool, "x", 1)
	if len(rows["succeeded"]) != 1 || len(rows["failed"]) != 1 || rows["succeeded"][0] == rows["failed"][0] {
		t.Fatalf("cancelled attempt: %v, want one partition succeeded and the held one failed", rows)
	}
	waitSynthesisReleased(t, rw.w.Budget()) // the cancelled partitions' memory too
	var rest []int
	for i := range 3 {
		if i != rows["succeeded"][0] {
			rest = append(rest, i)
		}
	}
	retryPartitioned(t, db, "x", 3, fmt.Sprint(map[string][]int{"succeeded": rest}))
}

// waitAttemptOutcome waits until attempt of rid is recorded with outcome want.
func waitAttemptOutcome(t *testing.T, pool *pgxpool.Pool, rid string, attempt int, want string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var got string
	for time.Now().Before(deadline) {
		err := pool.QueryRow(context.Background(), "SELECT outcome FROM cuzk.proof_attempts WHERE request_id = $1 AND attempt = $2",
			rid, attempt).Scan(&got)
		switch {
		case errors.Is(err, pgx.ErrNoRows): // not recorded yet
			got = "not recorded"
		case err != nil:
			t.Fatal(err)
		}
		if got == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("attempt %d of %s is %s, want %s", attempt, rid, got, want)
}

func scalarString(t *testing.T, pool *pgxpool.Pool, sql string) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// heldProve is the CPU backend whose first Prove waits until cond holds on the worker's
// budget (or a minute has passed), and records whether it did.
type heldProve struct {
	prover.Backend
	budget atomic.Pointer[worker.Budget]
	cond   func(*worker.Budget) bool
	calls  atomic.Int32
	met    atomic.Bool
}

func (h *heldProve) Prove(ctx context.Context, k prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	if h.calls.Add(1) == 1 {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			if b := h.budget.Load(); b != nil && h.cond(b) {
				h.met.Store(true)
				break
			}
			select {
			case <-ctx.Done():
				return nil, prover.PhaseTimes{}, context.Cause(ctx)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return h.Backend.Prove(ctx, k, sols)
}

// partitionDB is a database with partitionCircuit registered; need is the memory one
// partition's synthesis reserves, held what the worker's budget holds beside it
// (circuit, key).
func partitionDB(t *testing.T) (db *pgtest.DB, need, held int64) {
	t.Helper()
	db = pgtest.New(t)
	register(t, db.Pool, partitionCircuit)
	compiled, _, _ := keys.setup(t, partitionCircuit)
	return db, synth.EstimateBytes(compiled), worker.HeldBytes(compiled, nil)
}

// heldBytesOn is what a worker proving on b holds for partitionCircuit beside its
// syntheses.
func heldBytesOn(t *testing.T, b prover.Backend) int64 {
	t.Helper()
	compiled, _, _ := keys.setup(t, partitionCircuit)
	return worker.HeldBytes(compiled, b)
}

// proveAllPartitions submits rid as n partitions and fails the test unless its first
// attempt proves every one of them.
func proveAllPartitions(t *testing.T, db *pgtest.DB, rid string, n int) {
	t.Helper()
	if st, le := submitPartitions(t, db, rid, n); st != "succeeded" {
		t.Fatalf("%s: %s: %s", rid, st, le)
	}
	verifyPartitions(t, db.Pool, rid, n)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if got, want := fmt.Sprint(partitionRows(t, db.Pool, rid, 1)), fmt.Sprint(map[string][]int{"succeeded": want}); got != want {
		t.Errorf("%s: partition rows %s, want %s", rid, got, want)
	}
}

// submitPartitions submits rid as n partitions of partitionCircuit and waits for it to
// end; it returns its state and last error.
func submitPartitions(t *testing.T, db *pgtest.DB, rid string, n int) (string, string) {
	t.Helper()
	psql(t, db.URL, fmt.Sprintf("SELECT cuzk.submit_proof(request_id => '%s', circuit => '%s', inputs => $j$%s$j$::jsonb);",
		rid, partitionCircuit, partitionInputs(t, n, -1)))
	return waitState(t, db.Pool, rid, "succeeded", "failed")
}

// With a budget for two partitions, the next partition is synthesized while the one
// before it is proven: the first proof is held until partition 1 is synthesized
// (partition 2, which starts only then, waits for the budget), which can only happen
// if the two overlap.
func TestPartitionsOverlapUnderBudgetForTwo(t *testing.T) {
	db, need, _ := partitionDB(t)
	held := &heldProve{Backend: prover.NewCPU(), cond: func(b *worker.Budget) bool {
		synthesis, _ := b.KindBytes(worker.KindSynthesis)
		return synthesis >= 2*need && b.Waiting() > 0
	}}
	fixed := heldBytesOn(t, held)
	rw := startWorkerWith(t, db.Pool, []worker.Prover{{Backend: held}}, nil, func(c *worker.Config) {
		c.MemBudget = fixed + 2*need + need/8 // two partitions and the remainders of proven ones
	})
	held.budget.Store(rw.w.Budget())
	proveAllPartitions(t, db, "two", 3)
	if !held.met.Load() {
		t.Error("partition 1 was never synthesized while partition 0 was proven")
	}
	if _, peak := rw.w.Budget().KindBytes(worker.KindSynthesis); peak < 2*need || peak > rw.w.Budget().Total()-fixed {
		t.Errorf("synthesis peak %d bytes, want two partitions' %d and at most the budget's room %d", peak, 2*need, rw.w.Budget().Total()-fixed)
	}
	// In the rows: partition 1 entered the pipeline before partition 0 was stored.
	if got := scalarString(t, db.Pool, `SELECT ((SELECT started_at FROM cuzk.partition_attempts WHERE request_id = 'two' AND partition = 1)
	                                         < (SELECT finished_at FROM cuzk.partition_attempts WHERE request_id = 'two' AND partition = 0))::text`); got != "true" {
		t.Errorf("partition 1 started before partition 0 was stored: %s, want true", got)
	}
}

// A budget that holds exactly one partition still proves the request, one partition
// at a time: never two reservations at once, so never a synthesis beside a proof.
func TestPartitionsBudgetForOneRunsOneAtATime(t *testing.T) {
	db, need, held := partitionDB(t)
	rw := startWorker(t, db.Pool, func(c *worker.Config) { c.MemBudget = held + need })
	proveAllPartitions(t, db, "one", 3)
	if _, peak := rw.w.Budget().KindBytes(worker.KindSynthesis); peak != need {
		t.Errorf("synthesis peak %d bytes, want one partition's %d", peak, need)
	}
	if peak := rw.w.Budget().Peak(); peak.Bytes != held+need {
		t.Errorf("budget peak %d bytes, want the circuit, its key and one partition: %d", peak.Bytes, held+need)
	}
}

// A budget smaller than one partition (with its circuit and key) fails the request at
// once, naming the bytes one partition needs and the budget; nothing is reserved and
// it is not retried.
func TestPartitionLargerThanBudgetFailsAtOnce(t *testing.T) {
	db, need, held := partitionDB(t)
	rw := startWorker(t, db.Pool, func(c *worker.Config) { c.MemBudget = held + need - 1 })
	st, le := submitPartitions(t, db, "big", 3)
	want := fmt.Sprintf("partition 0 of 3: synthesis %d, compiled circuit ", need)
	want2 := fmt.Sprintf("bytes: needs %d bytes of memory, more than the whole budget of %d bytes", held+need, held+need-1)
	if st != "failed" || !strings.HasPrefix(le, want) || !strings.Contains(le, want2) {
		t.Fatalf("big: %s %q, want failed with %q ... %q", st, le, want, want2)
	}
	if got := fmt.Sprint(partitionRows(t, db.Pool, "big", 1)); got != "map[failed:[0]]" {
		t.Errorf("partition rows: %s, want partition 0 failed and no other started", got)
	}
	if n := scalar(t, db.Pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = 'big'`); n != 1 {
		t.Errorf("%d attempts, want 1 (not retried)", n)
	}
	if _, peak := rw.w.Budget().KindBytes(worker.KindSynthesis); peak != 0 {
		t.Errorf("synthesis peak %d bytes, want none ever reserved", peak)
	}
}

// A partition enters the pipeline once the one before it is being
// synthesized, not once it is queued for a prover: with the first proof held and room
// for one solved batch in the provers' queue, partitions 0 to 3 hold reservations at
// once (one proving, one queued, one waiting for the queue, one synthesized); one after
// the other, partition 3 would wait for the queue to move.
func TestPartitionsSideBySide(t *testing.T) {
	db, need, _ := partitionDB(t)
	held := &heldProve{Backend: prover.NewCPU(), cond: func(b *worker.Budget) bool {
		synthesis, _ := b.KindBytes(worker.KindSynthesis)
		return synthesis >= 4*need
	}}
	rw := startWorkerWith(t, db.Pool, []worker.Prover{{Backend: held}}, nil, func(c *worker.Config) {
		c.QueueDepth, c.SynthConcurrency = 1, 2
	})
	held.budget.Store(rw.w.Budget())
	proveAllPartitions(t, db, "side", 5)
	if !held.met.Load() {
		t.Error("partitions 0 to 3 never held reservations together while the first proof was held")
	}
}
