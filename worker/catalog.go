package worker

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// Catalog resolves circuit names to what proving needs. Implementations load each
// circuit and key once and keep it resident until a backend runs out of memory for
// another key or loses its device; calls are safe for concurrent use.
type Catalog interface {
	// Circuit returns the compiled constraint system of a circuit and a func that ends
	// this use of it. A circuit no use holds may be unloaded to make room in the
	// worker's memory budget, least recently used first.
	Circuit(ctx context.Context, name string) (c *synth.Compiled, release func(), err error)
	// Prepare makes the circuit's proving key ready for a batch: it reads the key into
	// memory (no device yet), or waits for the read in progress, unless the key is
	// resident on every device already (a device key needs no host copy then, or holds
	// it). waited is the time this call spent on it, 0 when the key was in memory. A
	// batch calls it before it takes a device, so that a device never waits for one
	// circuit's key while another circuit's batch could run.
	Prepare(ctx context.Context, name string) (k *PreparedKey, waited time.Duration, err error)
	// Key returns the circuit's proving key resident on backend b, loading it on first
	// use; loaded is the time this call spent loading it or waiting for a load already
	// in progress (a preload, another batch), 0 when it was resident. The key stays in
	// use, never evicted, until the caller calls k.Release, once per successful call.
	Key(ctx context.Context, name string, b prover.Backend) (k *ResidentKey, loaded time.Duration, err error)
	// Resident is Key for a key that Prepare made ready: a key not resident on b is
	// loaded from the host copy Prepare read, not fetched again.
	Resident(ctx context.Context, p *PreparedKey, b prover.Backend) (k *ResidentKey, loaded time.Duration, err error)
	// DeviceReset forgets every key resident on b, whose device was reset (a Prove
	// returned prover.ErrDeviceReset): the next Key call loads each again. It returns
	// how many keys it dropped.
	DeviceReset(b prover.Backend, cause error) int
	KeyStates
}

// KeyStates says which proving keys a process has loaded, is loading, or failed to
// load (for /readyz and the dashboard).
type KeyStates interface {
	// KeyStates is one entry per circuit read from disk and per circuit and device,
	// by circuit, then device.
	KeyStates() []KeyState
}

// States of a key load.
const (
	KeyLoading  = "loading"
	KeyResident = "resident"
	KeyFailed   = "failed" // the last load failed; the next request for it loads again
	// KeyEvicted: the key was resident and was freed, to make room for another key of
	// its device or because the device was reset; the next request for it loads again.
	KeyEvicted = "evicted"
)

// KeyState is where one key load stands.
type KeyState struct {
	Circuit string
	// Device is the backend the key is made resident on; "" for reading its files into
	// memory, which every device of the process then shares.
	Device string
	State  string // KeyLoading, KeyResident, KeyFailed or KeyEvicted
	Bytes  int64  // bytes read so far (of the files, for Device "")
	Total  int64  // bytes the load reads (a dump is read twice: hashed, then decoded)
	// Resident is the memory the key holds on its device once resident (prover.Key's
	// Bytes: bases, precomputed copies, per-proof buffers), of which Precomputed is the
	// bases' precomputed copies (prover.PrecomputedKey); both 0 before and for the files.
	Resident, Precomputed int64
	Started               time.Time
	Elapsed               time.Duration // so far while loading, else how long the load took
	Err                   string        // why it failed or was evicted
}

// PreparedKey is a circuit's proving key made ready for a batch by Catalog.Prepare,
// before the batch takes a device.
type PreparedKey struct {
	Circuit string
	host    *gnarkKeys // the host copy Prepare read; nil when the key was resident on every device
}

// ResidentKey is a proving key made resident on one backend, with its verifying key.
type ResidentKey struct {
	PK  *prover.ProvingKey
	Key prover.Key
	VK  *groth16bls.VerifyingKey
	// VKDigest is the hex SHA-256 of VK's encoding (gnark WriteTo): stored with each
	// proof, it names the key version the proof verifies with.
	VKDigest string

	c       *catalog // nil for a key not made by a catalog: Release does nothing
	id      string   // circuit + "\x00" + backend name
	backend string
	state   *KeyState // its load's entry of the catalog's states
	users   int       // Key calls not yet released; guarded by c.mu, as are the rest
	lastUse time.Time // for LRU eviction
	dropped bool      // evicted or lost to a device reset: Close when users reaches 0
	closed  bool      // closed, its hold on the host copy ended
	// hostFree: the device key needs no host copy (prover.HostFreeKey); PK is the
	// key's Shell and the host copy is not held by it.
	hostFree bool
	// streamed counts the pinned host memory of its streamed bases (KindPinned) until
	// it is closed; nil when none or without a budget.
	streamed *Reservation
}

