package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// Catalog resolves circuit names to what proving needs. Implementations load each
// circuit and key once and keep it resident; calls are safe for concurrent use.
type Catalog interface {
	// Circuit returns the compiled constraint system of a circuit.
	Circuit(ctx context.Context, name string) (*synth.Compiled, error)
	// Key returns the circuit's proving key resident on backend b, loading it on first
	// use; loaded is the time this call spent loading (0 when it was resident).
	Key(ctx context.Context, name string, b prover.Backend) (k *ResidentKey, loaded time.Duration, err error)
}

// ResidentKey is a proving key made resident on one backend, with its verifying key.
type ResidentKey struct {
	PK  *prover.ProvingKey
	Key prover.Key
	VK  *groth16bls.VerifyingKey
}

// KeyLoader reads a circuit's gnark keys from wherever they are kept (a keys directory).
type KeyLoader func(ctx context.Context, circuit string) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error)

// CircuitLoader returns a compiled circuit by name (built-in or imported).
type CircuitLoader func(ctx context.Context, name string) (*synth.Compiled, error)

// NewCatalog is a Catalog that loads circuits and keys on first use and keeps them
// resident for the life of the process: one load per key and backend, however many
// requests ask at once.
func NewCatalog(circuits CircuitLoader, keys KeyLoader) Catalog {
	return &catalog{circuits: circuits, keys: keys, resident: map[string]*keyEntry{}, gnark: map[string]*gnarkEntry{}}
}

type catalog struct {
	circuits CircuitLoader
	keys     KeyLoader

	mu       sync.Mutex
	resident map[string]*keyEntry   // circuit + "\x00" + backend name
	gnark    map[string]*gnarkEntry // circuit
}

type keyEntry struct {
	done chan struct{}
	key  *ResidentKey
	err  error
}

type gnarkEntry struct {
	done chan struct{}
	pk   *prover.ProvingKey // built once: NewProvingKey rearranges gnark's key on first use
	vk   *groth16bls.VerifyingKey
	err  error
}

func (c *catalog) Circuit(ctx context.Context, name string) (*synth.Compiled, error) {
	return c.circuits(ctx, name)
}

func (c *catalog) Key(ctx context.Context, name string, b prover.Backend) (*ResidentKey, time.Duration, error) {
	id := name + "\x00" + b.Name()
	c.mu.Lock()
	e, ok := c.resident[id]
	if !ok {
		e = &keyEntry{done: make(chan struct{})}
		c.resident[id] = e
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		if e.err != nil {
			return nil, 0, e.err
		}
		return e.key, 0, nil
	}

	start := time.Now()
	e.key, e.err = c.load(ctx, name, b)
	if e.err != nil {
		// Forget failures so the next attempt (after a retry backoff) loads again.
		c.mu.Lock()
		delete(c.resident, id)
		c.mu.Unlock()
	}
	close(e.done)
	return e.key, time.Since(start), e.err
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
	return &ResidentKey{PK: ppk, Key: k, VK: vk}, nil
}

// gnarkKeys reads a circuit's key files and builds its ProvingKey once, however many
// backends (devices) load it concurrently.
func (c *catalog) gnarkKeys(ctx context.Context, name string) (*prover.ProvingKey, *groth16bls.VerifyingKey, error) {
	c.mu.Lock()
	e, ok := c.gnark[name]
	if !ok {
		e = &gnarkEntry{done: make(chan struct{})}
		c.gnark[name] = e
	}
	c.mu.Unlock()
	if !ok {
		e.pk, e.vk, e.err = c.buildKey(ctx, name)
		if e.err != nil {
			c.mu.Lock()
			delete(c.gnark, name)
			c.mu.Unlock()
		}
		close(e.done)
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	return e.pk, e.vk, e.err
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
