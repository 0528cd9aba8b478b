package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/internal/pgtest"
	keydir "github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/setup"
	"github.com/cuzk/cuzk/worker"
)

// tierOf is circuit's entry of cat's key tiers.
func tierOf(t *testing.T, cat worker.Catalog, circuit string) worker.KeyTier {
	t.Helper()
	for _, k := range cat.(worker.KeyTierReporter).KeyTiers() {
		if k.Circuit == circuit {
			return k
		}
	}
	t.Fatalf("no tier entry for %s", circuit)
	return worker.KeyTier{}
}

// moves is how often circuit's key moved from one tier to another in cat.
func moves(cat worker.Catalog, circuit, from, to string) int64 {
	for _, m := range cat.(worker.KeyTierReporter).TierMoves() {
		if m.Circuit == circuit && m.From == from && m.To == to {
			return m.Count
		}
	}
	return 0
}

// hostBytes is what the host copy of circuit's test key holds.
func hostBytes(t *testing.T, circuit string) int64 {
	t.Helper()
	c, gpk, _ := keys.setup(t, circuit)
	pk, err := prover.NewProvingKey(circuit, gpk, c.NbConstraints())
	if err != nil {
		t.Fatal(err)
	}
	return pk.HostBytes()
}

func use(t *testing.T, cat worker.Catalog, circuit string, dev prover.Backend) *worker.ResidentKey {
	t.Helper()
	k, _, err := cat.Key(context.Background(), circuit, dev)
	if err != nil {
		t.Fatalf("key of %s: %v", circuit, err)
	}
	return k
}

// The device full, its least recently used idle key leaves it for the pinned tier
// (room there): the key's host copy stays, and its next use is an upload, not a read.
func TestDeviceEvictionKeepsThePinnedCopy(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	dev := newSmallDevice(1)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: 1 << 30})
	use(t, cat, a, dev).Release()
	kb := use(t, cat, b, dev)
	ta, tb := tierOf(t, cat, a), tierOf(t, cat, b)
	if !slices.Equal(ta.Tiers, []string{worker.TierPinned, worker.TierFile}) || ta.Bytes[worker.TierPinned] != hostBytes(t, a) ||
		ta.Bytes[worker.TierDevice] != 0 {
		t.Errorf("%s evicted from the device: %+v, want pinned (%d bytes) and file", a, ta, hostBytes(t, a))
	}
	if !slices.Equal(tb.Tiers, []string{worker.TierDevice, worker.TierPinned, worker.TierFile}) ||
		tb.Bytes[worker.TierDevice] != kb.Key.Bytes() || !slices.Equal(tb.Devices, []string{"cpu"}) || tb.LastUsed.IsZero() {
		t.Errorf("%s in use on the device: %+v, want device, pinned and file", b, tb)
	}
	if n := moves(cat, a, worker.TierDevice, worker.TierPinned); n != 1 {
		t.Errorf("%s moved device -> pinned %d times, want 1", a, n)
	}
	kb.Release()
	use(t, cat, a, dev).Release() // back on the device: an upload from its host copy
	if n := moves(cat, a, worker.TierFile, worker.TierPinned); n != 1 {
		t.Errorf("%s read from its files %d times, want 1 (its host copy was kept)", a, n)
	}
	if n := moves(cat, a, worker.TierPinned, worker.TierDevice); n != 2 {
		t.Errorf("%s moved pinned -> device %d times, want 2", a, n)
	}
}