// Release ends one use of the key begun by Catalog.Key: once no use is left, the
// catalog may evict it. PK, VK and VKDigest stay valid after it.
func (k *ResidentKey) Release() {
	if k.c == nil {
		return
	}
	k.c.mu.Lock()
	if k.users <= 0 {
		k.c.mu.Unlock()
		panic("ResidentKey.Release called more often than Catalog.Key")
	}
	k.users--
	k.lastUse = time.Now()
	closeNow := k.dropped && k.users == 0
	if k.users == 0 {
		close(k.c.freed)
		k.c.freed = make(chan struct{})
	}
	k.c.mu.Unlock()
	if closeNow {
		k.c.close(k)
	}
}

// KeyLoader reads a circuit's gnark keys from wherever they are kept (a keys
// directory), telling progress (when not nil) the bytes read so far and in all.
type KeyLoader func(ctx context.Context, circuit string, progress func(read, total int64)) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error)

// CircuitLoader returns a compiled circuit by name (built-in or imported).
type CircuitLoader func(ctx context.Context, name string) (*synth.Compiled, error)

// NewCatalog is a Catalog that loads circuits and keys on first use and keeps them
// resident: one load per key and backend, however many requests ask at once. When a
// backend's LoadKey runs out of device memory, the catalog frees the least recently
// used key of that backend not in use and tries again. It logs evictions and device
// resets to log (nil: slog's default).
func NewCatalog(circuits CircuitLoader, keys KeyLoader, log *slog.Logger) Catalog {
	return NewCatalogWith(circuits, keys, log, CatalogOptions{})
}

// CatalogOptions tune a catalog's key tiers and compiled circuits.
type CatalogOptions struct {
	// HostKeyMemory is the most bytes the keys' host copies (the pinned tier) may
	// hold together; past it the least recently used copy not in use is dropped (when
	// none is left, the least recently used idle device key that proves from its copy
	// is evicted with it),
	// and its key is read from its files again when next needed. 0: half of the
	// worker's memory budget (no limit for a catalog outside a worker).
	HostKeyMemory int64
	// Unload is how the catalog lets go of a compiled circuit that it unloads to make
	// room in the memory budget: the loader's own cache must drop it too (for example
	// synth.Registry.Unload), or its memory is never freed.
	Unload func(name string)
}

// NewCatalogWith is NewCatalog with options. A worker built on the catalog counts the
// compiled circuits it holds and the host copies of its keys in its memory budget.
func NewCatalogWith(circuits CircuitLoader, keys KeyLoader, log *slog.Logger, o CatalogOptions) Catalog {
	if log == nil {
		log = slog.Default()
	}
	c := &catalog{circuits: circuits, keys: keys, log: log, states: map[string]*KeyState{},
		keysBy: map[string]*ResidentKey{}, resets: map[string]int{}, freed: make(chan struct{}),
		held: map[string]*heldCircuit{}, unload: o.Unload}
	c.host = newHostTier(o.HostKeyMemory, c.freeDevice)
	return c
}

// freeDevice evicts the least recently used key not in use of any device that holds
// its host copy, other than circuit keep's, so that the copy can leave the pinned tier;
// false when there is none, or under a preload (which evicts nothing).
func (c *catalog) freeDevice(ctx context.Context, keep string) bool {
	if ctx.Value(noEviction{}) != nil {
		return false
	}
	c.mu.Lock()
	var lru *ResidentKey
	for _, k := range c.keysBy {
		if k.users == 0 && !k.hostFree && k.PK.Circuit != keep && (lru == nil || k.lastUse.Before(lru.lastUse)) {
			lru = k
		}
	}
	if lru == nil {
		c.mu.Unlock()
		return false
	}
	c.dropLocked(lru, "least recently used key not in use, freed with its host copy for the host key memory limit")
	c.mu.Unlock()
	c.log.Info("proving key evicted", "circuit", lru.PK.Circuit, "device", lru.backend, "bytes", lru.Key.Bytes(),
		"why", "host key memory full loading "+keep, "idle_ms", time.Since(lru.lastUse).Milliseconds())
	c.close(lru)
	return true
}

type catalog struct {
	circuits CircuitLoader
	keys     KeyLoader
	log      *slog.Logger
	unload   func(name string) // the loader's cache drops a compiled circuit (UnloadCircuit)
	// budget, when set (useBudget), counts the compiled circuits held, the proving keys'
	// host copies and their backends' host buffers.
	budget   *Budget
	backends []prover.Backend

	resident loadOnce[*ResidentKey] // by circuit + "\x00" + backend name
	gnark    loadOnce[gnarkKeys]    // by circuit: the host copies (see host)
	host     *hostTier

	mu     sync.Mutex
	states map[string]*KeyState    // by circuit + "\x00" + backend name ("" for the files)
	keysBy map[string]*ResidentKey // the keys resident now, by circuit + "\x00" + backend name
	resets map[string]int          // device resets, by backend name
	// freed is closed (and replaced) whenever a key's last use ends, for a load that
	// waits for a key in use to become evictable.
	freed chan struct{}
	held  map[string]*heldCircuit // compiled circuits counted in the budget, by name
}

type gnarkKeys struct {
	pk *prover.ProvingKey // built once: NewProvingKey rearranges gnark's key on first use
	vk *groth16bls.VerifyingKey
}

