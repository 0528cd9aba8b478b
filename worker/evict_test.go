package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

// smallDevice is the CPU backend with a device's limits injected: room for a number of
// resident keys (LoadKey fails with prover.ErrOutOfMemory past it), and device resets
// on demand (Prove or LoadKey fails with prover.ErrDeviceReset, and every key loaded
// before is lost). It tests the catalog's policy on these errors; the CUDA backend's
// own out-of-memory and reset paths are tested on the GPU host.
type smallDevice struct {
	prover.Backend
	room int
	name string // Name, when set (two devices of one worker need two names)

	mu          sync.Mutex
	live        map[*smallKey]bool // resident keys: not closed, not lost to a reset
	loads       int                // keys made resident
	outOfMemory int                // LoadKey calls refused for want of room
	resetProve  bool               // the next Prove resets the device
	resetLoad   bool               // the next LoadKey resets the device
	loseProve   bool               // the next Prove loses the device: it and every later call fail
	lost        bool
	afterLoad   func() // run once after the next key is made resident
	precomputed int64  // what its keys report as precomputed copies
	streamed    int64  // what its keys report as streamed bases
	hostFree    bool   // its keys need no host copy once loaded, as the CUDA backend's
}

type smallKey struct {
	prover.Key
	circuit string
	d       *smallDevice
}

func newSmallDevice(room int) *smallDevice {
	return &smallDevice{Backend: prover.NewCPU(), room: room, live: map[*smallKey]bool{}}
}

func (d *smallDevice) Name() string {
	if d.name != "" {
		return d.name
	}
	return d.Backend.Name()
}

func (d *smallDevice) LoadKey(ctx context.Context, pk *prover.ProvingKey) (prover.Key, error) {
	k, err := d.loadKey(ctx, pk)
	d.mu.Lock()
	after := d.afterLoad
	if err == nil {
		d.afterLoad = nil
	}
	d.mu.Unlock()
	if err == nil && after != nil {
		after()
	}
	return k, err
}

func (d *smallDevice) loadKey(ctx context.Context, pk *prover.ProvingKey) (prover.Key, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost {
		return nil, fmt.Errorf("load %s: %w", pk.Circuit, prover.ErrDeviceLost)
	}
	if d.resetLoad {
		d.resetLoad = false
		clear(d.live)
		return nil, fmt.Errorf("load %s: %w", pk.Circuit, prover.ErrDeviceReset)
	}
	if len(d.live) >= d.room {
		d.outOfMemory++
		return nil, fmt.Errorf("load %s with %d keys resident: %w", pk.Circuit, len(d.live), prover.ErrOutOfMemory)
	}
	k, err := d.Backend.LoadKey(ctx, pk)
	if err != nil {
		return nil, err
	}
	sk := &smallKey{Key: k, circuit: pk.Circuit, d: d}
	d.live[sk] = true
	d.loads++
	if d.hostFree {
		return hostFreeKey{sk}, nil
	}
	return sk, nil
}

// hostFreeKey is a smallKey that, as a CUDA key, takes its proving key's Shell: it
// proves with the bases it holds itself (the CPU key made from the full key).
type hostFreeKey struct{ *smallKey }

func (k hostFreeKey) UseShell(shell *prover.ProvingKey) {
	if len(shell.KZ) != 0 || len(shell.PK.G1.A) != 0 {
		panic("UseShell given a key with bases")
	}
}

func (d *smallDevice) Prove(ctx context.Context, k prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	sk, ok := k.(*smallKey)
	if !ok {
		sk = k.(hostFreeKey).smallKey
	}
	d.mu.Lock()
	live := d.live[sk]
	reset := d.resetProve
	if reset {
		d.resetProve = false
		clear(d.live)
	}
	if d.loseProve {
		d.loseProve, d.lost = false, true
	}
	lost := d.lost
	d.mu.Unlock()
	switch {
	case lost:
		return nil, prover.PhaseTimes{}, fmt.Errorf("prove %s: %w", sk.circuit, prover.ErrDeviceLost)
	case reset:
		return nil, prover.PhaseTimes{}, fmt.Errorf("prove %s: %w", sk.circuit, prover.ErrDeviceReset)
	case !live:
		return nil, prover.PhaseTimes{}, fmt.Errorf("prove %s: key closed or lost to a device reset", sk.circuit)
	}
	return d.Backend.Prove(ctx, sk.Key, sols)
}