// The pinned tier full, the least recently used copy that no device key uses drops
// to the file tier: its next use reads the files again.
func TestPinnedTierFullDropsTheLeastRecentlyUsedCopyToFile(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	limit := hostBytes(t, a) + hostBytes(t, b) - 1 // not both
	dev := newSmallDevice(1)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: limit})
	use(t, cat, a, dev).Release()
	kb := use(t, cat, b, dev) // a leaves the device, and then the pinned tier
	ta := tierOf(t, cat, a)
	if !slices.Equal(ta.Tiers, []string{worker.TierFile}) || ta.Bytes[worker.TierPinned] != 0 || ta.Bytes[worker.TierFile] != hostBytes(t, a) {
		t.Errorf("%s with no room in the pinned tier: %+v, want file only", a, ta)
	}
	if n := moves(cat, a, worker.TierPinned, worker.TierFile); n != 1 {
		t.Errorf("%s moved pinned -> file %d times, want 1", a, n)
	}
	if st := keyState(cat, a, ""); st.State != worker.KeyEvicted || !strings.Contains(st.Err, "host key memory") {
		t.Errorf("%s's files entry once its host copy was dropped: %+v", a, st)
	}
	kb.Release()
	use(t, cat, a, dev).Release()
	if n := moves(cat, a, worker.TierFile, worker.TierPinned); n != 2 {
		t.Errorf("%s read from its files %d times, want 2 (its host copy was dropped)", a, n)
	}
	// b, idle and least recently used, went the same way for a.
	if tb := tierOf(t, cat, b); !slices.Equal(tb.Tiers, []string{worker.TierFile}) {
		t.Errorf("%s once %s took its room: %+v, want file only", b, a, tb)
	}
}

// A key resident on a device holds its host copy: when the pinned tier has no room
// for another key's copy and no copy is free to go, the least recently used idle device
// key is evicted, and its copy goes with it (on the CPU backend, whose device never
// fills, this is what bounds the keys a worker holds).
func TestPinnedTierFullEvictsAnIdleDeviceKey(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	dev := newSmallDevice(4)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil,
		worker.CatalogOptions{HostKeyMemory: hostBytes(t, a) + hostBytes(t, b) - 1})
	use(t, cat, a, dev).Release()
	kb := use(t, cat, b, dev)
	defer kb.Release()
	if ta := tierOf(t, cat, a); !slices.Equal(ta.Tiers, []string{worker.TierFile}) {
		t.Errorf("%s idle on the device, no room for %s's host copy: %+v, want file only", a, b, ta)
	}
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyEvicted || !strings.Contains(st.Err, "host key memory") {
		t.Errorf("%s on the device: %+v, want evicted for the host key memory", a, st)
	}
	if tb := tierOf(t, cat, b); !slices.Equal(tb.Tiers, []string{worker.TierDevice, worker.TierPinned, worker.TierFile}) {
		t.Errorf("%s: %+v, want device, pinned and file", b, tb)
	}
	if _, _, resident := dev.counts(); resident != 1 {
		t.Errorf("%d keys resident on the device, want 1", resident)
	}
}

// A key larger than the whole host limit is admitted over it, after the idle copies,
// but evicts no idle device key for it: the limit could never hold it.
func TestKeyLargerThanHostLimitEvictsNoDeviceKey(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	dev := newSmallDevice(4)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: hostBytes(t, b) - 1})
	use(t, cat, a, dev).Release()
	use(t, cat, b, dev).Release()
	for _, c := range []string{a, b} {
		if tc := tierOf(t, cat, c); !slices.Equal(tc.Tiers, []string{worker.TierDevice, worker.TierPinned, worker.TierFile}) {
			t.Errorf("%s: %+v, want device, pinned and file", c, tc)
		}
	}
	if _, _, resident := dev.counts(); resident != 2 {
		t.Errorf("%d keys resident, want both", resident)
	}
}