// loadOnce loads each key's value once at a time, shares it with every caller that
// asks meanwhile or later, and forgets failures so that a later call (after a retry
// backoff) loads again.
type loadOnce[V any] struct {
	mu sync.Mutex
	m  map[string]*onceEntry[V]
}

type onceEntry[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// get returns key's value, and whether this call loaded it or waited for its load.
// The load runs on its own goroutine with ctx's values but not its cancellation: it is
// shared, so the caller that started it giving up (a cancelled request) must not fail
// the others waiting for it; each caller stops waiting when its own ctx ends.
func (o *loadOnce[V]) get(ctx context.Context, key string, load func(context.Context) (V, error)) (V, bool, error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[string]*onceEntry[V]{}
	}
	e, ok := o.m[key]
	if !ok {
		e = &onceEntry[V]{done: make(chan struct{})}
		o.m[key] = e
		go func() {
			e.v, e.err = recovered(context.WithoutCancel(ctx), load)
			if e.err != nil {
				o.mu.Lock()
				delete(o.m, key)
				o.mu.Unlock()
			}
			close(e.done)
		}()
	}
	o.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			return e.v, false, e.err
		default:
		}
	}
	select {
	case <-e.done:
		return e.v, true, e.err
	case <-ctx.Done():
		var zero V
		return zero, true, ctx.Err()
	}
}

// peek is key's value when it is loaded, without loading it.
func (o *loadOnce[V]) peek(key string) (V, bool) {
	o.mu.Lock()
	e, ok := o.m[key]
	o.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			if e.err == nil {
				return e.v, true
			}
		default:
		}
	}
	var zero V
	return zero, false
}

// forget drops key's value if it is loaded and match says so, so that the next get
// loads it again; a load in progress is left alone.
func (o *loadOnce[V]) forget(key string, match func(V) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.m[key]
	if !ok {
		return
	}
	select {
	case <-e.done:
		if e.err == nil && match(e.v) {
			delete(o.m, key)
		}
	default:
	}
}

// recovered is load(ctx) with a panic turned into its error: no caller's recover
// covers a load's own goroutine.
func recovered[V any](ctx context.Context, load func(context.Context) (V, error)) (v V, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return load(ctx)
}

func (c *catalog) Circuit(ctx context.Context, name string) (*synth.Compiled, func(), error) {
	comp, err := c.circuits(ctx, name)
	if err != nil || c.budget == nil {
		return comp, func() {}, err
	}
	if err := c.fits(comp); err != nil {
		return nil, nil, err
	}
	if h := c.useCircuit(name, comp, nil); h != nil {
		return comp, c.circuitReleaser(h), nil
	}
	// Loaded (or unloaded and loaded again) without a reservation: count it now.
	res, err := reserveAs(ctx, c.budget, KindCircuit, comp.HeldBytes())
	if err != nil {
		return nil, nil, fmt.Errorf("memory for compiled circuit %s: %w", name, err)
	}
	return comp, c.circuitReleaser(c.useCircuit(name, comp, res)), nil
}

// fits fails with a *TooLargeError when the budget can never hold a synthesis of comp
// beside what stays while it runs: the process, staging buffers, the compiled circuit
// and its proving key.
func (c *catalog) fits(comp *synth.Compiled) error {
	need, circuit, key := synth.EstimateBytes(comp), comp.HeldBytes(), c.keyHostBytes(comp)
	if room := c.budget.Room(); need+circuit+key > room {
		return fmt.Errorf("synthesis %d, compiled circuit %d and proving key %d bytes: %w", need, circuit, key,
			&TooLargeError{Need: need + circuit + key, Total: c.budget.Total(), Held: c.budget.Total() - room})
	}
	return nil
}

// heldCircuit is a compiled circuit counted in the budget.
type heldCircuit struct {
	name    string
	c       *synth.Compiled
	res     *Reservation
	users   int       // uses not yet released; guarded by catalog.mu, as is lastUse
	lastUse time.Time // for LRU unloading
}

// useCircuit begins a use of comp, counted in the budget: with res nil, when it is
// counted already (else it returns nil); with res, counting it with res unless
// another call counted it meanwhile (res is then given back).
func (c *catalog) useCircuit(name string, comp *synth.Compiled, res *Reservation) *heldCircuit {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.held[name]
	switch {
	case h != nil && h.c == comp:
		if res != nil {
			res.Release()
		}
	case res == nil:
		return nil
	default:
		if h != nil { // a circuit set up again under the same name: the old one goes
			h.res.Release()
		}
		h = &heldCircuit{name: name, c: comp, res: res}
		c.held[name] = h
	}
	h.users++
	h.lastUse = time.Now()
	return h
}

func (c *catalog) circuitReleaser(h *heldCircuit) func() {
	return sync.OnceFunc(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		h.users--
		h.lastUse = time.Now()
	})
}

