package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/setup"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
)

// dirs are where keys and compiled circuits live.
type dirs struct {
	KeysDir  string `name:"keys-dir" env:"CUZK_KEYS_DIR" help:"Directory of proving/verifying keys (one subdirectory per circuit). Default: <user cache>/cuzk/keys."`
	CacheDir string `name:"cache-dir" env:"CUZK_CACHE_DIR" help:"Directory caching compiled circuits (each NAME.r1cs with its block split beside it, NAME.r1cs.plan). Default: <user cache>/cuzk/r1cs."`
}

func (d *dirs) resolve() error {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	if d.KeysDir == "" {
		d.KeysDir = filepath.Join(base, "cuzk", "keys")
	}
	if d.CacheDir == "" {
		d.CacheDir = filepath.Join(base, "cuzk", "r1cs")
	}
	for _, p := range []string{d.KeysDir, d.CacheDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// circuitLoader resolves built-in names through the registry and imported circuits
// through the R1CS stored beside their keys.
func circuitLoader(reg *synth.Registry, kd keys.Dir) func(context.Context, string) (*synth.Compiled, error) {
	return func(ctx context.Context, name string) (*synth.Compiled, error) {
		path := kd.Path(name, keys.R1CSFile)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return reg.Get(ctx, name)
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if c, err := reg.Get(ctx, name); err == nil {
			return c, nil // imported earlier in this process
		}
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		return reg.Import(ctx, name, f, st.Size())
	}
}

type setupCmd struct {
	dirs
	Circuit string `help:"Built-in circuit to set up (see cuzk inputs)." xor:"what"`
	Import  string `help:"Register a circuit compiled and set up elsewhere with gnark, under this name." xor:"what" placeholder:"NAME"`
	R1CS    string `name:"r1cs" help:"With --import: gnark BLS12-381 R1CS file (R1CS.WriteTo)." type:"existingfile"`
	PK      string `name:"pk" help:"With --import: gnark proving key file (ProvingKey.WriteTo)." type:"existingfile"`
	VK      string `name:"vk" help:"With --import: gnark verifying key file (VerifyingKey.WriteTo)." type:"existingfile"`
	Force   bool   `help:"Replace a registered circuit's keys (a new ceremony, or --import of other keys): records a new key version; proofs already stored keep verifying with the version they were made with."`
	Backend string `enum:"cpu,cuda,auto" default:"auto" help:"Where --circuit's key points are computed: cuda (the GPU), cpu, or auto (cuda when the CUDA library and a GPU are there, else cpu)."`
	Offline bool   `help:"With --circuit: write the keys to --keys-dir/NAME and register nothing (no database needed); prints each phase's time. Replaces keys already there."`
}

func (c setupCmd) Run(ctx context.Context, g *globals) error {
	if c.Circuit == "" && c.Import == "" {
		return usagef("give --circuit NAME, or --import NAME --r1cs F --pk F --vk F")
	}
	if c.Import != "" && (c.R1CS == "" || c.PK == "" || c.VK == "") {
		return usagef("--import needs --r1cs, --pk and --vk")
	}
	if c.Import != "" {
		// Checked before anything is written, with the rule the database's CHECK has.
		if err := synth.CheckImportName(c.Import); err != nil {
			return usageError{err.Error()}
		}
	}
	if c.Offline && c.Circuit == "" {
		return usagef("--offline sets up a --circuit")
	}
	if err := c.resolve(); err != nil {
		return err
	}
	if c.Offline {
		return setupOffline(ctx, g, synth.NewRegistry(c.CacheDir).SkipBlockSplit(), keys.Dir(c.KeysDir), c.Circuit, c.Backend)
	}
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Setup never solves: the block split is left to the processes that do.
	reg := synth.NewRegistry(c.CacheDir).SkipBlockSplit()
	if c.Import != "" {
		return importCircuit(ctx, g, pool, reg, keys.Dir(c.KeysDir), c.Import, c.R1CS, c.PK, c.VK, c.Force)
	}
	return setupBuiltin(ctx, g, pool, reg, keys.Dir(c.KeysDir), c.Circuit, c.Force, c.Backend)
}

// setupBuiltin compiles a built-in circuit, runs the development ceremony unless keys
// already exist, and registers the circuit.
func setupBuiltin(ctx context.Context, g *globals, pool *pgxpool.Pool, reg *synth.Registry, kd keys.Dir, name string, force bool, backend string) error {
	compiled, err := compileBuiltin(ctx, g, reg, name)
	if err != nil {
		return err
	}

	_, curVK, registered, err := store.CurrentKey(ctx, pool, name)
	if err != nil {
		return err
	}
	row := circuitRow(compiled, "builtin")
	var version int
	if kd.Has(name) && !force {
		fmt.Fprintf(g.stderr, "keys for %s exist in %s; reusing them (--force to run the ceremony again)\n", name, kd)
		pk, vk, err := kd.Load(name, "")
		if err != nil {
			return err
		}
		if err := keys.Consistent(name, compiled.CS, pk, vk); err != nil {
			return fmt.Errorf("existing keys do not match the circuit (use --force): %w", err)
		}
		if row.VK, err = encodeVK(vk); err != nil {
			return err
		}
		if registered && !bytes.Equal(row.VK, curVK) {
			return errNeedsForce(name, "the keys in "+filepath.Join(string(kd), name)+" are not its registered ones")
		}
		if row.PKDigest, err = kd.Digest(name); err != nil {
			return err
		}
		if version, err = installKeys(ctx, pool, kd, name, nil, row); err != nil {
			return err
		}
	} else {
		if registered && !force {
			return errNeedsForce(name, "its keys are not in "+string(kd)+" (point --keys-dir at them)")
		}
		mul, err := developmentMultiplier(backend, g)
		if err != nil {
			return err
		}
		defer mul.Close()
		t := time.Now()
		version, err = installKeys(ctx, pool, kd, name, func(stage keys.Dir) error {
			return step(g.stderr, "key setup for "+name, func() error {
				vk, digest, err := stage.Setup(ctx, name, compiled.CS, setup.Options{Mul: mul})
				if err != nil {
					return err
				}
				row.PKDigest = digest
				row.VK, err = encodeVK(vk)
				return err
			})
		}, row)
		if err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "keys written to %s (%s)\n", filepath.Join(string(kd), name), time.Since(t).Round(time.Millisecond))
	}
	fmt.Fprintf(g.stdout, "registered %s: %d constraints, %d public inputs, pk digest %s, key version %d\n", name, compiled.NbConstraints(), compiled.NbPublic()-1, row.PKDigest[:16], version)
	return nil
}

// compileBuiltin compiles (or loads from the cache) a built-in circuit, saying so on
// stderr.
func compileBuiltin(ctx context.Context, g *globals, reg *synth.Registry, name string) (*synth.Compiled, error) {
	t := time.Now()
	var compiled *synth.Compiled
	err := step(g.stderr, "compiling "+name, func() (err error) {
		compiled, err = reg.Get(ctx, name)
		return err
	})
	if err != nil {
		if synth.IsBadInput(err) {
			return nil, usageError{err.Error()}
		}
		return nil, err
	}
	fmt.Fprintf(g.stderr, "compiled %s: %d constraints, %d wires (%s)\n", name, compiled.NbConstraints(), compiled.NbWires(), time.Since(t).Round(time.Millisecond))
	return compiled, nil
}

// setupOffline makes a built-in circuit's keys in kd without a database, printing one
// line per phase ("phase NAME SECONDS") on stdout: compile, qap, each point vector
// (g1.A, g1.B, g1.Z, g1.K, g2.B: computed and handed to the writer), write (the
// writer's busy time, overlapped with the vectors), total.
func setupOffline(ctx context.Context, g *globals, reg *synth.Registry, kd keys.Dir, name, backend string) error {
	start := time.Now()
	compiled, err := compileBuiltin(ctx, g, reg, name)
	if err != nil {
		return err
	}
	phase := func(what string, d time.Duration) { fmt.Fprintf(g.stdout, "phase %s %.3f s\n", what, d.Seconds()) }
	phase("compile", time.Since(start))
	mul, err := developmentMultiplier(backend, g)
	if err != nil {
		return err
	}
	defer mul.Close()
	t := time.Now()
	_, digest, err := kd.Setup(ctx, name, compiled.CS, setup.Options{Mul: mul, Phase: phase})
	if err != nil {
		return err
	}
	phase("setup", time.Since(t))
	phase("total", time.Since(start))
	fmt.Fprintf(g.stdout, "keys of %s (%d constraints, %d wires) written to %s, pk digest %s, %d bytes; not registered\n",
		name, compiled.NbConstraints(), compiled.NbWires(), filepath.Join(string(kd), name), digest[:16], fileBytes(kd.Path(name, keys.DumpFile)))
	return nil
}

func fileBytes(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// errNeedsForce refuses to replace a registered circuit's keys without --force.
func errNeedsForce(name, why string) error {
	return usagef("circuit %s is registered and %s; replacing its keys needs --force (a new key version; stored proofs keep verifying with theirs)", name, why)
}

// installKeys registers row and, when write is set, the key files write puts in a
// staging directory, as one change: the files take the circuit's place in kd only
// inside the transaction that registers them, and a failure anywhere leaves the keys
// directory and the database as they were. It returns the key version registered.
func installKeys(ctx context.Context, pool *pgxpool.Pool, kd keys.Dir, name string, write func(stage keys.Dir) error, row *store.Circuit) (int, error) {
	var stage string
	if write != nil {
		var err error
		// A name starting with '.' is never a circuit's (synth.CircuitNamePattern).
		if stage, err = os.MkdirTemp(string(kd), ".staging-"); err != nil {
			return 0, fmt.Errorf("keys dir: %w", err)
		}
		defer os.RemoveAll(stage)
		if err := write(keys.Dir(stage)); err != nil {
			return 0, err
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, sqlErr("register circuit", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := store.RegisterCircuit(ctx, tx, row); err != nil {
		return 0, err
	}
	version, _, _, err := store.CurrentKey(ctx, tx, name)
	if err != nil {
		return 0, err
	}
	if write == nil {
		if err := tx.Commit(ctx); err != nil {
			return 0, sqlErr("register circuit", err)
		}
		return version, nil
	}
	final, old := filepath.Join(string(kd), name), filepath.Join(stage, ".replaced")
	replaced := false
	if _, err := os.Lstat(final); err == nil {
		if err := os.Rename(final, old); err != nil {
			return 0, fmt.Errorf("keys dir: %w", err)
		}
		replaced = true
	}
	restore := func() {
		if replaced {
			_ = os.RemoveAll(final)
			_ = os.Rename(old, final)
		}
	}
	if err := os.Rename(filepath.Join(stage, name), final); err != nil {
		restore()
		return 0, fmt.Errorf("keys dir: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		if !replaced {
			_ = os.RemoveAll(final)
		}
		restore()
		return 0, sqlErr("register circuit", err)
	}
	return version, nil
}

func importCircuit(ctx context.Context, g *globals, pool *pgxpool.Pool, reg *synth.Registry, kd keys.Dir, name, r1csPath, pkPath, vkPath string, force bool) error {
	// Everything is read and checked before anything is written.
	r1cs, pk, vk, err := keys.ReadImport(name, r1csPath, pkPath, vkPath)
	if err != nil {
		if synth.IsBadInput(err) {
			return usageError{err.Error()}
		}
		return err
	}
	compiled, err := synth.CompileImported(name, r1cs)
	if err != nil {
		return err
	}
	vkBytes, err := encodeVK(vk)
	if err != nil {
		return err
	}
	_, curVK, registered, err := store.CurrentKey(ctx, pool, name)
	if err != nil {
		return err
	}
	if registered && !bytes.Equal(curVK, vkBytes) && !force {
		return errNeedsForce(name, "these keys are not its registered ones")
	}
	row := circuitRow(compiled, "imported")
	row.VK = vkBytes
	version, err := installKeys(ctx, pool, kd, name, func(stage keys.Dir) (err error) {
		row.PKDigest, err = stage.WriteImported(name, r1cs, pk, vk)
		return err
	}, row)
	if err != nil {
		return err
	}
	// The compiled cache is rebuilt from the R1CS beside the keys on next use.
	if err := reg.ForgetImported(name); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "imported %s: %d constraints, %d public inputs, pk digest %s, key version %d\n", name, r1cs.GetNbConstraints(), compiled.NbPublic()-1, row.PKDigest[:16], version)
	return nil
}

// circuitRow is compiled's row of cuzk.circuits, without its keys.
func circuitRow(compiled *synth.Compiled, source string) *store.Circuit {
	return &store.Circuit{
		Name: compiled.Name, Constraints: int64(compiled.NbConstraints()), PublicInputs: compiled.NbPublic() - 1,
		SecretInputs: compiled.NbSecret(), Wires: int64(compiled.NbWires()), Source: source,
		MemEstimateBytes: synth.EstimateBytes(compiled), MaxInputsBytes: compiled.MaxInputsBytes(),
	}
}

func encodeVK(vk *groth16bls.VerifyingKey) ([]byte, error) {
	var b bytes.Buffer
	_, err := vk.WriteTo(&b)
	return b.Bytes(), err
}

// closingFixedBase is a setup multiplier that holds resources until closed.
type closingFixedBase interface {
	setup.FixedBase
	Close() error
}

type cpuFixedBase struct{ setup.CPU }

func (cpuFixedBase) Close() error { return nil }

// developmentMultiplier is the multiplier --backend names, the GPU (device 0) for
// cuda, the CPU for cpu, and for auto the GPU when the CUDA library and a device are
// there (saying on stderr why not otherwise); it then warns on stderr that the keys
// come from a development ceremony.
func developmentMultiplier(backend string, g *globals) (closingFixedBase, error) {
	var mul closingFixedBase = cpuFixedBase{}
	if backend != "cpu" {
		f, err := gpu.NewFixedBase(0)
		switch {
		case err == nil:
			mul = f
		case backend == "auto" && gpu.IsUnavailable(err):
			fmt.Fprintf(g.stderr, "key points on the CPU: %v\n", err)
		default:
			return nil, fmt.Errorf("--backend %s: %w", backend, err)
		}
	}
	fmt.Fprintln(g.stderr, "WARNING: running a DEVELOPMENT key ceremony (points on "+mul.Name()+"). It is NOT a production "+
		"ceremony: the toxic waste exists in this process's memory, so whoever ran it could forge proofs.")
	return mul, nil
}