// A device key that needs no host copy (a CUDA key: its bases are on the device)
// holds the key's shell, not its host copy: the copy leaves the pinned tier by LRU
// while the key stays resident and proves, and once evicted from the device the key is
// in its file alone.
func TestDeviceKeyWithoutItsHostCopy(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	compiled, _, _ := keys.setup(t, a)
	keys.setup(t, b)
	dev := newSmallDevice(2)
	dev.hostFree = true
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: hostBytes(t, b)})
	ka := use(t, cat, a, dev)
	if len(ka.PK.KZ) != 0 || len(ka.PK.PK.G1.A) != 0 {
		t.Errorf("%s's resident key holds %d K/Z and %d A bases, want its shell", a, len(ka.PK.KZ), len(ka.PK.PK.G1.A))
	}
	ka.Release()
	kb := use(t, cat, b, dev) // its copy takes a's room in the pinned tier
	kb.Release()
	if ta := tierOf(t, cat, a); !slices.Equal(ta.Tiers, []string{worker.TierDevice, worker.TierFile}) {
		t.Errorf("%s resident, its host copy dropped for %s's: %+v, want device and file", a, b, ta)
	}
	if tb := tierOf(t, cat, b); !slices.Equal(tb.Tiers, []string{worker.TierDevice, worker.TierPinned, worker.TierFile}) {
		t.Errorf("%s: %+v, want device, pinned and file", b, tb)
	}
	ka = use(t, cat, a, dev) // resident: no read, no upload
	proveWith(t, dev, compiled, ka, 3)
	ka.Release()
	if n := moves(cat, a, worker.TierFile, worker.TierPinned); n != 1 {
		t.Errorf("%s read %d times, want 1", a, n)
	}
	if n := moves(cat, a, worker.TierPinned, worker.TierFile); n != 1 {
		t.Errorf("%s's copy dropped %d times, want 1", a, n)
	}
	// a, least recently used on the full device, leaves it for c: to its file alone.
	const c = "synthetic-k8"
	keys.setup(t, c)
	use(t, cat, b, dev).Release()
	use(t, cat, c, dev).Release()
	if ta := tierOf(t, cat, a); !slices.Equal(ta.Tiers, []string{worker.TierFile}) {
		t.Errorf("%s evicted from the device without a host copy: %+v, want file only", a, ta)
	}
	if n := moves(cat, a, worker.TierDevice, worker.TierFile); n != 1 {
		t.Errorf("%s moved device -> file %d times, want 1", a, n)
	}
}

// A key in use is never evicted, from the device or from the pinned tier: with room
// for no host copy at all, the copies of keys resident on a device stay.
func TestKeyInUseKeepsItsTiers(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	keys.setup(t, "synthetic-k8")
	dev := newSmallDevice(2)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: 1})
	ka, kb := use(t, cat, a, dev), use(t, cat, b, dev)
	for _, c := range []string{a, b} {
		if tc := tierOf(t, cat, c); !slices.Equal(tc.Tiers, []string{worker.TierDevice, worker.TierPinned, worker.TierFile}) {
			t.Errorf("%s in use, pinned tier past its limit: %+v, want device, pinned and file", c, tc)
		}
	}
	if _, _, err := cat.Key(context.Background(), "synthetic-k8", dev); !errors.Is(err, prover.ErrOutOfMemory) {
		t.Errorf("a third key with both in use on a device with room for two: %v, want out of memory", err)
	}
	ka.Release()
	kb.Release()
	// Idle, still resident: the device keys hold their host copies until evicted.
	if tc := tierOf(t, cat, a); !slices.Contains(tc.Tiers, worker.TierPinned) {
		t.Errorf("%s resident and idle: %+v, want its host copy kept", a, tc)
	}
}

// A key whose bases do not all fit its device streams them from pinned host memory:
// the tiers say how much, beside its device and pinned bytes.
func TestStreamedKeyStaysPinned(t *testing.T) {
	const a = "synthetic-k6"
	keys.setup(t, a)
	dev := newSmallDevice(1)
	dev.streamed = 12345
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: 1})
	k := use(t, cat, a, dev)
	k.Release()
	ta := tierOf(t, cat, a)
	if ta.Streamed != 12345 || !slices.Equal(ta.Tiers, []string{worker.TierDevice, worker.TierPinned, worker.TierFile}) {
		t.Errorf("streamed key: %+v, want 12345 bytes streamed, on device and pinned", ta)
	}
}