// reclaim unloads compiled circuits that no use holds, least recently used first,
// until need bytes are freed or none is left, then evicts idle device keys whose
// streamed bases hold pinned memory in the budget the same way (Budget.SetReclaimer):
// a reservation never waits for a key that nothing would evict.
func (c *catalog) reclaim(need int64) {
	if freed := c.unloadCircuits(need); freed < need {
		c.evictStreamed(need - freed)
	}
}

// evictStreamed evicts device keys not in use that hold pinned memory for streamed
// bases, least recently used first, until need bytes are freed or none is left.
func (c *catalog) evictStreamed(need int64) {
	c.mu.Lock()
	var idle []*ResidentKey
	for _, k := range c.keysBy {
		if k.users == 0 && k.streamed != nil {
			idle = append(idle, k)
		}
	}
	gone, _ := leastRecentlyUsed(idle, need, func(k *ResidentKey) (time.Time, int64) { return k.lastUse, k.streamed.Bytes() })
	for _, k := range gone {
		c.dropLocked(k, "least recently used key not in use, freed for its streamed bases' pinned memory (memory budget short)")
	}
	c.mu.Unlock()
	for _, k := range gone {
		c.log.Info("proving key evicted", "circuit", k.PK.Circuit, "device", k.backend, "bytes", k.Key.Bytes(),
			"why", "memory budget short", "streamed_bytes", k.streamed.Bytes(), "idle_ms", time.Since(k.lastUse).Milliseconds())
		c.close(k)
	}
}

// leastRecentlyUsed is the first of items, least recently used first, that hold need
// bytes together (all when they hold less), and the bytes they hold.
func leastRecentlyUsed[T any](items []T, need int64, use func(T) (last time.Time, bytes int64)) ([]T, int64) {
	slices.SortFunc(items, func(a, b T) int {
		la, _ := use(a)
		lb, _ := use(b)
		return la.Compare(lb)
	})
	var freed int64
	for i, x := range items {
		if freed >= need {
			return items[:i], freed
		}
		_, n := use(x)
		freed += n
	}
	return items, freed
}

// unloadCircuits unloads compiled circuits that no use holds, least recently used
// first, until need bytes are freed or none is left; it returns the bytes freed.
func (c *catalog) unloadCircuits(need int64) int64 {
	c.mu.Lock()
	var idle []*heldCircuit
	for _, h := range c.held {
		if h.users == 0 {
			idle = append(idle, h)
		}
	}
	gone, freed := leastRecentlyUsed(idle, need, func(h *heldCircuit) (time.Time, int64) { return h.lastUse, h.res.Bytes() })
	for _, h := range gone {
		delete(c.held, h.name)
	}
	c.mu.Unlock()
	for _, h := range gone {
		if c.unload != nil {
			c.unload(h.name)
		}
		c.log.Info("compiled circuit unloaded to make room in the memory budget", "circuit", h.name,
			"bytes", h.res.Bytes(), "idle_ms", time.Since(h.lastUse).Milliseconds())
		h.res.Release()
	}
	return freed
}

// useBudget makes the catalog count what it holds in b: the compiled circuits held
// (unloading idle ones when b needs room) and the keys' host copies (hostTier), each
// with the host buffers that each of backends makes for it (prover.HostMemory).
func (c *catalog) useBudget(b *Budget, backends []prover.Backend) {
	c.budget = b
	c.backends = backends
	b.SetReclaimer(c.reclaim)
	c.host.countIn(b)
}

// keyHostBytes is what a circuit's proving key holds in the budget while its host copy
// is held: the copy as prover.NewProvingKey holds it (G1 bases A and B per wire, G2 B
// per wire, K per private wire and Z per domain point, its infinity markers, the
// domain's twiddles, and K and Z copied into one slice (KZ), whose old copies are
// garbage once it is made), at least hostKeyBound, and each backend's buffers for the
// key (keyBuffers). It is known before the key is read.
func (c *catalog) keyHostBytes(comp *synth.Compiled) int64 {
	const g1, g2 = 96, 192
	wires := int64(comp.NbWires())
	priv := wires - int64(comp.NbPublic())
	domain := int64(1) << bits.Len64(uint64(comp.NbConstraints())-1)
	// The domain's precomputed twiddles: about a field element per point.
	n := 2*wires*g1 + wires*g2 + 2*(priv+domain)*g1 + 2*wires + domain*fr.Bytes
	return max(n, hostKeyBound(wires, int64(comp.NbConstraints()))) + c.keyBuffers(comp)
}

// keyBuffers is the host memory the backends' LoadKey allocates for a key of comp
// beside the ProvingKey (prover.HostMemory).
func (c *catalog) keyBuffers(comp *synth.Compiled) int64 {
	domain := 1 << bits.Len64(uint64(comp.NbConstraints())-1)
	var n int64
	for _, b := range c.backends {
		if h, ok := b.(prover.HostMemory); ok {
			n += h.KeyHostBytes(comp.NbWires(), comp.NbPublic(), domain)
		}
	}
	return n
}

