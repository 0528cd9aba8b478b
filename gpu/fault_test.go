package gpu

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// faultCase is a random key of n constraints with a solution and its parts from the
// CPU backend, to prove again and again on the device.
type faultCase struct {
	pk   *prover.ProvingKey
	sol  *synth.Solution
	want prover.Parts
}

func newFaultCase(t *testing.T, name string, n int, seed uint64) *faultCase {
	t.Helper()
	const nbPublic = 2
	gpk, err := prover.RandomKey(n, n, nbPublic)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := prover.NewProvingKey(name, gpk, n)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	sol := &synth.Solution{W: make([]fr.Element, n), A: make([]fr.Element, n), B: make([]fr.Element, n), NbPublic: nbPublic}
	for _, v := range [][]fr.Element{sol.W, sol.A, sol.B} {
		randFr(rng, v)
	}
	fc := &faultCase{pk: pk, sol: sol}
	cpu := prover.NewCPU()
	ck, err := cpu.LoadKey(context.Background(), pk)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	parts, _, err := cpu.Prove(context.Background(), ck, []*synth.Solution{fc.copySol()})
	if err != nil {
		t.Fatal(err)
	}
	fc.want = parts[0]
	return fc
}

// copySol is a fresh copy of the solution: Prove may consume A and B.
func (fc *faultCase) copySol() *synth.Solution {
	s := *fc.sol
	s.W, s.A, s.B = slices.Clone(s.W), slices.Clone(s.A), slices.Clone(s.B)
	return &s
}

// prove proves the case's solution with k on b and checks the parts against the CPU's.
func (fc *faultCase) prove(t *testing.T, b *CUDA, k prover.Key) error {
	t.Helper()
	got, _, err := b.Prove(context.Background(), k, []*synth.Solution{fc.copySol()})
	if err != nil {
		return err
	}
	g, w := got[0], fc.want
	if !g.A.Equal(&w.A) || !g.B1.Equal(&w.B1) || !g.K.Equal(&w.K) || !g.B2.Equal(&w.B2) {
		t.Fatalf("%s: parts differ from the CPU backend's", fc.pk.Circuit)
	}
	return nil
}

// TestInjectedFaults: a CUDA error in one proof fails that proof only, and the next
// proof on the same key is right. A sticky fault (a trapping kernel) is tried in a
// child process (TestInjectedTrap), since it can leave the device unusable for the
// rest of the process. The library's CUZK_FAULT_INJECT makes the faults. Both ways a
// single proof uses the device run: under the device lock (a small, batched key's
// way) and staged beside the other lane (a large key's way: the key's batch size set
// to 1 here, as for such a key).
func TestInjectedFaults(t *testing.T) {
	for _, staged := range []bool{false, true} {
		t.Run(map[bool]string{false: "locked", true: "staged"}[staged], func(t *testing.T) { injectedFaults(t, staged) })
	}
}

func injectedFaults(t *testing.T, staged bool) {
	b := testBackend(t)
	ctx := context.Background()
	fc := newFaultCase(t, "fault-2^10", 1<<10, 31)
	key, err := b.LoadKey(ctx, fc.pk)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	if staged {
		key.(*cudaKey).batch = 1
	}
	if b.staged(key.(*cudaKey)) != staged {
		t.Fatalf("staged %v, want %v", !staged, staged)
	}
	if err := fc.prove(t, b, key); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUZK_FAULT_INJECT", "error:2") // the second MSM of the next proof
	err = fc.prove(t, b, key)
	if err == nil || errors.Is(err, prover.ErrDeviceReset) || errors.Is(err, prover.ErrDeviceLost) ||
		errors.Is(err, prover.ErrOutOfMemory) || !deviceError(err) {
		t.Fatalf("injected error: got %v, want a plain CUDA error", err)
	}
	if err := fc.prove(t, b, key); err != nil {
		t.Fatalf("the proof after an injected error: %v", err)
	}

	cmd := exec.Command(os.Args[0], "-test.run", "^TestInjectedTrap$", "-test.v")
	cmd.Env = append(os.Environ(), "CUZK_TEST_TRAP_CHILD=1", "CUZK_FAULT_INJECT=")
	out, err := cmd.CombinedOutput()
	t.Logf("child process:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestInjectedTrap") {
		t.Fatalf("sticky fault in a child process: %v", err)
	}
}

// TestInjectedTrap runs only as TestInjectedFaults' child: a trapping kernel fails the
// proof with prover.ErrDeviceReset, after which keys loaded before are refused and a
// key loaded again proves correctly, or with prover.ErrDeviceLost when the reset does
// not clear the fault, after which every call says so.
func TestInjectedTrap(t *testing.T) {
	if os.Getenv("CUZK_TEST_TRAP_CHILD") != "1" {
		t.Skip("runs as a child of TestInjectedFaults")
	}
	b := testBackend(t)
	ctx := context.Background()
	fc := newFaultCase(t, "trap-2^10", 1<<10, 34)
	key, err := b.LoadKey(ctx, fc.pk)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUZK_FAULT_INJECT", "trap:1")
	err = fc.prove(t, b, key)
	t.Logf("after the trap: %v", err)
	switch {
	case errors.Is(err, prover.ErrDeviceReset):
		if err := fc.prove(t, b, key); !errors.Is(err, prover.ErrDeviceReset) {
			t.Fatalf("a key loaded before the reset: got %v, want prover.ErrDeviceReset", err)
		}
		if err := key.Close(); err != nil {
			t.Fatalf("closing a key lost in the reset: %v", err)
		}
		if key, err = b.LoadKey(ctx, fc.pk); err != nil {
			t.Fatalf("loading the key again after the reset: %v", err)
		}
		defer key.Close()
		if err := fc.prove(t, b, key); err != nil {
			t.Fatalf("proving after the reset: %v", err)
		}
	case errors.Is(err, prover.ErrDeviceLost):
		if err := fc.prove(t, b, key); !errors.Is(err, prover.ErrDeviceLost) {
			t.Fatalf("proving on a lost device: got %v, want prover.ErrDeviceLost", err)
		}
		if _, err := b.LoadKey(ctx, fc.pk); !errors.Is(err, prover.ErrDeviceLost) {
			t.Fatalf("loading on a lost device: got %v, want prover.ErrDeviceLost", err)
		}
		if err := key.Close(); err != nil {
			t.Fatalf("closing a key of a lost device: %v", err)
		}
	default:
		t.Fatalf("injected trap: got %v, want prover.ErrDeviceReset or prover.ErrDeviceLost", err)
	}
}