// pinnedReserved is what b's reservations of pinned host memory hold now.
func pinnedReserved(b *worker.Budget) int64 {
	n, _ := b.KindBytes(worker.KindPinned)
	return n
}

// A streamed key's pinned bases are counted in the memory budget (KindPinned) while its
// device key is loaded, and given back when it is evicted or lost to a device reset.
func TestStreamedBasesCountedInTheBudget(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	dev := newSmallDevice(1)
	dev.hostFree = true
	budget := worker.NewBudget(1 << 30)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{})
	worker.CountIn(cat, budget)

	dev.streamed = 12345
	use(t, cat, a, dev).Release()
	if got := pinnedReserved(budget); got != 12345 {
		t.Fatalf("pinned %d bytes with %s resident and streamed, want 12345", got, a)
	}
	dev.streamed = 0
	use(t, cat, b, dev).Release() // evicts a: the device has room for one key
	if got := pinnedReserved(budget); got != 0 {
		t.Errorf("pinned %d bytes after %s was evicted for %s (which streams nothing), want 0", got, a, b)
	}
	dev.streamed = 777
	use(t, cat, a, dev).Release() // evicts b, streams a again
	if got := pinnedReserved(budget); got != 777 {
		t.Errorf("pinned %d bytes with %s resident again, want 777", got, a)
	}
	cat.DeviceReset(dev, errors.New("test reset"))
	if got, peak := budget.KindBytes(worker.KindPinned); got != 0 || peak != 12345 {
		t.Errorf("pinned %d bytes (peak %d) after a device reset, want 0 (peak 12345)", got, peak)
	}

	// A reservation that fits only without an idle streamed key evicts it rather than
	// wait for it forever.
	use(t, cat, a, dev).Release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := budget.ReserveFor(ctx, worker.KindSynthesis, budget.Total()-budget.Reserved()+777/2)
	if err != nil {
		t.Fatalf("reservation that needs the idle streamed key's memory: %v", err)
	}
	defer res.Release()
	if got := pinnedReserved(budget); got != 0 {
		t.Errorf("pinned %d bytes after a reservation needed them, want 0", got)
	}
	if st := keyState(cat, a, "cpu"); st.State != worker.KeyEvicted || !strings.Contains(st.Err, "streamed") {
		t.Errorf("%s after a reservation needed its pinned memory: %+v, want evicted for it", a, st)
	}
	if _, _, resident := dev.counts(); resident != 0 {
		t.Errorf("%d keys resident after the eviction, want 0", resident)
	}
}