func (c *catalog) Prepare(ctx context.Context, name string) (*PreparedKey, time.Duration, error) {
	if c.residentEverywhere(name) {
		return &PreparedKey{Circuit: name}, 0, nil
	}
	start := time.Now()
	g, loaded, err := c.prepare(ctx, name)
	var waited time.Duration
	if loaded {
		waited = time.Since(start)
	}
	if err != nil {
		return nil, waited, err
	}
	return &PreparedKey{Circuit: name, host: &g}, waited, nil
}

// residentEverywhere says whether name's key is resident on every device the catalog
// counts host buffers for (useBudget), the worker's: no batch then needs its host copy
// read, which a device key that needs none (prover.HostFreeKey) may have let go.
func (c *catalog) residentEverywhere(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.backends) == 0 {
		return false
	}
	for _, b := range c.backends {
		if c.keysBy[name+"\x00"+b.Name()] == nil {
			return false
		}
	}
	return true
}

func (c *catalog) prepare(ctx context.Context, name string) (gnarkKeys, bool, error) {
	return c.gnark.get(ctx, name, func(ctx context.Context) (gnarkKeys, error) {
		pk, vk, err := c.buildKey(ctx, name)
		if err != nil {
			return gnarkKeys{}, err
		}
		comp, err := c.circuits(ctx, name)
		if err != nil {
			return gnarkKeys{}, err
		}
		if err := c.host.admit(ctx, name, pk.HostBytes(), c.keyHostBytes(comp), func() { c.dropHost(name) }); err != nil {
			return gnarkKeys{}, fmt.Errorf("memory for the host copy of the proving key of %s: %w", name, err)
		}
		return gnarkKeys{pk, vk}, nil
	})
}

// reserveHost reserves the memory of name's host copy before it is read, unless it
// is held or reserved already (hostTier.reserveAhead) or the key is resident on every
// device (Prepare reads no copy then), at keyHostBytes, which the read then holds: the
// one reservation of a key ahead of its syntheses.
func (c *catalog) reserveHost(ctx context.Context, name string) error {
	if c.residentEverywhere(name) {
		return nil
	}
	compiled, err := c.circuits(ctx, name)
	if err != nil {
		return err
	}
	if err := c.host.reserveAhead(ctx, name, c.keyHostBytes(compiled)); err != nil {
		return fmt.Errorf("memory for the host copy of the proving key of %s: %w", name, err)
	}
	return nil
}

// hostKeyBound bounds the host memory of the proving key of a circuit of wires wires
// and constraints constraints, known before the key is read: every wire with A, B (G1
// and G2) and K bases and two infinity markers, and a Z base per point of the domain
// (prover.ProvingKey.HostBytes once read).
func hostKeyBound(wires, constraints int64) int64 {
	const g1, g2 = 96, 192
	domain := int64(1)
	for domain < constraints {
		domain <<= 1
	}
	return wires*(3*g1+g2+2) + domain*g1
}

// dropHost forgets circuit's host copy, dropped from the pinned tier: the next use
// reads its files again. Called by the host tier, with its lock held.
func (c *catalog) dropHost(circuit string) {
	c.gnark.forget(circuit, func(gnarkKeys) bool { return true })
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.states[circuit+"\x00"]; st != nil && st.State == KeyResident {
		st.State, st.Err = KeyEvicted, "host copy dropped: least recently used key not in use, for the host key memory limit or the memory budget"
	}
}

func (c *catalog) Key(ctx context.Context, name string, b prover.Backend) (*ResidentKey, time.Duration, error) {
	return c.Resident(ctx, &PreparedKey{Circuit: name}, b)
}

func (c *catalog) Resident(ctx context.Context, p *PreparedKey, b prover.Backend) (*ResidentKey, time.Duration, error) {
	start := time.Now()
	id := p.Circuit + "\x00" + b.Name()
	waited := false
	for {
		key, loaded, err := c.resident.get(ctx, id, func(ctx context.Context) (*ResidentKey, error) {
			return c.load(ctx, p, b)
		})
		waited = waited || loaded
		if err == nil && !c.use(key) {
			// Evicted between its load and this call: load it again.
			c.resident.forget(id, func(v *ResidentKey) bool { return v == key })
			continue
		}
		if !waited {
			return key, 0, err
		}
		return key, time.Since(start), err
	}
}

// use begins a use of k, unless it was dropped.
func (c *catalog) use(k *ResidentKey) bool {
	c.mu.Lock()
	if k.dropped {
		c.mu.Unlock()
		return false
	}
	k.users++
	k.lastUse = time.Now()
	c.mu.Unlock()
	c.host.touch(k.PK.Circuit) // not under c.mu: the host tier calls into the catalog under its own lock
	return true
}

