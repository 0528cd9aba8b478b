package worker

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/prover"
	cuzksql "github.com/cuzk/cuzk/sql"
	"github.com/cuzk/cuzk/synth"
)

// Catalog resolves circuit names to what proving needs. Implementations load each
// circuit and key once and keep it resident; calls are safe for concurrent use.
type Catalog interface {
	// Circuit returns the compiled constraint system of a circuit.
	Circuit(ctx context.Context, name string) (*synth.Compiled, error)
	// Prepare reads the circuit's proving key into memory (no device yet), or waits
	// for the read in progress; waited is the time this call spent on it, 0 when the
	// key was in memory. A batch calls it before it takes a device, so that a device
	// never waits for one circuit's key while another circuit's batch could run.
	Prepare(ctx context.Context, name string) (waited time.Duration, err error)
	// Key returns the circuit's proving key resident on backend b, loading it on first
	// use; loaded is the time this call spent loading it or waiting for a load already
	// in progress (a preload, another batch), 0 when it was resident.
	Key(ctx context.Context, name string, b prover.Backend) (k *ResidentKey, loaded time.Duration, err error)
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
)

// KeyState is where one key load stands.
type KeyState struct {
	Circuit string
	// Device is the backend the key is made resident on; "" for reading its files into
	// memory, which every device of the process then shares.
	Device  string
	State   string // KeyLoading, KeyResident or KeyFailed
	Bytes   int64  // bytes read so far (of the files, for Device "")
	Total   int64  // bytes the load reads (a dump is read twice: hashed, then decoded)
	Started time.Time
	Elapsed time.Duration // so far while loading, else how long the load took
	Err     string        // why it failed
}

// ResidentKey is a proving key made resident on one backend, with its verifying key.
type ResidentKey struct {
	PK  *prover.ProvingKey
	Key prover.Key
	VK  *groth16bls.VerifyingKey
	// VKDigest is the hex SHA-256 of VK's encoding (gnark WriteTo): stored with each
	// proof, it names the key version the proof verifies with.
	VKDigest string
}

// KeyLoader reads a circuit's gnark keys from wherever they are kept (a keys
// directory), telling progress (when not nil) the bytes read so far and in all.
type KeyLoader func(ctx context.Context, circuit string, progress func(read, total int64)) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error)

// CircuitLoader returns a compiled circuit by name (built-in or imported).
type CircuitLoader func(ctx context.Context, name string) (*synth.Compiled, error)

// NewCatalog is a Catalog that loads circuits and keys on first use and keeps them
// resident for the life of the process: one load per key and backend, however many
// requests ask at once.
func NewCatalog(circuits CircuitLoader, keys KeyLoader) Catalog {
	return &catalog{circuits: circuits, keys: keys, states: map[string]*KeyState{}}
}

type catalog struct {
	circuits CircuitLoader
	keys     KeyLoader

	resident loadOnce[*ResidentKey] // by circuit + "\x00" + backend name
	gnark    loadOnce[gnarkKeys]    // by circuit

	mu     sync.Mutex
	states map[string]*KeyState // by circuit + "\x00" + backend name ("" for the files)
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

func (c *catalog) Circuit(ctx context.Context, name string) (*synth.Compiled, error) {
	return c.circuits(ctx, name)
}

func (c *catalog) Prepare(ctx context.Context, name string) (time.Duration, error) {
	start := time.Now()
	_, loaded, err := c.prepare(ctx, name)
	if !loaded {
		return 0, err
	}
	return time.Since(start), err
}

func (c *catalog) prepare(ctx context.Context, name string) (gnarkKeys, bool, error) {
	return c.gnark.get(ctx, name, func(ctx context.Context) (gnarkKeys, error) {
		pk, vk, err := c.buildKey(ctx, name)
		return gnarkKeys{pk, vk}, err
	})
}

func (c *catalog) Key(ctx context.Context, name string, b prover.Backend) (*ResidentKey, time.Duration, error) {
	start := time.Now()
	key, loaded, err := c.resident.get(ctx, name+"\x00"+b.Name(), func(ctx context.Context) (*ResidentKey, error) {
		return c.load(ctx, name, b)
	})
	if !loaded {
		return key, 0, err
	}
	return key, time.Since(start), err
}

func (c *catalog) load(ctx context.Context, name string, b prover.Backend) (k *ResidentKey, err error) {
	st := c.begin(name, b.Name())
	defer func() { c.end(st, err) }()
	g, _, err := c.prepare(ctx, name)
	if err != nil {
		return nil, err
	}
	c.setBytes(st, c.fileBytes(name))
	dk, err := b.LoadKey(ctx, g.pk)
	if err != nil {
		return nil, fmt.Errorf("make key resident on %s: %w", b.Name(), err)
	}
	var enc bytes.Buffer
	if _, err := g.vk.WriteTo(&enc); err != nil {
		return nil, fmt.Errorf("encode verifying key of %s: %w", name, err)
	}
	return &ResidentKey{PK: g.pk, Key: dk, VK: g.vk, VKDigest: cuzksql.VKDigest(enc.Bytes())}, nil
}

// buildKey reads a circuit's key files and builds its ProvingKey, once however many
// backends (devices) load it concurrently (Prepare).
func (c *catalog) buildKey(ctx context.Context, name string) (ppk *prover.ProvingKey, vk *groth16bls.VerifyingKey, err error) {
	st := c.begin(name, "")
	defer func() { c.end(st, err) }()
	pk, vk, err := c.keys(ctx, name, func(read, total int64) {
		c.mu.Lock()
		st.Bytes, st.Total = read, total
		c.mu.Unlock()
	})
	if err != nil {
		return nil, nil, err
	}
	compiled, err := c.circuits(ctx, name)
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
	st.State = KeyResident
	if err != nil {
		st.State, st.Err = KeyFailed, err.Error()
	}
}

func (c *catalog) setBytes(st *KeyState, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.Bytes, st.Total = n, n
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
