package synth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/consensys/gnark"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// CircuitRevision identifies how this package builds its built-in circuits. Bump it
// whenever a change alters any compiled built-in: its constraints or the hints its
// solver calls. It is part of the cache key, so stale compiled files are never reused.
const CircuitRevision = 2

// Registry resolves circuit names to compiled circuits, compiling each built-in at
// most once per process and caching the result on disk. It is safe for concurrent
// use; concurrent requests for the same circuit wait for a single compilation.
type Registry struct {
	dir     string
	noSplit bool // SkipBlockSplit

	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	done chan struct{}
	c    *Compiled
	err  error
}

// NewRegistry returns a registry caching compiled circuits in dir, which is created
// if missing. With dir == "" nothing is read from or written to disk, and imported
// circuits are unavailable.
func NewRegistry(dir string) *Registry {
	return &Registry{dir: dir, entries: map[string]*entry{}}
}

// SkipBlockSplit is for a process that never solves (cuzk setup): the circuits r
// compiles or loads from then on are not split into blocks, a pass over every
// instruction that only the solver needs (such a circuit still solves, with gnark's
// solver). It returns r.
func (r *Registry) SkipBlockSplit() *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noSplit = true
	return r
}

// CacheFile is the on-disk cache path of a built-in circuit: the name, gnark's
// version and CircuitRevision identify its constraint system exactly.
func (r *Registry) CacheFile(name string) string {
	return filepath.Join(r.dir, name+"-gnark"+gnark.Version.String()+"-r"+strconv.Itoa(CircuitRevision)+".r1cs")
}

// r1csFile is the file a loaded circuit's constraint system was read from or cached
// in, and the checksum in its trailer; the zero value without a cache directory.
type r1csFile struct {
	path string
	sum  []byte
}

func (r *Registry) importedFile(name string) string {
	return filepath.Join(r.dir, "imported-"+name+".r1cs")
}

// Get returns the compiled circuit for name: a built-in one (from the disk cache,
// else compiled and cached) or one previously imported. An unknown or malformed name
// gives an *InputError.
func (r *Registry) Get(ctx context.Context, name string) (*Compiled, error) {
	r.mu.Lock()
	e, ok := r.entries[name]
	if !ok {
		e = &entry{done: make(chan struct{})}
		r.entries[name] = e
		r.mu.Unlock()
		func() {
			// A panic must not leave waiters blocked on e.done forever.
			defer func() {
				if p := recover(); p != nil {
					e.c, e.err = nil, fmt.Errorf("load %s: panic: %v", name, p)
				}
			}()
			var file r1csFile
			e.c, file, e.err = r.load(ctx, name)
			r.mu.Lock()
			split := !r.noSplit
			r.mu.Unlock()
			if e.err == nil && split {
				if file.path != "" {
					e.c.splitBlocksKept(file)
				} else {
					e.c.splitBlocks()
				}
			}
		}()
		if e.err != nil {
			// Forget failures so a later call can retry (e.g. after disk space is freed).
			r.mu.Lock()
			delete(r.entries, name)
			r.mu.Unlock()
		}
		close(e.done)
	} else {
		r.mu.Unlock()
	}
	select {
	case <-e.done:
		return e.c, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *Registry) load(ctx context.Context, name string) (*Compiled, r1csFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, r1csFile{}, err
	}
	if !isBuiltinName(name) {
		return r.loadImported(name)
	}
	if _, err := lookupBuiltin(name); err != nil {
		return nil, r1csFile{}, err
	}
	file := r1csFile{path: r.CacheFile(name)}
	if r.dir != "" {
		sys, sum, err := readR1CSFile(file.path)
		if err == nil {
			c, err := newCompiled(name, sys, true)
			file.sum = sum
			return c, file, err
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errCorrupt) {
			return nil, r1csFile{}, fmt.Errorf("read compiled %s: %w", name, err)
		}
		// Missing or corrupt: compile afresh and overwrite.
	}
	c, err := compileBuiltin(name)
	if err != nil {
		return nil, r1csFile{}, err
	}
	if r.dir == "" {
		return c, r1csFile{}, nil
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, r1csFile{}, fmt.Errorf("circuit cache: %w", err)
	}
	if file.sum, err = writeR1CSFile(file.path, c.CS); err != nil {
		return nil, r1csFile{}, fmt.Errorf("cache compiled %s: %w", name, err)
	}
	return c, file, nil
}

func (r *Registry) loadImported(name string) (*Compiled, r1csFile, error) {
	if r.dir == "" || CheckCircuitName(name) != nil {
		return nil, r1csFile{}, errUnknownCircuit(name)
	}
	file := r1csFile{path: r.importedFile(name)}
	sys, sum, err := readR1CSFile(file.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, r1csFile{}, errUnknownCircuit(name)
	}
	if err != nil {
		return nil, r1csFile{}, fmt.Errorf("load imported circuit %s (import it again): %w", name, err)
	}
	c, err := newCompiled(name, sys, false)
	file.sum = sum
	return c, file, err
}

// Import registers an externally compiled circuit under name: src holds a BLS12-381
// R1CS as written by gnark's WriteTo, of size bytes. It is validated (no commitments,
// hints available) and stored in the cache directory, where Get finds it from then on,
// in this process and others. Importing the same constraint system again is a no-op;
// a different one under an existing name is refused.
//
// Imported circuits take inputs by the variable names recorded in the R1CS (see
// Compiled.Witness) or as a gnark full-witness binary.
func (r *Registry) Import(ctx context.Context, name string, src io.Reader, size int64) (*Compiled, error) {
	if r.dir == "" {
		return nil, errors.New("import " + name + ": registry has no cache directory")
	}
	if err := CheckImportName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sys, err := decodeR1CS(src, size, 0)
	if err != nil {
		return nil, badInput("import %s: not a gnark BLS12-381 R1CS: %v", name, err)
	}
	c, err := newCompiled(name, sys, false)
	if err != nil {
		return nil, &InputError{Msg: "import " + name, Err: err}
	}
	r.mu.Lock()
	split := !r.noSplit
	r.mu.Unlock()
	if split {
		c.splitBlocks()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	path := r.importedFile(name)
	if old, _, err := readR1CSFile(path); err == nil {
		same, err := sameSystem(old, sys)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", name, err)
		}
		if !same {
			return nil, badInput("import %s: a different circuit is already imported under this name", name)
		}
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errCorrupt) {
		return nil, fmt.Errorf("import %s: %w", name, err)
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("circuit cache: %w", err)
	}
	if _, err := writeR1CSFile(path, sys); err != nil {
		return nil, fmt.Errorf("import %s: %w", name, err)
	}
	delete(r.entries, name) // a stale failed or older entry must not shadow it
	return c, nil
}

func sameSystem(a, b *cs.R1CS) (bool, error) {
	da, err := digestR1CS(a)
	if err != nil {
		return false, err
	}
	db, err := digestR1CS(b)
	return da == db, err
}

func digestR1CS(sys *cs.R1CS) ([sha256.Size]byte, error) {
	h := sha256.New()
	var d [sha256.Size]byte
	if _, err := sys.WriteTo(h); err != nil {
		return d, fmt.Errorf("encode R1CS: %w", err)
	}
	copy(d[:], h.Sum(nil))
	return d, nil
}

// Unload drops the registry's hold on name's compiled circuit, loaded and not in
// progress, so that its memory is freed once its users are done; the next Get reads
// it again from the disk cache (compiling a built-in anew when there is none).
func (r *Registry) Unload(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	if !ok {
		return
	}
	select {
	case <-e.done:
		delete(r.entries, name)
	default:
	}
}