// load makes p's key resident on b from the host copy that Prepare read for p, or
// from the one in the pinned tier (read again when it was dropped).
func (c *catalog) load(ctx context.Context, p *PreparedKey, b prover.Backend) (k *ResidentKey, err error) {
	name := p.Circuit
	st := c.begin(name, b.Name())
	defer func() { c.end(st, err) }()
	var g gnarkKeys
	prepared := p.host
	for {
		if prepared != nil {
			g, prepared = *prepared, nil
		} else if g, _, err = c.prepare(ctx, name); err != nil {
			return nil, err
		}
		if c.host.hold(name) {
			if cur, ok := c.gnark.peek(name); ok && cur.pk == g.pk {
				break
			}
			c.host.unhold(name) // the tier holds a copy read since: load from that one
			continue
		}
		// Dropped from the host tier since it was read: read it again.
	}
	holding := true // the load's hold on the host copy, which a device key may keep
	defer func() {
		if err != nil && holding {
			c.host.unhold(name)
		}
	}()
	c.setBytes(st, c.fileBytes(name))
	var enc bytes.Buffer
	if _, err := g.vk.WriteTo(&enc); err != nil {
		return nil, fmt.Errorf("encode verifying key of %s: %w", name, err)
	}
	for {
		resets := c.resetCount(b.Name())
		dk, err := c.loadKey(ctx, name, b, g.pk)
		if err != nil {
			return nil, err
		}
		k = &ResidentKey{PK: g.pk, Key: dk, VK: g.vk, VKDigest: store.VKDigest(enc.Bytes()),
			c: c, id: name + "\x00" + b.Name(), backend: b.Name(), state: st, lastUse: time.Now()}
		if hf, ok := dk.(prover.HostFreeKey); ok {
			k.PK, k.hostFree = g.pk.Shell(), true
			hf.UseShell(k.PK)
		}
		if c.register(k, resets) {
			if k.hostFree {
				c.host.unhold(name) // the host copy stays while the pinned tier has room
				holding = false
			}
			if err := c.countStreamed(k); err != nil {
				if !c.refuse(k, err) {
					holding = false // closed by an eviction meanwhile, which ended the hold
				}
				return nil, err
			}
			var pre int64
			attrs := []any{"circuit", name, "device", b.Name(), "bytes", dk.Bytes()}
			if pk, ok := dk.(prover.PrecomputedKey); ok {
				pre = pk.PrecomputedBytes()
				attrs = append(attrs, "precomputed_bytes", pre)
			}
			c.setResident(st, dk.Bytes(), pre)
			c.host.move(name, TierPinned, TierDevice)
			c.log.Info("proving key resident", attrs...)
			return k, nil
		}
		// The device was reset while the key loaded: it may be gone with the others.
		if cerr := k.Key.Close(); cerr != nil {
			c.log.Warn("closing a key loaded across a device reset", "circuit", name, "device", b.Name(), "err", cerr)
		}
	}
}

