package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// Options tune the CUDA backend; the zero value is the default.
type Options struct {
	LibPath      string // the library; "" searches as FindLibrary does
	StagingBytes int    // pinned host staging per stream (default 64 MiB)
	// ReserveBytes is device memory kept free when deciding whether a key's bases
	// fit (for MSM scratch and per-proof buffers); bases that do not fit are streamed
	// from pinned host memory. Default 8 GiB.
	ReserveBytes int
	// PrecomputeCopies > 1 keeps up to that many shifted copies (2^(c·k)·P) of each
	// resident key base set on the device, made at key load, so each MSM over the set
	// needs fewer windows' bucket reductions and wider windows (cuzk_bases_precompute);
	// sets whose copies do not fit beside ReserveBytes stay as they are. 0 or 1: off.
	PrecomputeCopies int
	// PrecomputeAuto makes copies only where they are cheap against the key memory
	// (KeyMemoryBytes, else the device's): a key proven in batches (domain ≤ 2^19,
	// batchCap > 1) gets PrecomputeCopies for each base set within 1/32 of it (16 copies
	// of a 2^14 key's bases take about 120 MiB); a larger key gets them for all its sets
	// or for none, all when PrecomputeCopies times its bases fit within half of it and
	// in the room left (a 2^22 key: about 30 GiB on an H200, a proof 243 -> 212 ms with
	// two callers). Fewer copies of a large key were not measured to pay.
	PrecomputeAuto bool
	// Knobs override the library's tuning (MSM window widths) on every stream of the
	// device; the zero value keeps its choices. For measurements and tests.
	Knobs Knobs
	// KeyMemoryBytes caps the device memory of all resident keys together (bases,
	// precomputed copies, per-proof buffers), for a device shared with other work or
	// sized for several circuits' keys. A load that would pass it fails with
	// prover.ErrOutOfMemory while other keys are resident (the caller evicts one and
	// tries again); alone, the key's bases that do not fit are streamed from pinned host
	// memory and copies that do not fit are not made. 0: only the device's own size.
	KeyMemoryBytes int64
}

// CUDA is the prover.Backend on one CUDA device. Its key bases stay resident on the
// device; Prove runs H and the G1 MSMs on one stream and the G2 MSM on another, so
// the G2 MSM of one solution overlaps its G1 MSMs and the next solution's upload, H
// and G1 MSMs. Batches of small proofs have a third stream: while one Prove call's
// batch runs its MSMs, another call's batch is uploaded and gets its H (ProveLanes).
type CUDA struct {
	lib     *cudaLib
	ctx     *cudaCtx
	ordinal int
	info    devinfo.Device
	reserve int
	copies  int   // Options.PrecomputeCopies
	auto    bool  // Options.PrecomputeAuto
	limit   int64 // Options.KeyMemoryBytes; 0: none

	mu prioMutex // one Prove or LoadKey at a time on s1 and s2: the streams own their scratch
	// stage is held while a batch group is uploaded and gets its H on s3, beside
	// another call's MSMs under mu. Lock order: mu before stage; a fault's reset holds
	// both. An urgent request's proof (prover.WithUrgent) takes each of them first.
	stage      prioMutex
	s1, s2, s3 *cudaStream
	// gen counts device resets: a key loaded in an earlier generation is gone. live is
	// the number of keys of this generation not yet closed, liveBytes their Bytes.
	gen, live  atomic.Int64
	liveBytes  atomic.Int64
	stagingOpt int
	lost       error // set (under mu and stage) when a fault could not be reset: every later call fails with it
	knobs      Knobs // Options.Knobs, or the last SetKnobs: applied to every new stream
}

// deviceLanes is how many Prove calls overlap on one device (ProveLanes).
const deviceLanes = 2

var _ prover.Backend = (*CUDA)(nil)

// NewCUDA opens device ordinal. If the library, driver or device is missing, the
// error is an *UnavailableError ("unavailable: <reason>").
func NewCUDA(ordinal int, opt Options) (*CUDA, error) {
	lib, err := openLib(opt.LibPath)
	if err != nil {
		return nil, err
	}
	n, err := lib.deviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, &UnavailableError{Reason: fmt.Sprintf("CUDA device %d not present (%d devices)", ordinal, n)}
	}
	info, err := lib.deviceInfo(ordinal)
	if err != nil {
		return nil, err
	}
	c, err := lib.newCtx(ordinal)
	if err != nil {
		return nil, err
	}
	if opt.KeyMemoryBytes < 0 {
		c.close()
		return nil, fmt.Errorf("cuda:%d: key memory limit %d is negative", ordinal, opt.KeyMemoryBytes)
	}
	if err := opt.Knobs.check(); err != nil {
		c.close()
		return nil, fmt.Errorf("cuda:%d: knobs: %w", ordinal, err)
	}
	b := &CUDA{lib: lib, ctx: c, ordinal: ordinal, info: info, reserve: opt.ReserveBytes, copies: opt.PrecomputeCopies,
		auto: opt.PrecomputeAuto, limit: opt.KeyMemoryBytes, stagingOpt: opt.StagingBytes, knobs: opt.Knobs}
	if b.reserve == 0 {
		b.reserve = 8 << 30
	}
	if b.s1, b.s2, b.s3, err = b.newStreams(); err != nil {
		c.close()
		return nil, err
	}
	return b, nil
}