// PrecomputedBytes implements prover.PrecomputedKey, as the CUDA backend's keys do.
func (k *smallKey) PrecomputedBytes() int64 { return k.d.precomputed }

// StreamedBytes implements prover.StreamedKey, as the CUDA backend's keys do.
func (k *smallKey) StreamedBytes() int64 { return k.d.streamed }

func (k *smallKey) Close() error {
	k.d.mu.Lock()
	delete(k.d.live, k)
	k.d.mu.Unlock()
	return k.Key.Close()
}

func (d *smallDevice) counts() (loads, outOfMemory, resident int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loads, d.outOfMemory, len(d.live)
}

// keyState is the state of circuit's key on device.
func keyState(cat worker.KeyStates, circuit, device string) worker.KeyState {
	for _, s := range cat.KeyStates() {
		if s.Circuit == circuit && s.Device == device {
			return s
		}
	}
	return worker.KeyState{}
}

// With room for one key on the device, proving A, then B, then A again evicts A for B
// and B for A: three loads, two of them after an eviction, and every proof verifies.
func TestLeastRecentlyUsedKeyEvictedWhenDeviceIsFull(t *testing.T) {
	db := pgtest.New(t)
	const a, b = "synthetic-k6", "synthetic-k7"
	register(t, db.Pool, a)
	register(t, db.Pool, b)
	dev := newSmallDevice(1)
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	cat := worker.NewCatalog(keys.reg.Get, keys.load, log)
	startWorkerCatalog(t, db.Pool, cat, []worker.Prover{{Backend: dev}}, log, nil)

	for _, step := range []struct{ prefix, circuit string }{{"a1", a}, {"b1", b}, {"a2", a}} {
		insertRequests(t, db.Pool, step.prefix, step.circuit, 1, 1)
		waitSucceeded(t, db.Pool, step.prefix, 1)
		verifyStored(t, db.Pool, step.prefix+"-1")
	}
	if loads, oom, resident := dev.counts(); loads != 3 || oom != 2 || resident != 1 {
		t.Errorf("%d loads, %d refused for memory, %d resident; want 3, 2 and 1", loads, oom, resident)
	}
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyResident {
		t.Errorf("%s after its reload: %+v, want resident", a, st)
	}
	if st := keyState(cat, b, "cpu"); st.State != worker.KeyEvicted || !strings.Contains(st.Err, "out of memory") {
		t.Errorf("%s after A's reload: %+v, want evicted for memory", b, st)
	}
	// The reload is the srs phase of the request that needed it.
	var srs float64
	if err := db.Pool.QueryRow(context.Background(),
		"SELECT srs_ms FROM cuzk.proof_attempts WHERE request_id = 'a2-1' AND outcome = 'succeeded'").Scan(&srs); err != nil {
		t.Fatal(err)
	}
	if srs <= 0 {
		t.Errorf("a2-1: srs_ms %v, want the time its key's reload took", srs)
	}
	recs := buf.String()
	for _, c := range []string{a, b} {
		if !strings.Contains(recs, `"msg":"proving key evicted","circuit":"`+c+`","device":"cpu"`) {
			t.Errorf("no line logging %s's eviction; logged:\n%s", c, recs)
		}
	}
}

// A key in use (handed out by Key, not released) is never evicted: a load that needs
// its room fails, and the held key still proves. Once released, it makes room.
func TestKeyInUseIsNotEvicted(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	compiled, _, _ := keys.setup(t, a)
	keys.setup(t, b)
	ctx := context.Background()
	dev := newSmallDevice(1)
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)

	held, _, err := cat.Key(ctx, a, dev)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cat.Key(ctx, b, dev)
	if !errors.Is(err, prover.ErrOutOfMemory) || !strings.Contains(err.Error(), "0 keys evicted") {
		t.Fatalf("loading %s while %s is in use: %v, want out of memory with no key evicted", b, a, err)
	}
	if st := keyState(cat, b, "cpu"); st.State != worker.KeyFailed {
		t.Errorf("%s after its failed load: %+v, want failed", b, st)
	}

	proveWith(t, dev, compiled, held, 5)

	held.Release()
	kb, _, err := cat.Key(ctx, b, dev)
	if err != nil {
		t.Fatalf("loading %s once %s was released: %v", b, a, err)
	}
	kb.Release()
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyEvicted {
		t.Errorf("%s after %s took its room: %+v, want evicted", a, b, st)
	}
}