// A budget that can never hold a key's streamed bases beside its host copy refuses the
// key at once with an error naming the bytes and the budget; one that could but is full
// drops idle host copies to make room, and when that is not enough refuses the load
// (retried), naming the bytes missing. A refused key is closed and holds nothing.
func TestStreamedBasesRefusedPastTheBudget(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	keys.setup(t, a)
	keys.setup(t, b)
	dev := newSmallDevice(2)
	dev.hostFree = true
	const total = 1 << 30
	budget := worker.NewBudget(total)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{})
	worker.CountIn(cat, budget)
	ctx := context.Background()
	refused := func(when string) error {
		t.Helper()
		_, _, err := cat.Key(ctx, a, dev)
		if err == nil {
			t.Fatalf("%s: key loaded, want refused", when)
		}
		if got := pinnedReserved(budget); got != 0 {
			t.Errorf("%s: pinned %d bytes after the refusal, want 0", when, got)
		}
		if _, _, resident := dev.counts(); resident != 0 {
			t.Errorf("%s: %d keys resident after the refusal, want 0 (closed)", when, resident)
		}
		if st := keyState(cat, a, "cpu"); st.State != worker.KeyFailed || st.Err != err.Error() {
			t.Errorf("%s: key state %+v, want failed with %q", when, st, err)
		}
		return err
	}

	dev.streamed = total
	err := refused("streamed bases as large as the budget")
	var tooLarge *worker.TooLargeError
	if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "1073741824 bytes of bases") ||
		!strings.Contains(err.Error(), "budget of 1073741824 bytes") {
		t.Errorf("streamed bases as large as the budget: %v, want a *TooLargeError naming the bytes and the budget", err)
	}

	// Both host copies held and idle, the devices' keys gone.
	dev.streamed = 0
	use(t, cat, a, dev).Release()
	copyA := keyReserved(budget)
	use(t, cat, b, dev).Release()
	copyB := keyReserved(budget) - copyA
	cat.DeviceReset(dev, errors.New("test reset"))
	streamed := copyB / 2
	dev.streamed = streamed
	// Room for a's streamed bases only once b's idle copy goes.
	syn, err := budget.ReserveFor(ctx, worker.KindSynthesis, total-copyA-copyB-streamed/2)
	if err != nil {
		t.Fatal(err)
	}
	defer syn.Release()
	use(t, cat, a, dev).Release()
	if got := pinnedReserved(budget); got != streamed {
		t.Errorf("pinned %d bytes, want %d", got, streamed)
	}
	if tb := tierOf(t, cat, b); !slices.Equal(tb.Tiers, []string{worker.TierFile}) {
		t.Errorf("%s's idle copy with the budget short: %+v, want dropped to file", b, tb)
	}
	if ta := tierOf(t, cat, a); !slices.Equal(ta.Tiers, []string{worker.TierDevice, worker.TierPinned, worker.TierFile}) {
		t.Errorf("%s streamed: %+v, want its own copy kept", a, ta)
	}
	if budget.Reserved() > total {
		t.Errorf("budget holds %d bytes, more than its %d", budget.Reserved(), total)
	}

	// No idle copy left to drop: the load is refused, and succeeds once room is back.
	cat.DeviceReset(dev, errors.New("test reset"))
	more, err := budget.ReserveFor(ctx, worker.KindSynthesis, total-budget.Reserved()-streamed/2)
	if err != nil {
		t.Fatal(err)
	}
	err = refused("budget short by half the streamed bases")
	want := fmt.Sprintf("%d bytes of bases of the proving key of %s", streamed, a)
	if errors.As(err, &tooLarge) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), fmt.Sprintf("%d bytes short", streamed-streamed/2)) {
		t.Errorf("budget short: %v, want a retryable error naming %q and the bytes short", err, want)
	}
	more.Release()
	use(t, cat, a, dev).Release()
	if got := pinnedReserved(budget); got != streamed {
		t.Errorf("pinned %d bytes once room is back, want %d", got, streamed)
	}
}

// dirLoader is a KeyLoader reading keys from d as cuzk's worker does, checking each
// against the digest *registered names (none when "").
func dirLoader(d keydir.Dir, registered *atomic.Value) worker.KeyLoader {
	return func(_ context.Context, name string, progress func(read, total int64)) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
		digest, _ := registered.Load().(string)
		pk, vk, _, err := d.LoadWith(name, digest, keydir.LoadOptions{Progress: progress})
		return pk, vk, err
	}
}

