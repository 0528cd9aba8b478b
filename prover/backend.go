package prover

import (
	"context"
	"errors"
	"time"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"

	"github.com/cuzk/cuzk/synth"
)

// Backend computes the heavy parts of Groth16 proofs (MSMs and the NTTs behind H) for
// batches of solutions against one resident proving key. Randomization (r, s), the
// α/β/δ terms and assembly are common code in this package, so every backend yields
// proofs that gnark's groth16.Verify accepts.
type Backend interface {
	// Name identifies the backend and device, e.g. "cpu" or "cuda:0".
	Name() string
	// LoadKey makes a key's bases resident (device memory, precomputed tables). It is
	// called once per key and process; the returned Key is reused for every proof.
	LoadKey(ctx context.Context, pk *ProvingKey) (Key, error)
	// Prove computes Parts for each solution, in order. It may consume (release) the
	// A/B/C vectors of the solutions.
	Prove(ctx context.Context, k Key, sols []*synth.Solution) ([]Parts, PhaseTimes, error)
	// Close releases everything the backend holds.
	Close() error
}

// Errors a Backend wraps so that its callers can react to them (errors.Is).
var (
	// ErrOutOfMemory: LoadKey or Prove could not get the device (or pinned host)
	// memory it needed. Freeing resident keys of the same backend may let it succeed.
	ErrOutOfMemory = errors.New("device out of memory")
	// ErrDeviceReset: the device failed in a way that lost its state (a sticky CUDA
	// fault) and the backend reset it. The call failed; every Key the backend returned
	// before is gone (its Close is still safe) and must be loaded again.
	ErrDeviceReset = errors.New("device was reset after a fault; its resident keys are gone")
	// ErrDeviceLost: the device faulted and could not be reset within the process; the
	// backend is unusable until the process restarts (a new process gets a clean device).
	ErrDeviceLost = errors.New("device lost after a fault that a reset in this process did not clear")
)

// Key is a proving key made resident by a Backend.
type Key interface {
	// Bytes is the memory the resident key occupies (host or device), for budgeting.
	Bytes() int64
	Close() error
}

// PrecomputedKey is a Key that holds precomputed copies of its bases (counted in
// Bytes), for logs and for sizing memory limits without them.
type PrecomputedKey interface {
	Key
	PrecomputedBytes() int64
}

// Parts are the backend-computed sums of one proof, without randomization:
//
//	A  = Σ G1.A[i]·w[i]       (over wires whose A base is not infinity)
//	B1 = Σ G1.B[i]·w[i]       (over wires whose B base is not infinity)
//	B2 = Σ G2.B[i]·w[i]       (same wires as B1)
//	K  = Σ G1.K[j]·w_priv[j] + Σ G1.Z[i]·h[i]
//
// where h = (a·b − c)/t computed on the coset exactly as gnark's prover does.
type Parts struct {
	A, B1, K bls12381.G1Jac
	B2       bls12381.G2Jac
}

// PhaseTimes is the time a backend spent in each phase of one Prove call (for the
// whole batch). Zero means the phase did not run or the backend cannot separate it.
type PhaseTimes struct {
	H2D   time.Duration // host to device transfers
	NTT   time.Duration // H computation
	MSMG1 time.Duration
	MSMG2 time.Duration
	MSM   time.Duration // all MSMs, wall time (G1 and G2 may overlap)
	Total time.Duration
	// Wait is the part of the call spent waiting for the device while another call
	// used it (a backend with several lanes, see Lanes); it is not in the phases above.
	Wait time.Duration
}

// Lanes is implemented by a backend whose Prove calls overlap when several run at once
// on its device (one batch's upload and H beside another's MSMs): ProveLanes is how
// many its caller should keep in flight. A backend without it takes one at a time.
type Lanes interface {
	ProveLanes() int
}

// ProveLanes returns b's lanes: b.ProveLanes() when b implements Lanes, else 1.
func ProveLanes(b Backend) int {
	if l, ok := b.(Lanes); ok {
		return max(1, l.ProveLanes())
	}
	return 1
}

// StreamedKey is a Key some of whose bases did not fit its device: each MSM reads
// them from pinned host memory. StreamedBytes is their size (not in Bytes).
type StreamedKey interface {
	Key
	StreamedBytes() int64
}

// HostFreeKey is a Key that needs none of its ProvingKey's bases once loaded (they are
// on its device, or in memory of its own): UseShell hands it the key's Shell to keep
// instead, before the key is used, so that the host copy can be freed while it stays
// resident.
type HostFreeKey interface {
	Key
	UseShell(shell *ProvingKey)
}

// HostMemory is implemented by a backend that holds host memory of its own: buffers
// made for each resident key, and buffers the backend keeps for its life (GPU
// backends' pinned staging). A memory budget counts both.
type HostMemory interface {
	// KeyHostBytes bounds the host memory LoadKey allocates for a key of a circuit
	// of nbWires wires (nbPublic of them public) and an FFT domain of domain points,
	// beside the ProvingKey itself.
	KeyHostBytes(nbWires, nbPublic, domain int) int64
	// HostBytes is the host memory the backend holds for its life.
	HostBytes() int64
}

// urgentKey marks a Prove call's context as an urgent request's (WithUrgent).
type urgentKey struct{}

// WithUrgent marks ctx as an urgent request's: a backend whose device is shared by
// several Prove calls gives it the device first at each step (an upload, a group of
// MSMs) while the others wait, without stopping a step under way.
func WithUrgent(ctx context.Context) context.Context {
	return context.WithValue(ctx, urgentKey{}, true)
}

// Urgent reports whether ctx was marked by WithUrgent.
func Urgent(ctx context.Context) bool { return ctx.Value(urgentKey{}) != nil }