// countStreamed reserves, as KindPinned, the pinned host memory that holds the bases
// of k that did not fit its device (prover.StreamedKey), until k is closed. The backend
// allocated it while loading, so it is counted at once, ahead of the reservations that
// wait (a batch's syntheses wait for this very key); when that takes the budget past
// its total, idle compiled circuits and idle host copies of other keys are dropped to
// make room. It fails when the budget can never hold the streamed bases beside the
// key's own host copy (a *TooLargeError), or when it stays over after that (retried).
func (c *catalog) countStreamed(k *ResidentKey) error {
	s, ok := k.Key.(prover.StreamedKey)
	if !ok || c.budget == nil || s.StreamedBytes() <= 0 {
		return nil
	}
	n, name := s.StreamedBytes(), k.PK.Circuit
	what := fmt.Sprintf("pinned host memory for the %d bytes of bases of the proving key of %s that do not fit %s", n, name, k.backend)
	copyBytes := c.host.reservedFor(name)
	if room := c.budget.Room(); n+copyBytes > room {
		return fmt.Errorf("%s, beside its host copy of %d bytes: %w", what, copyBytes,
			&TooLargeError{Need: n + copyBytes, Total: c.budget.Total(), Held: c.budget.Total() - room})
	}
	res := c.budget.ReserveHeld(KindPinned, n)
	if over := c.budget.Reserved() - c.budget.Total(); over > 0 {
		c.unloadCircuits(over)
	}
	for c.budget.Reserved() > c.budget.Total() && c.host.dropIdle(name) {
	}
	if over := c.budget.Reserved() - c.budget.Total(); over > 0 {
		res.Release()
		return fmt.Errorf("%s: the memory budget of %d bytes is %d bytes short beside what requests, circuits and keys in use hold (raise --mem-budget)",
			what, c.budget.Total(), over)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k.closed { // evicted by another load meanwhile
		res.Release()
		return nil
	}
	k.streamed = res
	return nil
}

// refuse drops and closes k, just loaded, whose load fails with err; false when an
// eviction closed it already (close, which ends its hold on the host copy).
func (c *catalog) refuse(k *ResidentKey, err error) bool {
	c.mu.Lock()
	c.dropLocked(k, err.Error())
	closed := k.closed
	k.closed = true
	c.mu.Unlock()
	if closed {
		return false
	}
	if cerr := k.Key.Close(); cerr != nil {
		c.log.Warn("closing a proving key refused for memory", "circuit", k.PK.Circuit, "device", k.backend, "err", cerr)
	}
	return true
}

func (c *catalog) resetCount(backend string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resets[backend]
}

// register records k as resident, unless its device was reset since resets was read.
func (c *catalog) register(k *ResidentKey, resets int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resets[k.backend] != resets {
		return false
	}
	c.keysBy[k.id] = k
	return true
}

// noEviction, as a context value, makes a key load that finds its device full fail
// instead of evicting: a preload must not push out keys that requests are using.
type noEviction struct{}

// loadKey makes circuit's key resident on b, evicting b's least recently used keys not
// in use while b is out of memory for it.
func (c *catalog) loadKey(ctx context.Context, circuit string, b prover.Backend, pk *prover.ProvingKey) (prover.Key, error) {
	evicted := 0
	for {
		dk, err := b.LoadKey(ctx, pk)
		switch {
		case err == nil:
			return dk, nil
		case errors.Is(err, prover.ErrDeviceReset):
			c.DeviceReset(b, err)
			return nil, fmt.Errorf("make key resident on %s: %w", b.Name(), err)
		case !errors.Is(err, prover.ErrOutOfMemory):
			return nil, fmt.Errorf("make key resident on %s: %w", b.Name(), err)
		}
		if ctx.Value(noEviction{}) != nil {
			return nil, fmt.Errorf("make key resident on %s (a preload evicts no key): %w", b.Name(), err)
		}
		victim, idle, busy, freed := c.evict(b.Name())
		if victim == nil && busy > 0 && prover.ProveLanes(b) > 1 {
			// The device's other keys are in use by its other provers (a backend with
			// several lanes): one of them becomes evictable when its batch is proven.
			// With one lane, a key in use is held by someone else, maybe for long: fail.
			select {
			case <-freed:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("make key resident on %s (waiting for one of its %d keys in use): %w", b.Name(), busy, context.Cause(ctx))
			}
		}
		if victim == nil {
			return nil, fmt.Errorf("make key resident on %s (%d keys evicted, none left that is not in use): %w", b.Name(), evicted, err)
		}
		evicted++
		c.log.Info("proving key evicted", "circuit", victim.PK.Circuit, "device", b.Name(), "bytes", victim.Key.Bytes(),
			"why", "device out of memory loading "+circuit, "idle_ms", idle.Milliseconds())
		c.close(victim)
	}
}

// evict drops the least recently used key of backend that is not in use, and returns
// it (to be closed) with the time since its last use, or nil when there is none; then
// busy counts backend's keys in use, and freed is closed when a use ends.
func (c *catalog) evict(backend string) (victim *ResidentKey, idle time.Duration, busy int, freed <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lru *ResidentKey
	for _, k := range c.keysBy {
		if k.backend != backend {
			continue
		}
		if k.users > 0 {
			busy++
		} else if lru == nil || k.lastUse.Before(lru.lastUse) {
			lru = k
		}
	}
	if lru == nil {
		return nil, 0, busy, c.freed
	}
	c.dropLocked(lru, "least recently used key of its device, freed for another key (device out of memory)")
	return lru, time.Since(lru.lastUse), busy, c.freed
}

func (c *catalog) DeviceReset(b prover.Backend, cause error) int {
	c.mu.Lock()
	c.resets[b.Name()]++
	var closeNow []*ResidentKey
	n := 0
	for _, k := range c.keysBy {
		if k.backend != b.Name() {
			continue
		}
		n++
		c.dropLocked(k, "device reset: "+cause.Error())
		if k.users == 0 {
			closeNow = append(closeNow, k)
		}
	}
	c.mu.Unlock()
	c.log.Warn("device reset, its resident proving keys dropped", "device", b.Name(), "keys", n, "err", cause)
	for _, k := range closeNow {
		c.close(k)
	}
	return n
}

// dropLocked removes k from the catalog, so that the next Key call for it loads it
// again; c.mu is held. Closing it is the caller's (or the last Release's).
func (c *catalog) dropLocked(k *ResidentKey, why string) {
	k.dropped = true
	delete(c.keysBy, k.id)
	c.resident.forget(k.id, func(v *ResidentKey) bool { return v == k })
	k.state.State, k.state.Err = KeyEvicted, why
	k.state.Resident, k.state.Precomputed = 0, 0
}

// close frees a dropped key's device memory and ends its hold on the key's host copy,
// which stays in the pinned tier while the tier has room.
func (c *catalog) close(k *ResidentKey) {
	c.mu.Lock()
	closed := k.closed
	k.closed = true
	streamed := k.streamed
	c.mu.Unlock()
	if closed {
		return
	}
	if err := k.Key.Close(); err != nil {
		c.log.Warn("closing evicted proving key", "circuit", k.PK.Circuit, "device", k.backend, "err", err)
	}
	if streamed != nil {
		streamed.Release() // its pinned memory is freed with the key
	}
	pinned := false
	if k.hostFree {
		_, pinned, _, _ = c.host.state(k.PK.Circuit)
	} else {
		pinned = c.host.unhold(k.PK.Circuit)
	}
	if pinned {
		c.host.move(k.PK.Circuit, TierDevice, TierPinned)
	} else {
		c.host.move(k.PK.Circuit, TierDevice, TierFile)
	}
}

// buildKey reads a circuit's key files and builds its ProvingKey, once however many
// backends (devices) load it concurrently (Prepare).
func (c *catalog) buildKey(ctx context.Context, name string) (ppk *prover.ProvingKey, vk *groth16bls.VerifyingKey, err error) {
	st := c.begin(name, "")
	defer func() { c.end(st, err) }()
	// The key needs the circuit's constraint count: its compiled system is read beside
	// the key's files, not after them (each takes seconds at Filecoin sizes).
	type loaded struct {
		c   *synth.Compiled
		err error
	}
	circuit := make(chan loaded, 1)
	go func() {
		comp, err := recovered(ctx, func(ctx context.Context) (*synth.Compiled, error) { return c.circuits(ctx, name) })
		circuit <- loaded{comp, err}
	}()
	pk, vk, err := c.keys(ctx, name, func(read, total int64) {
		c.mu.Lock()
		st.Bytes, st.Total = read, total
		c.mu.Unlock()
	})
	cl := <-circuit
	if err != nil {
		return nil, nil, err
	}
	compiled, err := cl.c, cl.err
	if err != nil {
		return nil, nil, err
	}
	ppk, err = prover.NewProvingKey(name, pk, compiled.NbConstraints())
	if err != nil {
		return nil, nil, err
	}
	return ppk, vk, nil
}

// begin records that a load of circuit onto device ("": its files) started.
func (c *catalog) begin(circuit, device string) *KeyState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &KeyState{Circuit: circuit, Device: device, State: KeyLoading, Started: time.Now()}
	c.states[circuit+"\x00"+device] = st
	return st
}