// A truncated or corrupt pk.dump, or one that is not the registered key, fails the
// move that reads it, file to pinned, with an error naming the file and what is wrong:
// on the first load, and on a load after the key dropped back to the file tier. The
// key is never made resident from it.
func TestDamagedKeyFileFailsEachReadPrecisely(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	d := keydir.Dir(t.TempDir())
	for _, c := range []string{a, b} {
		compiled, err := keys.reg.Get(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		// As cuzk setup writes a key: pk.dump is the key, with no pk.bin to fall back on.
		if _, _, err := d.Setup(context.Background(), c, compiled.CS, setup.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	dump := d.Path(a, keydir.DumpFile)
	good, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dev := newSmallDevice(1)
	var registered atomic.Value
	cat := worker.NewCatalogWith(keys.reg.Get, dirLoader(d, &registered), nil,
		worker.CatalogOptions{HostKeyMemory: hostBytes(t, a) + hostBytes(t, b) - 1})

	check := func(when, want string) {
		t.Helper()
		_, _, err := cat.Key(ctx, a, dev)
		if err == nil || !strings.Contains(err.Error(), dump) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want an error naming %s and %q", when, err, dump, want)
		}
		if st := keyState(cat, a, ""); st.State != worker.KeyFailed {
			t.Errorf("%s: files entry %+v, want failed", when, st)
		}
		if ta := tierOf(t, cat, a); !slices.Equal(ta.Tiers, []string{worker.TierFile}) {
			t.Errorf("%s: %+v, want file only", when, ta)
		}
	}
	if err := os.WriteFile(dump, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	check("first load, truncated", "truncated")

	if err := os.WriteFile(dump, good, 0o644); err != nil {
		t.Fatal(err)
	}
	use(t, cat, a, dev).Release()
	use(t, cat, b, dev).Release() // a: device -> pinned -> file (no room for both)
	if ta := tierOf(t, cat, a); !slices.Equal(ta.Tiers, []string{worker.TierFile}) {
		t.Fatalf("%s after %s took the device and the pinned tier: %+v", a, b, ta)
	}
	bad := slices.Clone(good)
	bad[len(bad)/2] ^= 1
	if err := os.WriteFile(dump, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	check("reload from the file tier, one bit flipped", "corrupt")
	if err := os.WriteFile(dump, good[:len(good)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	check("reload from the file tier, truncated", "truncated")
	// An intact dump that is not the registered key (cuzk.circuits.pk_digest).
	if err := os.WriteFile(dump, good, 0o644); err != nil {
		t.Fatal(err)
	}
	registered.Store(strings.Repeat("0", 64))
	check("reload from the file tier, another key's digest registered", "not the registered key")
}

// Through a worker against Postgres, a key's host copy is counted in the worker's
// memory budget, under the default host key limit (half the budget).
func TestHostCopyCountedInTheWorkerBudget(t *testing.T) {
	db := pgtest.New(t)
	const a = "synthetic-k6"
	register(t, db.Pool, a)
	cat := worker.NewCatalog(keys.reg.Get, keys.load, nil)
	rw := startWorkerCatalog(t, db.Pool, cat, nil, nil, nil)
	insertRequests(t, db.Pool, "t", a, 1, 1)
	waitSucceeded(t, db.Pool, "t", 1)
	budget := rw.w.Budget()
	compiled, _, _ := keys.setup(t, a)
	// The copy with the CPU backend's buffers for it, reserved once ahead of the
	// request's synthesis and held while the copy is.
	if got, want := keyReserved(budget), worker.HeldBytes(compiled, nil)-compiled.HeldBytes(); got != want {
		t.Errorf("budget holds %d bytes of keys after the request, want %d: the key's host copy and its buffers", got, want)
	}
	if tiers := cat.(worker.KeyTierReporter).KeyTiers(); len(tiers) != 1 || tiers[0].Bytes[worker.TierPinned] != hostBytes(t, a) {
		t.Errorf("key tiers %+v, want %s's host copy of %d bytes", tiers, a, hostBytes(t, a))
	}
	if got := cat.(worker.KeyTierReporter).HostKeyLimit(); got != budget.Total()/2 {
		t.Errorf("host key limit %d, want half the budget %d", got, budget.Total()/2)
	}
}

// keyReserved is what b's reservations of keys hold now.
func keyReserved(b *worker.Budget) int64 {
	n, _ := b.KindBytes(worker.KindKey)
	return n
}

// A batch whose key is resident on every device proves with it as it is: a device key
// that needs no host copy, whose copy left the pinned tier for another key's, is not
// read from its files again for the batch (nor its memory reserved).
func TestBatchOfAResidentKeyReadsNoHostCopy(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	db := pgtest.New(t)
	for _, c := range []string{a, b} {
		register(t, db.Pool, c)
	}
	dev := newSmallDevice(2)
	dev.hostFree = true
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: hostBytes(t, b)})
	startWorkerCatalog(t, db.Pool, cat, []worker.Prover{{Backend: dev}}, nil, nil)

	for _, step := range []struct{ prefix, circuit string }{{"a1", a}, {"b1", b}, {"a2", a}} {
		insertRequests(t, db.Pool, step.prefix, step.circuit, 1, 2)
		waitSucceeded(t, db.Pool, step.prefix, 1)
		verifyStored(t, db.Pool, step.prefix+"-1")
		if step.prefix == "b1" {
			if ta := tierOf(t, cat, a); !slices.Equal(ta.Tiers, []string{worker.TierDevice, worker.TierFile}) {
				t.Fatalf("%s resident, its host copy dropped for %s's: %+v, want device and file", a, b, ta)
			}
		}
	}
	if n := moves(cat, a, worker.TierFile, worker.TierPinned); n != 1 {
		t.Errorf("%s read %d times, want once: resident for its second batch", a, n)
	}
	if loads, _, _ := dev.counts(); loads != 2 {
		t.Errorf("%d device loads, want 2 (one per key)", loads)
	}
	if tb := tierOf(t, cat, b); !slices.Contains(tb.Tiers, worker.TierPinned) {
		t.Errorf("%s: %+v, want its host copy kept (no read of %s's took its room)", b, tb, a)
	}
}

// A key prepared for a batch whose host copy left the pinned tier before the batch got
// its device is loaded from the copy the tier holds, read again when it holds none: a
// device key never proves from a copy the budget no longer counts.
func TestPreparedKeyWhoseCopyLeftThePinnedTier(t *testing.T) {
	const a, b = "synthetic-k6", "synthetic-k7"
	compiled, _, _ := keys.setup(t, a)
	keys.setup(t, b)
	cat := worker.NewCatalogWith(keys.reg.Get, keys.load, nil, worker.CatalogOptions{HostKeyMemory: hostBytes(t, b)})
	ctx := context.Background()
	prepare := func(circuit string) *worker.PreparedKey {
		t.Helper()
		p, _, err := cat.Prepare(ctx, circuit)
		if err != nil {
			t.Fatalf("prepare %s: %v", circuit, err)
		}
		return p
	}
	dropA := func() {
		t.Helper()
		prepare(b) // b's copy takes a's room
		if ta := tierOf(t, cat, a); slices.Contains(ta.Tiers, worker.TierPinned) {
			t.Fatalf("%s's copy kept beside %s's: %+v", a, b, ta)
		}
	}

	// Dropped, none read since: read again.
	stale := prepare(a)
	dropA()
	dev := newSmallDevice(2)
	k, _, err := cat.Resident(ctx, stale, dev)
	if err != nil {
		t.Fatal(err)
	}
	proveWith(t, dev, compiled, k, 3)
	k.Release()
	if n := moves(cat, a, worker.TierFile, worker.TierPinned); n != 2 {
		t.Errorf("%s read %d times, want 2 (its copy dropped before the load)", a, n)
	}

	// Dropped and read again since: loaded from the copy read since, as a key loaded
	// without a batch's is.
	cat.DeviceReset(dev, errors.New("test reset")) // a's device key holds its copy
	stale = prepare(a)
	dropA()
	fresh := prepare(a)
	k, _, err = cat.Resident(ctx, stale, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	dev2 := newSmallDevice(1)
	dev2.name = "cpu:1"
	other, _, err := cat.Resident(ctx, fresh, dev2)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if k.PK != other.PK {
		t.Error("a key loaded from a prepared copy the pinned tier no longer holds")
	}
	if n := moves(cat, a, worker.TierFile, worker.TierPinned); n != 3 {
		t.Errorf("%s read %d times, want 3", a, n)
	}
}