// A device reset reported by Prove drops every key of that device: the attempt fails
// as retryable, and the retry loads the key again and succeeds.
func TestDeviceResetReloadsKeysForTheRetry(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	dev := newSmallDevice(4)
	dev.resetProve = true
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	cat := worker.NewCatalog(keys.reg.Get, keys.load, log)
	startWorkerCatalog(t, db.Pool, cat, []worker.Prover{{Backend: dev}}, log,
		func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })

	insertRequests(t, db.Pool, "reset", circuit, 1, 1)
	waitSucceeded(t, db.Pool, "reset", 1)
	verifyStored(t, db.Pool, "reset-1")
	var outcome, msg string
	if err := db.Pool.QueryRow(context.Background(),
		"SELECT outcome, error FROM cuzk.proof_attempts WHERE request_id = 'reset-1' AND attempt = 1").Scan(&outcome, &msg); err != nil {
		t.Fatal(err)
	}
	if outcome != "retryable" || !strings.Contains(msg, prover.ErrDeviceReset.Error()) {
		t.Errorf("attempt 1: %s %q, want retryable naming the reset", outcome, msg)
	}
	if loads, _, _ := dev.counts(); loads != 2 {
		t.Errorf("%d key loads, want 2 (the retry reloads the key lost to the reset)", loads)
	}
	if n := strings.Count(buf.String(), `"msg":"device reset, its resident proving keys dropped","device":"cpu","keys":1`); n != 1 {
		t.Errorf("%d lines logging the reset with its one key, want 1; logged:\n%s", n, buf.String())
	}
}

// A reset reported by LoadKey also drops the device's other keys, and that load fails.
func TestDeviceResetDuringLoadDropsTheOtherKeys(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	ctx := context.Background()
	dev, cat := twoKeys(t, a, b, 4)
	ka, _, err := cat.Key(ctx, a, dev)
	if err != nil {
		t.Fatal(err)
	}
	ka.Release()

	dev.mu.Lock()
	dev.resetLoad = true
	dev.mu.Unlock()
	if _, _, err := cat.Key(ctx, b, dev); !errors.Is(err, prover.ErrDeviceReset) {
		t.Fatalf("load of %s: %v, want the device reset", b, err)
	}
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyEvicted || !strings.Contains(st.Err, "device reset") {
		t.Errorf("%s after the reset: %+v, want evicted by the reset", a, st)
	}
	ka, loaded, err := cat.Key(ctx, a, dev)
	if err != nil {
		t.Fatal(err)
	}
	ka.Release()
	if loads, _, resident := dev.counts(); loads != 2 || resident != 1 || loaded == 0 {
		t.Errorf("%d loads, %d resident, reload took %v; want %s loaded again", loads, resident, loaded, a)
	}
}

// Of the keys not in use, the one used least recently is evicted first.
func TestEvictionTakesTheLeastRecentlyUsedKey(t *testing.T) {
	const a, b, c = "synthetic-k6", "synthetic-k7", "synthetic-k8"
	for _, n := range []string{a, b, c} {
		keys.setup(t, n)
	}
	ctx := context.Background()
	dev := newSmallDevice(2)
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)
	for _, n := range []string{a, b, a, c} { // a is used after b: b is the older
		k, _, err := cat.Key(ctx, n, dev)
		if err != nil {
			t.Fatalf("key %s: %v", n, err)
		}
		k.Release()
	}
	for n, want := range map[string]string{a: worker.KeyResident, b: worker.KeyEvicted, c: worker.KeyResident} {
		if st := keyState(cat, n, "cpu"); st.State != want {
			t.Errorf("%s: %+v, want %s", n, st, want)
		}
	}
}