// end records how the load st ended.
func (c *catalog) end(st *KeyState, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.Elapsed = time.Since(st.Started)
	switch {
	case err != nil:
		st.State, st.Err = KeyFailed, err.Error()
	case st.State == KeyLoading: // not evicted already
		st.State = KeyResident
	}
}

func (c *catalog) setBytes(st *KeyState, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.Bytes, st.Total = n, n
}

func (c *catalog) setResident(st *KeyState, bytes, precomputed int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.Resident, st.Precomputed = bytes, precomputed
}

// fileBytes is how much the read of circuit's key files read.
func (c *catalog) fileBytes(circuit string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.states[circuit+"\x00"]; st != nil {
		return st.Total
	}
	return 0
}

func (c *catalog) KeyStates() []KeyState {
	c.mu.Lock()
	out := make([]KeyState, 0, len(c.states))
	for _, st := range c.states {
		s := *st
		if s.State == KeyLoading {
			s.Elapsed = time.Since(s.Started)
		}
		out = append(out, s)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b KeyState) int {
		return cmp.Or(cmp.Compare(a.Circuit, b.Circuit), cmp.Compare(a.Device, b.Device))
	})
	return out
}

// KeyTiers implements KeyTierReporter: one entry per circuit whose key was read, by
// circuit.
func (c *catalog) KeyTiers() []KeyTier {
	type dev struct {
		name            string
		bytes, streamed int64
	}
	c.mu.Lock()
	names := map[string]bool{}
	for _, st := range c.states {
		if st.Device == "" {
			names[st.Circuit] = true
		}
	}
	devs := map[string][]dev{}
	for _, k := range c.keysBy {
		d := dev{name: k.backend, bytes: k.Key.Bytes()}
		if s, ok := k.Key.(prover.StreamedKey); ok {
			d.streamed = s.StreamedBytes()
		}
		devs[k.PK.Circuit] = append(devs[k.PK.Circuit], d)
	}
	c.mu.Unlock()
	out := make([]KeyTier, 0, len(names))
	for name := range names {
		t := KeyTier{Circuit: name, Bytes: map[string]int64{}}
		for _, d := range devs[name] {
			t.Devices = append(t.Devices, d.name)
			t.Bytes[TierDevice] += d.bytes
			t.Streamed += d.streamed
		}
		slices.Sort(t.Devices)
		if len(t.Devices) > 0 {
			t.Tiers = append(t.Tiers, TierDevice)
		}
		hostBytes, held, read, last := c.host.state(name)
		if held {
			t.Tiers = append(t.Tiers, TierPinned)
			t.Bytes[TierPinned] = hostBytes
		}
		t.Tiers = append(t.Tiers, TierFile)
		t.Bytes[TierFile] = read
		t.LastUsed = last
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b KeyTier) int { return cmp.Compare(a.Circuit, b.Circuit) })
	return out
}

// TierMoves implements KeyTierReporter.
func (c *catalog) TierMoves() []TierMove { return c.host.tierMoves() }

// HostKeyLimit implements KeyTierReporter.
func (c *catalog) HostKeyLimit() int64 { return c.host.limitBytes() }
