package worker

import (
	"bytes"
	"context"
	"fmt"
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
	// Key returns the circuit's proving key resident on backend b, loading it on first
	// use; loaded is the time this call spent loading it or waiting for a load already
	// in progress (a preload, another batch), 0 when it was resident.
	Key(ctx context.Context, name string, b prover.Backend) (k *ResidentKey, loaded time.Duration, err error)
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

// KeyLoader reads a circuit's gnark keys from wherever they are kept (a keys directory).
type KeyLoader func(ctx context.Context, circuit string) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error)

// CircuitLoader returns a compiled circuit by name (built-in or imported).
type CircuitLoader func(ctx context.Context, name string) (*synth.Compiled, error)

// NewCatalog is a Catalog that loads circuits and keys on first use and keeps them
// resident for the life of the process: one load per key and backend, however many
// requests ask at once.
func NewCatalog(circuits CircuitLoader, keys KeyLoader) Catalog {
	return &catalog{circuits: circuits, keys: keys}
}

type catalog struct {
	circuits CircuitLoader
	keys     KeyLoader

	resident loadOnce[*ResidentKey] // by circuit + "\x00" + backend name
	gnark    loadOnce[gnarkKeys]    // by circuit
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
func (o *loadOnce[V]) get(ctx context.Context, key string, load func() (V, error)) (V, bool, error) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[string]*onceEntry[V]{}
	}
	e, ok := o.m[key]
	if !ok {
		e = &onceEntry[V]{done: make(chan struct{})}
		o.m[key] = e
	}
	o.mu.Unlock()
	if !ok {
		e.v, e.err = load()
		if e.err != nil {
			o.mu.Lock()
			delete(o.m, key)
			o.mu.Unlock()
		}
		close(e.done)
		return e.v, true, e.err
	}
	select {
	case <-e.done:
		return e.v, false, e.err
	default:
	}
	select {
	case <-e.done:
		return e.v, true, e.err
	case <-ctx.Done():
		var zero V
		return zero, false, ctx.Err()
	}
}

func (c *catalog) Circuit(ctx context.Context, name string) (*synth.Compiled, error) {
	return c.circuits(ctx, name)
}

func (c *catalog) Key(ctx context.Context, name string, b prover.Backend) (*ResidentKey, time.Duration, error) {
	start := time.Now()
	key, loaded, err := c.resident.get(ctx, name+"\x00"+b.Name(), func() (*ResidentKey, error) {
		return c.load(ctx, name, b)
	})
	if !loaded {
		return key, 0, err
	}
	return key, time.Since(start), err
}

func (c *catalog) load(ctx context.Context, name string, b prover.Backend) (*ResidentKey, error) {
	ppk, vk, err := c.gnarkKeys(ctx, name)
	if err != nil {
		return nil, err
	}
	k, err := b.LoadKey(ctx, ppk)
	if err != nil {
		return nil, fmt.Errorf("make key resident on %s: %w", b.Name(), err)
	}
	var enc bytes.Buffer
	if _, err := vk.WriteTo(&enc); err != nil {
		return nil, fmt.Errorf("encode verifying key of %s: %w", name, err)
	}
	return &ResidentKey{PK: ppk, Key: k, VK: vk, VKDigest: cuzksql.VKDigest(enc.Bytes())}, nil
}

// gnarkKeys reads a circuit's key files and builds its ProvingKey once, however many
// backends (devices) load it concurrently.
func (c *catalog) gnarkKeys(ctx context.Context, name string) (*prover.ProvingKey, *groth16bls.VerifyingKey, error) {
	k, _, err := c.gnark.get(ctx, name, func() (gnarkKeys, error) {
		pk, vk, err := c.buildKey(ctx, name)
		return gnarkKeys{pk, vk}, err
	})
	return k.pk, k.vk, err
}

func (c *catalog) buildKey(ctx context.Context, name string) (*prover.ProvingKey, *groth16bls.VerifyingKey, error) {
	pk, vk, err := c.keys(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	compiled, err := c.circuits(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	ppk, err := prover.NewProvingKey(name, pk, compiled.NbConstraints())
	if err != nil {
		return nil, nil, err
	}
	return ppk, vk, nil
}