// newStreams makes the backend's three streams with its knobs, or none.
func (b *CUDA) newStreams() (s1, s2, s3 *cudaStream, err error) {
	var s [3]*cudaStream
	for i := range s {
		if s[i], err = b.ctx.newStream(b.stagingOpt); err == nil {
			if err = s[i].setKnobs(b.knobs); err != nil {
				s[i].close()
			}
		}
		if err != nil {
			for _, made := range s[:i] {
				made.close()
			}
			return nil, nil, nil, err
		}
	}
	return s[0], s[1], s[2], nil
}

// SetKnobs replaces the library's tuning overrides (Options.Knobs) for the calls after
// it; it waits for the Prove and LoadKey calls in progress.
func (b *CUDA) SetKnobs(k Knobs) error {
	if err := k.check(); err != nil {
		return fmt.Errorf("%s: knobs: %w", b.Name(), err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stage.Lock()
	defer b.stage.Unlock()
	for _, s := range []*cudaStream{b.s1, b.s2, b.s3} {
		if s == nil {
			continue // lost in a failed reset
		}
		if err := s.setKnobs(k); err != nil {
			return fmt.Errorf("%s: %w", b.Name(), err)
		}
	}
	b.knobs = k
	return nil
}

// ProveLanes implements prover.Lanes: two Prove calls of batches overlap, one
// uploading and computing H while the other runs its MSMs (the worker runs two provers
// per device). Calls of single proofs take the device one at a time.
func (b *CUDA) ProveLanes() int { return deviceLanes }

// HostBytes implements prover.HostMemory: the pinned staging buffers of the
// backend's three streams.
func (b *CUDA) HostBytes() int64 {
	staging := int64(b.stagingOpt)
	if staging == 0 {
		staging = defaultStagingBytes
	}
	return 3 * staging
}

// defaultStagingBytes is the library's staging buffer per stream when
// Options.StagingBytes is 0.
const defaultStagingBytes = 64 << 20

// KeyHostBytes implements prover.HostMemory: a key's host memory beside the
// ProvingKey is counted where it is made (streamed bases' pinned copies).
func (b *CUDA) KeyHostBytes(nbWires, nbPublic, domain int) int64 { return 0 }

// Name implements prover.Backend.
func (b *CUDA) Name() string { return fmt.Sprintf("cuda:%d", b.ordinal) }

// Device describes the GPU.
func (b *CUDA) Device() devinfo.Device { return b.info }

// Close implements prover.Backend.
func (b *CUDA) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stage.Lock()
	defer b.stage.Unlock()
	return errors.Join(b.s1.close(), b.s2.close(), b.s3.close(), b.ctx.close())
}

// fault classifies a failed library call for the caller: an allocation failure wraps
// prover.ErrOutOfMemory; a CUDA error after which the device no longer answers (a
// sticky fault) resets the device and new streams are made, and the error wraps
// prover.ErrDeviceReset, since every key loaded before is gone. Call with b.mu held
// (and not b.stage, which a reset takes).
func (b *CUDA) fault(err error) error {
	switch {
	case err == nil:
		return nil
	case outOfMemory(err):
		return fmt.Errorf("%w: %w", prover.ErrOutOfMemory, err)
	case !deviceError(err):
		return err
	}
	if b.ctx.check() == nil {
		return err // the device still works: this call failed, nothing else is lost
	}
	b.stage.Lock() // no batch is being staged on s3 while the device resets
	defer b.stage.Unlock()
	b.gen.Add(1)
	b.live.Store(0)
	b.liveBytes.Store(0)
	if rerr := b.restart(); rerr != nil {
		b.lost = fmt.Errorf("%w (reset: %v): %w", prover.ErrDeviceLost, rerr, err)
		return b.lost
	}
	return fmt.Errorf("%w: %w", prover.ErrDeviceReset, err)
}

// restart resets the device and makes new streams. On the H200 host (driver
// 580.159.04) the reset after an injected trap never succeeded: every new context was
// refused as busy for the 10 s the library retries, so a fault that needs a reset
// usually ends in ErrDeviceLost, and a new process. Call with b.mu and b.stage held.
func (b *CUDA) restart() error {
	old := []*cudaStream{b.s1, b.s2, b.s3}
	b.s1, b.s2, b.s3 = nil, nil, nil
	err := b.ctx.reset()
	for _, s := range old {
		s.close() // stale after the reset, failed or not: only the handles are freed
	}
	if err != nil {
		return err
	}
	b.s1, b.s2, b.s3, err = b.newStreams()
	return err
}

// usable says why k cannot be proven with now: the device is lost, or was reset since
// k was loaded. Call with b.mu or b.stage held.
func (b *CUDA) usable(k *cudaKey) error {
	if b.lost != nil {
		return b.lost
	}
	if k.gen != b.gen.Load() {
		return fmt.Errorf("%w (the key was loaded before it)", prover.ErrDeviceReset)
	}
	return nil
}

// cudaKey is a proving key resident on the device.
type cudaKey struct {
	owner       *CUDA
	gen         int64 // the owner's generation when loaded
	pk          *prover.ProvingKey
	a, b1, kz   *baseSet // G1
	b2          *baseSet // G2
	idxA, idxB  *devBuf  // wire index of each non-infinity A/B base; nil when none is infinity
	dom         *nttDomain
	wh          [2]*devBuf // per pipeline slot: W ‖ h, so K‖Z scalars are W[NbPublic:] ‖ h
	hb, hc      *devBuf    // H scratch
	batch       int        // solutions per batched pass (1: small batches are not worth it)
	whBatch     []*devBuf  // per lane, batch slots of W ‖ h, stride NbWires + DomainSize
	sets        chan int   // the whBatch entries free for a group
	slots       chan int   // the wh entries free for a staged solution (proveStaged)
	hBatch      int        // solutions whose H is computed at once (batched keys; at least 2)
	hbB, hcB    *devBuf    // H scratch of hBatch solutions, solution j at j*DomainSize
	bytes       int64
	precomputed int64 // of bytes, the bases' precomputed copies
	streamed    int64 // bases kept in pinned host memory (StreamedBytes), not in bytes
	closeOnce   sync.Once
	releaseErrs error
}

func (k *cudaKey) Bytes() int64 { return k.bytes }

// PrecomputedBytes implements prover.PrecomputedKey.
func (k *cudaKey) PrecomputedBytes() int64 { return k.precomputed }

// UseShell implements prover.HostFreeKey: the bases are on the device, or in the
// library's own pinned copy for streamed sets; proving reads only the key's shape.
func (k *cudaKey) UseShell(shell *prover.ProvingKey) { k.pk = shell }

// StreamedBytes implements prover.StreamedKey: the base sets kept in pinned host
// memory, read by each MSM, because they did not fit the device.
func (k *cudaKey) StreamedBytes() int64 { return k.streamed }

// streamedBytes sums the base sets of k that are not resident.
func (k *cudaKey) streamedBytes() int64 {
	var n int64
	for _, set := range []*baseSet{k.a, k.b1, k.kz, k.b2} {
		if !set.resident() {
			n += int64(set.count) * int64(96*set.group)
		}
	}
	return n
}

func (k *cudaKey) Close() error {
	k.closeOnce.Do(func() {
		if k.owner != nil && k.owner.gen.Load() == k.gen {
			k.owner.live.Add(-1)
			k.owner.liveBytes.Add(-k.bytes)
		}
		k.releaseErrs = errors.Join(k.a.close(), k.b1.close(), k.kz.close(), k.b2.close(),
			k.idxA.free(), k.idxB.free(), k.dom.close(), k.wh[0].free(), k.wh[1].free(), k.hb.free(), k.hc.free(),
			k.hbB.free(), k.hcB.free())
		for _, w := range k.whBatch {
			k.releaseErrs = errors.Join(k.releaseErrs, w.free())
		}
	})
	return k.releaseErrs
}

func nonInfinityIndex(inf []bool, nbInf uint64) []uint32 {
	if nbInf == 0 {
		return nil
	}
	idx := make([]uint32, 0, len(inf)-int(nbInf))
	for i, v := range inf {
		if !v {
			idx = append(idx, uint32(i))
		}
	}
	return idx
}

// LoadKey implements prover.Backend: it uploads the bases once and allocates the
// per-proof device buffers.
func (b *CUDA) LoadKey(ctx context.Context, pk *prover.ProvingKey) (prover.Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(pk.KZ) != pk.NbPrivate()+pk.DomainSize()-1 {
		return nil, fmt.Errorf("%s: load key %s: not built with prover.NewProvingKey", b.Name(), pk.Circuit)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost != nil {
		return nil, fmt.Errorf("%s: load key %s: %w", b.Name(), pk.Circuit, b.lost)
	}
	k := &cudaKey{pk: pk}
	err := b.loadKey(k)
	if err != nil {
		err = b.fault(err)
		k.Close()
		return nil, fmt.Errorf("%s: load key %s: %w", b.Name(), pk.Circuit, err)
	}
	k.owner, k.gen = b, b.gen.Load()
	k.streamed = k.streamedBytes()
	b.live.Add(1)
	b.liveBytes.Add(k.bytes)
	return k, nil
}

func (b *CUDA) loadKey(k *cudaKey) error {
	pk, s := k.pk, b.s1
	n := pk.DomainSize()
	// While other keys are resident, bases that do not fit fail the load with
	// prover.ErrOutOfMemory, so the caller can evict a key and try again; alone on the
	// device, they are streamed from pinned host memory instead.
	flags := 0
	if b.live.Load() > 0 {
		flags = basesResidentOnly
	}
	// Under Options.KeyMemoryBytes the buffers are counted first (they are always
	// allocated), then each base set in turn takes what is left.
	lim := newKeyRoom(b.limit, b.liveBytes.Load(), keyBufferBytes(pk, deviceLanes))
	if lim.short() && flags&basesResidentOnly != 0 {
		return lim.refuse("its buffers")
	}
	var err error
	g1 := func(pts []bls12381.G1Affine, what string) (*baseSet, error) {
		f, err := lim.take(int64(len(pts))*96, flags, what)
		if err != nil {
			return nil, err
		}
		return s.newBasesG1(pts, b.reserve, f)
	}
	if k.a, err = g1(pk.PK.G1.A, "the A bases"); err != nil {
		return err
	}
	if k.b1, err = g1(pk.PK.G1.B, "the B1 bases"); err != nil {
		return err
	}
	if k.kz, err = g1(pk.KZ, "the K and Z bases"); err != nil {
		return err
	}
	f, err := lim.take(int64(len(pk.PK.G2.B))*192, flags, "the B2 bases")
	if err != nil {
		return err
	}
	if k.b2, err = s.newBasesG2(pk.PK.G2.B, b.reserve, f); err != nil {
		return err
	}
	if want := b.keyCopies(k, lim); want > 1 {
		// G2 first: its MSM is the costliest of a proof.
		for _, set := range []*baseSet{k.b2, k.a, k.b1, k.kz} {
			if !set.resident() {
				continue
			}
			copies := lim.copies(set.deviceBytes(), want)
			if b.auto && batchCap(n) > 1 {
				copies = min(copies, int(b.keyMemory()/32/max(set.deviceBytes(), 1)))
			}
			if copies < 2 {
				continue
			}
			before := set.deviceBytes()
			if _, _, _, err := set.precompute(s, copies, b.reserve); err != nil {
				return err
			}
			lim.used += set.deviceBytes() - before
			k.precomputed += set.deviceBytes() - before
		}
	}
	upIdx := func(idx []uint32) (*devBuf, error) {
		if idx == nil {
			return nil, nil
		}
		d, err := b.ctx.alloc(len(idx) * 4)
		if err != nil {
			return nil, err
		}
		return d, s.uploadU32(d, idx)
	}
	if k.idxA, err = upIdx(nonInfinityIndex(pk.PK.InfinityA, pk.PK.NbInfinityA)); err != nil {
		return err
	}
	if k.idxB, err = upIdx(nonInfinityIndex(pk.PK.InfinityB, pk.PK.NbInfinityB)); err != nil {
		return err
	}
	if k.dom, err = s.newDomain(&pk.PK.Domain); err != nil {
		return err
	}
	k.slots = make(chan int, len(k.wh))
	for i := range k.wh {
		if k.wh[i], err = b.ctx.alloc((pk.NbWires + n) * fr.Bytes); err != nil {
			return err
		}
		k.slots <- i
	}
	if k.hb, err = b.ctx.alloc(n * fr.Bytes); err != nil {
		return err
	}
	if k.hc, err = b.ctx.alloc(n * fr.Bytes); err != nil {
		return err
	}
	if k.batch = batchCap(n); k.batch > 1 {
		k.sets = make(chan int, deviceLanes)
		for i := range deviceLanes {
			w, err := b.ctx.alloc(k.batch * (pk.NbWires + n) * fr.Bytes)
			if err != nil {
				return err
			}
			k.whBatch = append(k.whBatch, w)
			k.sets <- i
		}
		k.hBatch = hBatchCap(n)
		if k.hbB, err = b.ctx.alloc(k.hBatch * n * fr.Bytes); err != nil {
			return err
		}
		if k.hcB, err = b.ctx.alloc(k.hBatch * n * fr.Bytes); err != nil {
			return err
		}
	}
	k.bytes = k.a.deviceBytes() + k.b1.deviceBytes() + k.kz.deviceBytes() + k.b2.deviceBytes() +
		k.dom.bytes + keySlotBytes(pk.NbWires, n, deviceLanes)
	if k.idxA != nil {
		k.bytes += int64(k.idxA.bytes)
	}
	if k.idxB != nil {
		k.bytes += int64(k.idxB.bytes)
	}
	return nil
}

// keyCopies is the precomputed copies wanted for each of k's resident base sets (its
// bases loaded), under Options.PrecomputeAuto as described there.
func (b *CUDA) keyCopies(k *cudaKey, lim *keyRoom) int {
	if !b.auto || batchCap(k.pk.DomainSize()) > 1 || b.copies < 2 {
		return b.copies
	}
	var bases int64
	for _, set := range []*baseSet{k.b2, k.a, k.b1, k.kz} {
		if set.resident() {
			bases += set.deviceBytes()
		}
	}
	if bases == 0 || bases*int64(b.copies-1) > b.keyMemory()/2 || lim.copies(bases, b.copies) < b.copies {
		return 0
	}
	return b.copies
}

// keyMemory is the device memory all resident keys may take: Options.KeyMemoryBytes,
// else the device's.
func (b *CUDA) keyMemory() int64 {
	if b.limit > 0 {
		return b.limit
	}
	return int64(b.info.MemoryTotal)
}

// keySlotBytes is the device memory of a key's per-proof buffers: W‖h per pipeline
// slot, H's scratch, and for a batched key (batchCap > 1) W‖h per batch slot of each
// of the backend's lanes and the batch's H scratch.
func keySlotBytes(wires, n, lanes int) int64 {
	b := int64(2*(wires+n)+2*n) * fr.Bytes
	if c := batchCap(n); c > 1 {
		b += int64(lanes*c*(wires+n)+2*n*hBatchCap(n)) * fr.Bytes
	}
	return b
}

// hBatchElems bounds a batched key's H scratch (B and C of hBatchCap solutions):
// 2^18 elements, 8 MiB each, enough to fill the device with the H of a group of
// small solutions.
const hBatchElems = 1 << 18

// hBatchCap is how many solutions of domain size n get their H in one set of
// launches: at least 2.
func hBatchCap(n int) int { return min(batchCap(n), max(2, hBatchElems/n)) }

// keyBufferBytes is the device memory of a key's buffers beside its bases (loadKey's
// allocations: the NTT domain's tables, domainBytes; keySlotBytes; the wire indexes),
// for Options.KeyMemoryBytes.
func keyBufferBytes(pk *prover.ProvingKey, lanes int) int64 {
	n := int64(pk.DomainSize())
	b := domainBytes(n) + keySlotBytes(pk.NbWires, int(n), lanes)
	if pk.PK.NbInfinityA > 0 {
		b += (int64(len(pk.PK.InfinityA)) - int64(pk.PK.NbInfinityA)) * 4
	}
	if pk.PK.NbInfinityB > 0 {
		b += (int64(len(pk.PK.InfinityB)) - int64(pk.PK.NbInfinityB)) * 4
	}
	return b
}

// keyRoom is what one key load may still place on the device under
// Options.KeyMemoryBytes (limit 0: no limit).
type keyRoom struct {
	limit, other, used int64 // the limit, other resident keys' bytes, this load's so far
}

func newKeyRoom(limit, other, buffers int64) *keyRoom {
	return &keyRoom{limit: limit, other: other, used: buffers}
}

func (r *keyRoom) short() bool { return r.limit > 0 && r.other+r.used > r.limit }

func (r *keyRoom) refuse(what string) error {
	return fmt.Errorf("%w: %s would bring resident keys to %d bytes, above the key memory limit of %d",
		prover.ErrOutOfMemory, what, r.other+r.used, r.limit)
}

// take accounts a base set of the given device bytes and returns the flags to create
// it with: as before when it fits under the limit; when it does not, an error while
// other keys are resident (flags has basesResidentOnly), else streamed from host.
func (r *keyRoom) take(bytes int64, flags int, what string) (int, error) {
	if r.limit == 0 || r.other+r.used+bytes <= r.limit {
		r.used += bytes
		return flags, nil
	}
	if flags&basesResidentOnly != 0 {
		r.used += bytes
		return 0, r.refuse(what)
	}
	return basesForceStreamed, nil
}

// copies bounds the precomputed copies of a resident set of the given bytes (its
// first copy already counted) by the room left.
func (r *keyRoom) copies(bytes int64, want int) int {
	if r.limit == 0 || bytes == 0 {
		return want
	}
	room := r.limit - r.other - r.used
	return int(min(int64(want), 1+max(room, 0)/bytes))
}

// batchPoints is how many (solution, domain element) pairs one batched pass covers: a
// single MSM of 2^20 points already keeps the H200 busy, smaller ones leave most of it
// idle, so the solutions of a small circuit share one pass over the bases.
const batchPoints = 1 << 20

// batchCap is the number of solutions proven in one batched pass for domain size n
// (1 means one at a time). At most 64 so that the bucket memory stays in the hundreds
// of MiB (G2: 384 bytes per bucket, about 1,700 windows' worth at 64 × 2^14).
func batchCap(n int) int { return min(64, max(1, batchPoints/n)) }

// g2job asks the G2 worker for solution i, whose scalars are in pipeline slot slot.
type g2job struct{ i, slot int }

// Prove implements prover.Backend. PhaseTimes: H2D and NTT are summed over the
// batch; MSMG1/MSMG2 are summed device-call times; MSM is the MSMs' wall time (G2
// overlaps G1, so MSM < MSMG1 + MSMG2 when that pays): for proofs staged one at a
// time the MSM section's, less any wait for h (the upload of A and B and the H
// computation run beside the first MSMs, and beside the other lane's while this call
// waits for the device, so H2D, NTT and MSM may sum to more than Total), otherwise the
// time not spent in H2D or NTT. Wait is the time spent waiting for the other lane,
// and Total leaves it out.
func (b *CUDA) Prove(ctx context.Context, key prover.Key, sols []*synth.Solution) ([]prover.Parts, prover.PhaseTimes, error) {
	var times prover.PhaseTimes
	k, ok := key.(*cudaKey)
	if !ok {
		return nil, times, fmt.Errorf("%s: prove: key of type %T was not loaded by a cuda backend", b.Name(), key)
	}
	pk := k.pk
	for i, sol := range sols {
		if err := pk.CheckSolution(sol); err != nil {
			return nil, times, fmt.Errorf("%s: prove %s: solution %d: %w", b.Name(), pk.Circuit, i, err)
		}
	}
	start := time.Now()
	parts := make([]prover.Parts, len(sols))
	// Batches, and staged single proofs, take the device lock per group or solution.
	var split func(context.Context, *cudaKey, []*synth.Solution, []prover.Parts, *prover.PhaseTimes) error
	batched := k.batch > 1 && len(sols) > 1
	switch {
	case batched:
		split = b.proveBatched
	case b.staged(k):
		split = b.proveStaged
	}
	if split != nil {
		err := split(ctx, k, sols, parts, &times)
		times.Total = time.Since(start) - times.Wait
		if batched { // proveStaged books its MSM section itself
			times.MSM = times.Total - times.H2D - times.NTT
		}
		if err != nil {
			return nil, times, fmt.Errorf("%s: prove %s: %w", b.Name(), pk.Circuit, err)
		}
		return parts, times, nil
	}
	b.mu.lockAs(prover.Urgent(ctx))
	defer b.mu.Unlock()
	times.Wait = time.Since(start)
	if err := b.usable(k); err != nil {
		return nil, times, fmt.Errorf("%s: prove %s: %w", b.Name(), pk.Circuit, err)
	}

	// G2 worker on stream 2. free[slot] holds a token while wh[slot] may be overwritten.
	jobs := make(chan g2job, 1)
	var free [2]chan struct{}
	for i := range free {
		free[i] = make(chan struct{}, 1)
		free[i] <- struct{}{}
	}
	var g2err error
	var g2time time.Duration
	g2done := make(chan struct{})
	go func() {
		defer close(g2done)
		for j := range jobs {
			if g2err == nil {
				t0 := time.Now()
				parts[j.i].B2, g2err = b.s2.msmG2(k.b2, 0, k.b2.count, k.wh[j.slot], 0, k.idxB)
				g2time += time.Since(t0)
			}
			free[j.slot] <- struct{}{}
		}
	}()

	err := b.proveG1(ctx, k, sols, parts, jobs, &free, &times)
	close(jobs)
	<-g2done
	if err == nil && g2err != nil {
		err = fmt.Errorf("G2 MSM: %w", g2err)
	}
	times.MSMG2 = g2time
	times.Total = time.Since(start) - times.Wait
	times.MSM = times.Total - times.H2D - times.NTT
	if err != nil {
		return nil, times, fmt.Errorf("%s: prove %s: %w", b.Name(), pk.Circuit, b.fault(err))
	}
	return parts, times, nil
}

func (b *CUDA) proveG1(ctx context.Context, k *cudaKey, sols []*synth.Solution, parts []prover.Parts,
	jobs chan<- g2job, free *[2]chan struct{}, times *prover.PhaseTimes) error {
	pk, s := k.pk, b.s1
	n := pk.DomainSize()
	for i, sol := range sols {
		if err := ctx.Err(); err != nil {
			return err
		}
		slot := i % 2
		<-free[slot]
		wh := k.wh[slot]
		if err := k.uploadAndH(s, sol, wh, 0, k.hb, k.hc, 0, times, nil); err != nil {
			return err
		}
		t2 := time.Now()
		// G2 starts after H, not once W is uploaded: started earlier it held the SMs
		// that H then waited for, so ntt_ms read ~390 ms for ~15 ms of H at 2^22, for a
		// proof 0.5-2% faster (docs/lab/BENCHMARKS.md).
		jobs <- g2job{i, slot}

		var err error
		p := &parts[i]
		if p.A, err = s.msmG1(k.a, 0, k.a.count, wh, 0, k.idxA); err != nil {
			return fmt.Errorf("MSM A: %w", err)
		}
		if p.B1, err = s.msmG1(k.b1, 0, k.b1.count, wh, 0, k.idxB); err != nil {
			return fmt.Errorf("MSM B1: %w", err)
		}
		// K‖Z over W[NbPublic:] ‖ h; the last h entry has no base (deg h ≤ n−2).
		if p.K, err = s.msmG1(k.kz, 0, pk.NbPrivate()+n-1, wh, pk.NbPublic, nil); err != nil {
			return fmt.Errorf("MSM KZ: %w", err)
		}
		times.MSMG1 += time.Since(t2)
	}
	return nil
}

// staged tells whether an unbatched Prove call on k goes through proveStaged: an
// unbatched key's solutions are staged beside the other lane's MSMs, a batched key's
// single solution is proven under the device lock.
func (b *CUDA) staged(k *cudaKey) bool { return k.batch <= 1 }

// proveStaged proves sols one at a time, each in a free pipeline slot of the key
// (k.slots), uploaded and given its H on the staging stream under b.stage while the
// other lane's MSMs run under b.mu (proveInSlot). Under the lock a proof of 2^22
// spent 32 of its 263 ms on the upload and H (H200), which the other lane's proof now
// covers.
func (b *CUDA) proveStaged(ctx context.Context, k *cudaKey, sols []*synth.Solution, parts []prover.Parts,
	times *prover.PhaseTimes) error {
	for i, sol := range sols {
		if err := ctx.Err(); err != nil {
			return err
		}
		slot, err := takeSlot(ctx, k.slots, times)
		if err != nil {
			return err
		}
		err = b.proveInSlot(ctx, k, sol, k.wh[slot], &parts[i], times)
		k.slots <- slot
		if err != nil {
			if len(sols) > 1 {
				err = fmt.Errorf("solution %d: %w", i, err)
			}
			return err
		}
	}
	return nil
}

// takeSlot takes a free slot (or slot set) of a key from free, the wait booked as Wait.
func takeSlot(ctx context.Context, free chan int, times *prover.PhaseTimes) (int, error) {
	t := time.Now()
	defer func() { times.Wait += time.Since(t) }()
	select {
	case i := <-free:
		return i, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// proveInSlot stages sol into wh on s3 under b.stage (stageOne) and runs its MSMs
// under b.mu (msmSingle). The A, B1 and G2 MSMs read only W, so they start as soon as
// W is on the device, beside the upload of A and B and the H computation; the K‖Z MSM,
// which reads h, waits for the staging to end. The staging never waits for b.mu; its
// fault is handled under b.mu here.
func (b *CUDA) proveInSlot(ctx context.Context, k *cudaKey, sol *synth.Solution, wh *devBuf, p *prover.Parts,
	times *prover.PhaseTimes) error {
	var st prover.PhaseTimes // the staging goroutine's phases, booked once it has ended
	var stageErr error
	wUp, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		stageErr = b.stageOne(ctx, k, sol, wh, &st, wUp)
	}()
	stageDone := sync.OnceValue(func() error {
		<-ended
		times.Wait += st.Wait
		times.H2D += st.H2D
		times.NTT += st.NTT
		return stageErr
	})
	select {
	case <-wUp:
	case <-ended:
		select {
		case <-wUp: // W reached the device before the staging ended
		default: // the staging ended with an error before W reached the device
			err := stageDone()
			return b.locked(ctx, k, times, func() error { return err })
		}
	}
	err := b.locked(ctx, k, times, func() error { return b.msmSingle(k, wh, p, times, stageDone) })
	// The slot is free again only once the staging has ended; an error of the MSMs
	// (or of the lock) comes first.
	if serr := stageDone(); err == nil {
		err = serr
	}
	return err
}

// stageOne uploads sol into wh (W, then A after it) and its B into the H scratch,
// closing wUp once W is on the device, and computes its H on s3 under b.stage.
func (b *CUDA) stageOne(ctx context.Context, k *cudaKey, sol *synth.Solution, wh *devBuf, times *prover.PhaseTimes,
	wUp chan<- struct{}) error {
	t := time.Now()
	b.stage.lockAs(prover.Urgent(ctx))
	defer b.stage.Unlock()
	times.Wait += time.Since(t)
	if err := b.usable(k); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return k.uploadAndH(b.s3, sol, wh, 0, k.hb, k.hc, 0, times, wUp)
}

// msmSingle runs the four MSMs of the solution in wh, G2 on s2 beside the G1 ones on
// s1; the K‖Z MSM after staged (the staging of h) has returned nil.
func (b *CUDA) msmSingle(k *cudaKey, wh *devBuf, p *prover.Parts, times *prover.PhaseTimes, staged func() error) error {
	pk, s := k.pk, b.s1
	var g2err error
	g2done := make(chan struct{})
	go func() {
		defer close(g2done)
		t := time.Now()
		p.B2, g2err = b.s2.msmG2(k.b2, 0, k.b2.count, wh, 0, k.idxB)
		times.MSMG2 += time.Since(t)
	}()
	start, hWait := time.Now(), time.Duration(0) // the wait for h is not MSM time
	defer func() { times.MSM += time.Since(start) - hWait }()
	var err error
	if p.A, err = s.msmG1(k.a, 0, k.a.count, wh, 0, k.idxA); err != nil {
		err = fmt.Errorf("MSM A: %w", err)
	} else if p.B1, err = s.msmG1(k.b1, 0, k.b1.count, wh, 0, k.idxB); err != nil {
		err = fmt.Errorf("MSM B1: %w", err)
	} else {
		tw := time.Now()
		err = staged()
		hWait = time.Since(tw)
		// K‖Z over W[NbPublic:] ‖ h; the last h entry has no base (deg h ≤ n−2).
		if err == nil {
			if p.K, err = s.msmG1(k.kz, 0, pk.NbPrivate()+pk.DomainSize()-1, wh, pk.NbPublic, nil); err != nil {
				err = fmt.Errorf("MSM KZ: %w", err)
			}
		}
	}
	times.MSMG1 += time.Since(start) - hWait
	<-g2done // the slot is free for another solution only when G2 is done with it
	if err == nil && g2err != nil {
		err = fmt.Errorf("G2 MSM: %w", g2err)
	}
	return err
}

// proveBatched proves sols in groups of up to k.batch. Each group takes a free set of
// batch slots (k.whBatch), is uploaded and gets its H on the staging stream under
// b.stage (stageGroup), then runs its four MSMs under b.mu, each once for the whole
// group (cuzk_msm_batch), G2 on the second stream beside the G1 ones (msmGroup). A
// second call's group stages while this one's MSMs run.
func (b *CUDA) proveBatched(ctx context.Context, k *cudaKey, sols []*synth.Solution, parts []prover.Parts,
	times *prover.PhaseTimes) error {
	stride := k.pk.NbWires + k.pk.DomainSize()
	for lo := 0; lo < len(sols); lo += k.batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		group := sols[lo:min(len(sols), lo+k.batch)]
		set, err := takeSlot(ctx, k.sets, times)
		if err != nil {
			return err
		}
		err = b.stageGroup(ctx, k, group, k.whBatch[set], stride, times)
		if err == nil {
			err = b.msmGroup(ctx, k, k.whBatch[set], len(group), stride, parts[lo:lo+len(group)], times)
		}
		k.sets <- set
		if err != nil {
			return err
		}
	}
	return nil
}

// stageGroup puts group's W, A, B, C on the device (W ‖ A into wh) in one gathered
// upload and computes their H for the group in one set of launches, under b.stage on s3.
func (b *CUDA) stageGroup(ctx context.Context, k *cudaKey, group []*synth.Solution, wh *devBuf, stride int,
	times *prover.PhaseTimes) error {
	t := time.Now()
	b.stage.lockAs(prover.Urgent(ctx))
	times.Wait += time.Since(t)
	err := b.usable(k)
	if err == nil {
		err = k.gatherAndHBatch(ctx, b.s3, wh, group, stride, times)
	}
	b.stage.Unlock()
	if err == nil {
		return nil
	}
	b.mu.Lock() // a fault's reset holds both locks, mu first
	defer b.mu.Unlock()
	return b.fault(err)
}

// msmGroup runs the four MSMs of a staged group of g solutions in wh under b.mu and
// writes their parts.
func (b *CUDA) msmGroup(ctx context.Context, k *cudaKey, wh *devBuf, g, stride int, parts []prover.Parts, times *prover.PhaseTimes) error {
	return b.locked(ctx, k, times, func() error { return b.msmBatch(k, wh, g, stride, parts, times) })
}

// locked runs f under b.mu on a usable k, the wait for the lock booked as Wait, and
// passes f's error through b.fault.
func (b *CUDA) locked(ctx context.Context, k *cudaKey, times *prover.PhaseTimes, f func() error) error {
	t := time.Now()
	b.mu.lockAs(prover.Urgent(ctx))
	defer b.mu.Unlock()
	times.Wait += time.Since(t)
	if err := b.usable(k); err != nil {
		return err
	}
	return b.fault(f())
}

func (b *CUDA) msmBatch(k *cudaKey, wh *devBuf, g, stride int, parts []prover.Parts, times *prover.PhaseTimes) error {
	pk, s := k.pk, b.s1
	n := pk.DomainSize()
	var b2 []bls12381.G2Jac
	var g2err error
	g2done := make(chan struct{})
	go func() {
		defer close(g2done)
		t := time.Now()
		b2, g2err = b.s2.msmG2Batch(k.b2, 0, k.b2.count, wh, 0, stride, g, k.idxB)
		times.MSMG2 += time.Since(t)
	}()
	// Each G1 MSM's fold on the host runs while the next MSM runs on the device.
	t2 := time.Now()
	var a, b1, kz func() []bls12381.G1Jac
	a, err := s.msmG1BatchAsync(k.a, 0, k.a.count, wh, 0, stride, g, k.idxA)
	if err != nil {
		err = fmt.Errorf("MSM A: %w", err)
	}
	if err == nil {
		if b1, err = s.msmG1BatchAsync(k.b1, 0, k.b1.count, wh, 0, stride, g, k.idxB); err != nil {
			err = fmt.Errorf("MSM B1: %w", err)
		}
	}
	if err == nil {
		// K‖Z over W[NbPublic:] ‖ h; the last h entry has no base (deg h ≤ n−2).
		if kz, err = s.msmG1BatchAsync(k.kz, 0, pk.NbPrivate()+n-1, wh, pk.NbPublic, stride, g, nil); err != nil {
			err = fmt.Errorf("MSM KZ: %w", err)
		}
	}
	// Every fold started is waited for, also after an error.
	wait := func(folded func() []bls12381.G1Jac) []bls12381.G1Jac {
		if folded == nil {
			return nil
		}
		return folded()
	}
	as, b1s, kzs := wait(a), wait(b1), wait(kz)
	times.MSMG1 += time.Since(t2)
	<-g2done // the slots are free for another group only when G2 is done with them
	if err != nil {
		return err
	}
	if g2err != nil {
		return fmt.Errorf("G2 MSM: %w", g2err)
	}
	for j := range g {
		parts[j] = prover.Parts{A: as[j], B1: b1s[j], K: kzs[j], B2: b2[j]}
	}
	return nil
}

// gatherAndHBatch puts a batch group's solutions on the device: for each run of up to
// hBatch solutions, one staged upload of all their W, A (into their slots of wh, j
// at j*stride) and B (into the H scratch), then their H in one set of launches (C is
// made on the device as A∘B).
// One solution at a time, each of a solution's four uploads waited for its own
// synchronization behind a single-threaded copy, and its H was some twenty launches
// too small to fill the device.
func (k *cudaKey) gatherAndHBatch(ctx context.Context, s *cudaStream, wh *devBuf, group []*synth.Solution, stride int,
	times *prover.PhaseTimes) error {
	nw, n := k.pk.NbWires, k.pk.DomainSize()
	pieces := make([]upload, 0, 4*k.hBatch)
	for lo := 0; lo < len(group); lo += k.hBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		run := group[lo:min(len(group), lo+k.hBatch)]
		t0 := time.Now()
		pieces = pieces[:0]
		for j, sol := range run {
			at := (lo + j) * stride
			pieces = append(pieces, upload{wh, at, sol.W}, upload{wh, at + nw, sol.A}, upload{k.hbB, j * n, sol.B})
		}
		if err := s.uploadGather(pieces); err != nil {
			return fmt.Errorf("solutions %d..%d: %w", lo, lo+len(run)-1, err)
		}
		t1 := time.Now()
		times.H2D += t1.Sub(t0)
		if err := s.computeHBatch(k.dom, wh, lo*stride+nw, stride, k.hbB, k.hcB, 0, n, len(run),
			k.pk.NbConstraints); err != nil {
			return fmt.Errorf("solutions %d..%d: %w", lo, lo+len(run)-1, err)
		}
		for _, sol := range run {
			sol.ReleaseAB()
		}
		times.NTT += time.Since(t1)
	}
	return nil
}

// uploadAndH uploads sol's W into wh at element off, its A after it and its B into
// the scratch hb at element hOff, computes h into wh after W (off+NbWires: W ‖ h; C
// is made in hc as A∘B, which a satisfied system has), and releases sol's A and B.
// A non-nil wUp is closed once W is on the device.
func (k *cudaKey) uploadAndH(s *cudaStream, sol *synth.Solution, wh *devBuf, off int, hb, hc *devBuf, hOff int,
	times *prover.PhaseTimes, wUp chan<- struct{}) error {
	nw := k.pk.NbWires
	t0 := time.Now()
	for i, u := range []upload{{wh, off, sol.W}, {wh, off + nw, sol.A}, {hb, hOff, sol.B}} {
		if err := s.uploadFr(u.b, u.off, u.v); err != nil {
			return err
		}
		if i == 0 && wUp != nil {
			close(wUp)
		}
	}
	t1 := time.Now()
	times.H2D += t1.Sub(t0)
	if err := s.computeHBatch(k.dom, wh, off+nw, 0, hb, hc, hOff, 0, 1, k.pk.NbConstraints); err != nil {
		return err
	}
	sol.ReleaseAB()
	times.NTT += time.Since(t1)
	return nil
}