// A key whose load ends after a reset of its device began is not trusted: it is
// loaded again.
func TestKeyLoadedAcrossAResetIsLoadedAgain(t *testing.T) {
	const a = "synthetic-k6"
	keys.setup(t, a)
	ctx := context.Background()
	dev := newSmallDevice(4)
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)
	dev.afterLoad = func() {
		// A reset reported by a Prove on the same device, at the end of the load.
		dev.mu.Lock()
		clear(dev.live)
		dev.mu.Unlock()
		cat.DeviceReset(dev, prover.ErrDeviceReset)
	}
	k, _, err := cat.Key(ctx, a, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	if loads, _, resident := dev.counts(); loads != 2 || resident != 1 {
		t.Errorf("%d loads, %d resident; want the key lost to the reset loaded again", loads, resident)
	}
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyResident {
		t.Errorf("%s: %+v, want resident", a, st)
	}
}

// TestPreloadEvictsNothing: a key load made for a preload that finds the device full
// fails instead of evicting a resident key (requests may be about to use it).
func TestPreloadEvictsNothing(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	ctx := context.Background()
	dev := newSmallDevice(1)
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)
	ka, _, err := cat.Key(ctx, a, dev)
	if err != nil {
		t.Fatal(err)
	}
	ka.Release()
	_, _, err = cat.Key(worker.WithoutEviction(ctx), b, dev)
	if !errors.Is(err, prover.ErrOutOfMemory) || !strings.Contains(err.Error(), "a preload evicts no key") {
		t.Fatalf("preloading %s on a full device: %v, want out of memory without eviction", b, err)
	}
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyResident {
		t.Fatalf("%s after a preload found the device full: %+v, want resident", a, st)
	}
	kb, _, err := cat.Key(ctx, b, dev) // a request's load may evict
	if err != nil {
		t.Fatalf("loading %s for a request: %v", b, err)
	}
	kb.Release()
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyEvicted {
		t.Fatalf("%s after a request's load took its room: %+v, want evicted", a, st)
	}
}

// TestDeviceLostStopsTheWorker: when the only device is lost (a fault a reset did not
// clear), the worker fails that batch's attempt as retryable, hands everything else
// back without using an attempt, and Run returns the error (the process exits and its
// supervisor starts a new one); a new worker then proves every request.
func TestDeviceLostStopsTheWorker(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	dev := newSmallDevice(4)
	dev.loseProve = true
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)
	insertRequests(t, db.Pool, "lost", circuit, 4, 1)
	rw := startWorkerCatalog(t, db.Pool, cat, []worker.Prover{{Backend: dev}}, nil,
		func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })
	select {
	case err := <-rw.done:
		if !errors.Is(err, prover.ErrDeviceLost) {
			t.Fatalf("worker stopped with %v, want prover.ErrDeviceLost", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not stop within 60 s after losing its only device")
	}
	rw.cancel()
	rw.cancel = nil

	var retryable, other int
	if err := db.Pool.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE outcome = 'retryable' AND error LIKE '%device lost%'),
		       count(*) FILTER (WHERE outcome NOT IN ('retryable', 'interrupted'))
		  FROM cuzk.proof_attempts WHERE request_id LIKE 'lost-%'`).Scan(&retryable, &other); err != nil {
		t.Fatal(err)
	}
	if retryable != 1 || other != 0 {
		t.Errorf("%d retryable attempts naming the lost device and %d others that used an attempt, want 1 and 0",
			retryable, other)
	}
	startWorkerCatalog(t, db.Pool, worker.NewCatalog(keys.reg.Get, keys.load, nil), nil, nil,
		func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })
	waitSucceeded(t, db.Pool, "lost", 4)
	for i := 1; i <= 4; i++ {
		verifyStored(t, db.Pool, fmt.Sprintf("lost-%d", i))
	}
}

// TestLostDeviceLeavesTheOthersProving: with two devices, losing one stops only its
// prover: the batch it held is retried and every request is proven, once, on the
// other, and the worker keeps running.
func TestLostDeviceLeavesTheOthersProving(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k6"
	register(t, db.Pool, circuit)
	bad, good := newSmallDevice(4), newSmallDevice(4)
	bad.name, good.name = "gpu-a", "gpu-b"
	bad.loseProve = true
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)
	rw := startWorkerCatalog(t, db.Pool, cat, []worker.Prover{{Backend: bad}, {Backend: good}}, nil,
		func(c *worker.Config) { c.RetryBackoff = 100 * time.Millisecond })
	insertRequests(t, db.Pool, "twodev", circuit, 8, 1)
	waitSucceeded(t, db.Pool, "twodev", 8)
	for i := 1; i <= 8; i++ {
		verifyStored(t, db.Pool, fmt.Sprintf("twodev-%d", i))
	}
	select {
	case err := <-rw.done:
		t.Fatalf("the worker stopped with one device left: %v", err)
	default:
	}
	var lostAttempts, onGood, proofs int
	if err := db.Pool.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE error LIKE '%device lost%'),
		       count(*) FILTER (WHERE outcome = 'succeeded' AND backend = 'gpu-b'),
		       (SELECT count(*) FROM cuzk.proofs WHERE request_id LIKE 'twodev-%')
		  FROM cuzk.proof_attempts WHERE request_id LIKE 'twodev-%'`).Scan(&lostAttempts, &onGood, &proofs); err != nil {
		t.Fatal(err)
	}
	if lostAttempts < 1 || onGood != 8 || proofs != 8 {
		t.Errorf("%d attempts failed on the lost device, %d succeeded, %d proofs; want at least 1, 8 and 8",
			lostAttempts, onGood, proofs)
	}
}

