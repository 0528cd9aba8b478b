package prover

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
)

// LoadedKey is a circuit's key resident on a backend, with its verifying key.
type LoadedKey struct {
	Manifest Manifest
	PK       *ProvingKey
	Key      Key // PK made resident on the store's backend
	VK       *groth16bls.VerifyingKey
	VKBytes  []byte // vk.bin: gnark VerifyingKey.WriteTo, as stored in cuzk.circuits.vk
	// LoadTime is what loading took (read, verify digests, LoadKey) when it happened.
	LoadTime time.Duration
}

// KeyStore loads each circuit's keys from a keys directory (see Files) once per
// process and keeps them resident on one backend. Concurrent Gets of the same circuit
// wait for a single load. The time a Get call takes is the attempt's srs_ms: the
// full load for the caller that triggered it, the wait for its callers, about zero
// once resident.
type KeyStore struct {
	dir     string
	backend Backend

	mu      sync.Mutex
	entries map[string]*keyEntry
}

type keyEntry struct {
	done chan struct{} // closed when the load finished
	key  *LoadedKey
	err  error
}

// NewKeyStore returns a store reading keys under dir and loading them onto b.
func NewKeyStore(dir string, b Backend) *KeyStore {
	return &KeyStore{dir: dir, backend: b, entries: map[string]*keyEntry{}}
}

// Dir is the keys directory.
func (s *KeyStore) Dir() string { return s.dir }

// Get returns circuit's resident key, loading it on first use. A failed load is not
// remembered: the next Get tries again. Cancelling ctx abandons the wait, not a load
// other callers may be waiting for.
func (s *KeyStore) Get(ctx context.Context, circuit string) (*LoadedKey, error) {
	s.mu.Lock()
	e, ok := s.entries[circuit]
	if !ok {
		e = &keyEntry{done: make(chan struct{})}
		s.entries[circuit] = e
		go s.load(context.WithoutCancel(ctx), circuit, e)
	}
	s.mu.Unlock()

	select {
	case <-e.done:
		return e.key, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *KeyStore) load(ctx context.Context, circuit string, e *keyEntry) {
	e.key, e.err = LoadKey(ctx, s.dir, circuit, s.backend)
	if e.err != nil {
		s.mu.Lock()
		delete(s.entries, circuit)
		s.mu.Unlock()
	}
	close(e.done)
}

// Evict releases circuit's resident key once any load in progress has finished. The
// caller must ensure no proof is using it.
func (s *KeyStore) Evict(circuit string) error {
	s.mu.Lock()
	e, ok := s.entries[circuit]
	delete(s.entries, circuit)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	<-e.done
	if e.err != nil {
		return nil
	}
	return e.key.Key.Close()
}

// Close evicts every key.
func (s *KeyStore) Close() error {
	s.mu.Lock()
	names := make([]string, 0, len(s.entries))
	for n := range s.entries {
		names = append(names, n)
	}
	s.mu.Unlock()
	var first error
	for _, n := range names {
		if err := s.Evict(n); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// LoadKey reads circuit's keys from keysDir, verifies them against the manifest's
// digests and makes the proving key resident on b. It prefers pk.dump (gnark's
// ReadDump: a memory image, several times faster than decoding points) and falls back
// to pk.bin when the dump is missing or does not match its digest; both are hashed
// in full before gnark parses them.
func LoadKey(ctx context.Context, keysDir, circuit string, b Backend) (*LoadedKey, error) {
	t0 := time.Now()
	m, err := ReadManifest(keysDir, circuit)
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", circuit, err)
	}
	f := CircuitFiles(keysDir, circuit)

	vkBytes, err := os.ReadFile(f.VK)
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", circuit, err)
	}
	if d := sha256Hex(vkBytes); d != m.VKDigest {
		return nil, fmt.Errorf("load key %s: %s: sha256 %s does not match the manifest's %s", circuit, f.VK, d, m.VKDigest)
	}
	vk, err := parseVK(vkBytes)
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", circuit, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	gpk, dumpErr := readPKDump(f.PKDump, m.PKDumpDigest)
	if dumpErr != nil {
		if gpk, err = readPK(f.PK, m.PKDigest); err != nil {
			return nil, fmt.Errorf("load key %s: %w (dump: %v)", circuit, err, dumpErr)
		}
	}
	pk, err := NewProvingKey(circuit, gpk, m.Constraints)
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", circuit, err)
	}
	if len(vk.G1.K) != pk.NbPublic || !pk.PK.G1.Alpha.Equal(&vk.G1.Alpha) || !pk.PK.G2.Delta.Equal(&vk.G2.Delta) {
		return nil, fmt.Errorf("load key %s: proving and verifying keys do not match", circuit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := b.LoadKey(ctx, pk)
	if err != nil {
		return nil, fmt.Errorf("load key %s on %s: %w", circuit, b.Name(), err)
	}
	return &LoadedKey{Manifest: *m, PK: pk, Key: k, VK: vk, VKBytes: vkBytes, LoadTime: time.Since(t0)}, nil
}

func readPKDump(path, digest string) (*groth16bls.ProvingKey, error) {
	if digest == "" {
		return nil, fmt.Errorf("no dump digest in the manifest")
	}
	fh, err := openVerified(path, digest)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	pk := new(groth16bls.ProvingKey)
	if err := pk.ReadDump(fullReader{bufio.NewReaderSize(fh, 1<<20)}); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return pk, nil
}

func readPK(path, digest string) (*groth16bls.ProvingKey, error) {
	fh, err := openVerified(path, digest)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	pk := new(groth16bls.ProvingKey)
	// The digest proves these are the bytes Setup or Import wrote after full checks,
	// so the subgroup checks can be skipped.
	if _, err := pk.UnsafeReadFrom(fullReader{bufio.NewReaderSize(fh, 1<<20)}); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return pk, nil
}