// TestLoadKeyOutOfMemory: while another key is resident, a key whose bases do not
// fit fails with prover.ErrOutOfMemory (so the caller can evict and retry); alone on
// the device, the same key loads with its bases streamed from host memory, and proves
// correctly.
func TestLoadKeyOutOfMemory(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	small := newFaultCase(t, "small-2^10", 1<<10, 32)
	big := newFaultCase(t, "big-2^17", 1<<17, 33)
	k1, err := b.LoadKey(ctx, small.pk)
	if err != nil {
		t.Fatal(err)
	}
	info, err := b.lib.deviceInfo(b.ordinal)
	if err != nil {
		t.Fatal(err)
	}
	// Keep all but 40 MB free: the big key's G1 bases alone are about 50 MB.
	b.reserve = int(info.MemoryFree) - 40<<20
	_, err = b.LoadKey(ctx, big.pk)
	if !errors.Is(err, prover.ErrOutOfMemory) {
		t.Fatalf("loading beside a resident key: got %v, want prover.ErrOutOfMemory", err)
	}
	if err := small.prove(t, b, k1); err != nil {
		t.Fatalf("the resident key after the refused load: %v", err)
	}
	if err := k1.Close(); err != nil {
		t.Fatal(err)
	}
	k2, err := b.LoadKey(ctx, big.pk)
	if err != nil {
		t.Fatalf("loading alone: %v", err)
	}
	defer k2.Close()
	if k := k2.(*cudaKey); k.kz.resident() && k.b2.resident() {
		t.Fatal("the big key's bases all fit: the test's memory limit did not bite")
	}
	if err := big.prove(t, b, k2); err != nil {
		t.Fatalf("proving with streamed bases: %v", err)
	}
}

// TestKeyMemoryLimit: under Options.KeyMemoryBytes a key that does not fit beside the
// resident ones fails with prover.ErrOutOfMemory (the worker's catalog then evicts),
// fits once they are closed, and alone above the limit is streamed and still proves.
func TestKeyMemoryLimit(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	small := newFaultCase(t, "small-2^10", 1<<10, 34)
	big := newFaultCase(t, "big-2^14", 1<<14, 35)
	probe, err := b.LoadKey(ctx, big.pk)
	if err != nil {
		t.Fatal(err)
	}
	bigBytes := probe.Bytes()
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	if b.liveBytes.Load() != 0 {
		t.Fatalf("resident key bytes after closing the only key: %d, want 0", b.liveBytes.Load())
	}
	k1, err := b.LoadKey(ctx, small.pk)
	if err != nil {
		t.Fatal(err)
	}
	b.limit = bigBytes // the big key alone fits, beside the small one it does not
	defer func() { b.limit = 0 }()
	_, err = b.LoadKey(ctx, big.pk)
	if !errors.Is(err, prover.ErrOutOfMemory) || !strings.Contains(err.Error(), "key memory limit") {
		t.Fatalf("loading past the limit beside a resident key: got %v, want prover.ErrOutOfMemory for the limit", err)
	}
	if got := b.liveBytes.Load(); got != k1.Bytes() {
		t.Fatalf("resident key bytes after the refused load: %d, want the small key's %d", got, k1.Bytes())
	}
	if err := small.prove(t, b, k1); err != nil {
		t.Fatalf("the resident key after the refused load: %v", err)
	}
	if err := k1.Close(); err != nil {
		t.Fatal(err)
	}
	k2, err := b.LoadKey(ctx, big.pk)
	if err != nil {
		t.Fatalf("loading alone at the limit: %v", err)
	}
	if k := k2.(*cudaKey); !k.a.resident() || !k.b1.resident() || !k.kz.resident() || !k.b2.resident() {
		t.Fatal("a key exactly at the limit had bases streamed: the limit's accounting is off")
	}
	if err := big.prove(t, b, k2); err != nil {
		t.Fatal(err)
	}
	if err := k2.Close(); err != nil {
		t.Fatal(err)
	}
	// The buffers always come; half the bases' bytes beside them: A and B1 fit, K‖Z and
	// B2 are streamed.
	buffers := keyBufferBytes(big.pk, deviceLanes)
	b.limit = buffers + (bigBytes-buffers)/2
	k3, err := b.LoadKey(ctx, big.pk)
	if err != nil {
		t.Fatalf("loading alone above the limit: %v", err)
	}
	defer k3.Close()
	if k := k3.(*cudaKey); !k.a.resident() || k.kz.resident() || k.b2.resident() {
		t.Fatalf("bases resident under half their size: A %v, K‖Z %v, B2 %v; want A only", k.a.resident(), k.kz.resident(), k.b2.resident())
	}
	if k3.Bytes() > b.limit {
		t.Fatalf("the key alone above the limit holds %d device bytes, limit %d", k3.Bytes(), b.limit)
	}
	if err := big.prove(t, b, k3); err != nil {
		t.Fatalf("proving with bases streamed for the limit: %v", err)
	}
}