// A resident key's entry tells its device memory and its precomputed copies (the
// dashboard's "on the device"); once evicted it tells none.
func TestKeyStateDeviceMemory(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	ctx := context.Background()
	dev, cat := twoKeys(t, a, b, 1)
	dev.precomputed = 4096
	held, _, err := cat.Key(ctx, a, dev)
	if err != nil {
		t.Fatal(err)
	}
	st := keyState(cat, a, "cpu")
	if st.State != worker.KeyResident || st.Resident <= 0 || st.Resident != held.Key.Bytes() || st.Precomputed != 4096 {
		t.Errorf("%s resident: %+v, want its %d bytes with 4096 precomputed", a, st, held.Key.Bytes())
	}
	held.Release()
	other, _, err := cat.Key(ctx, b, dev) // evicts a: room for one key
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyEvicted || st.Resident != 0 || st.Precomputed != 0 {
		t.Errorf("%s evicted: %+v, want no device memory", a, st)
	}
}

// twoKeys sets up the keys of circuits a and b, and a catalog (no log) beside a small
// device with room for room keys.
func twoKeys(t *testing.T, a, b string, room int) (*smallDevice, worker.Catalog) {
	t.Helper()
	keys.setup(t, a)
	keys.setup(t, b)
	return newSmallDevice(room), worker.NewCatalog(keys.reg.Get, keys.load, nil)
}

// proveWith proves inputs of seed for compiled's circuit with k on dev, and fails the
// test unless the proof verifies.
func proveWith(t *testing.T, dev prover.Backend, compiled *synth.Compiled, k *worker.ResidentKey, seed uint64) {
	t.Helper()
	ctx := context.Background()
	in, err := synth.Inputs(k.PK.Circuit, seed)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := synth.Solve(ctx, compiled, in)
	if err != nil {
		t.Fatal(err)
	}
	public := sol.Public
	proofs, _, err := prover.Prove(ctx, dev, k.PK, k.Key, []*synth.Solution{sol})
	if err != nil {
		t.Fatalf("prove with the key of %s: %v", k.PK.Circuit, err)
	}
	if err := prover.VerifyProof(k.VK, proofs[0], public); err != nil {
		t.Fatalf("proof with the key of %s: %v", k.PK.Circuit, err)
	}
}

// A key's files and its circuit's compiled system are read side by side: the key's
// read is still under way when the circuit's starts (here the key's read waits for
// it, which read one after the other would never see).
func TestKeyReadBesideItsCircuit(t *testing.T) {
	const name = "synthetic-k6"
	keys.setup(t, name)
	started := make(chan struct{})
	var once sync.Once
	circuits := func(ctx context.Context, n string) (*synth.Compiled, error) {
		once.Do(func() { close(started) })
		return keys.reg.Get(ctx, n)
	}
	load := func(ctx context.Context, n string, progress func(read, total int64)) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
		select {
		case <-started:
		case <-time.After(time.Minute):
			return nil, nil, errors.New("the circuit's read did not start while the key was read")
		}
		return keys.load(ctx, n, progress)
	}
	cat := worker.NewCatalog(circuits, load, nil)
	k, _, err := cat.Key(context.Background(), name, prover.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	k.Release()
}
