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

	"github.com/cuzk/cuzk/keys"
	cuzksql "github.com/cuzk/cuzk/sql"
	"github.com/cuzk/cuzk/synth"
)

// dirs are where keys and compiled circuits live.
type dirs struct {
	KeysDir  string `name:"keys-dir" env:"CUZK_KEYS_DIR" help:"Directory of proving/verifying keys (one subdirectory per circuit). Default: <user cache>/cuzk/keys."`
	CacheDir string `name:"cache-dir" env:"CUZK_CACHE_DIR" help:"Directory caching compiled circuits. Default: <user cache>/cuzk/r1cs."`
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
	Force   bool   `help:"Run the ceremony again even if keys exist (invalidates proofs verified with the old vk)."`
}

func (c setupCmd) Run(ctx context.Context, g *globals) error {
	if c.Circuit == "" && c.Import == "" {
		return usagef("give --circuit NAME, or --import NAME --r1cs F --pk F --vk F")
	}
	if c.Import != "" && (c.R1CS == "" || c.PK == "" || c.VK == "") {
		return usagef("--import needs --r1cs, --pk and --vk")
	}
	if err := c.resolve(); err != nil {
		return err
	}
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := synth.NewRegistry(c.CacheDir)
	if c.Import != "" {
		return importCircuit(ctx, g, pool, reg, keys.Dir(c.KeysDir), c.Import, c.R1CS, c.PK, c.VK)
	}
	return setupBuiltin(ctx, g, pool, reg, keys.Dir(c.KeysDir), c.Circuit, c.Force)
}

// setupBuiltin compiles a built-in circuit, runs the development ceremony unless keys
// already exist, and registers the circuit.
func setupBuiltin(ctx context.Context, g *globals, pool *pgxpool.Pool, reg *synth.Registry, kd keys.Dir, name string, force bool) error {
	t := time.Now()
	var compiled *synth.Compiled
	err := step(g.stderr, "compiling "+name, func() (err error) {
		compiled, err = reg.Get(ctx, name)
		return err
	})
	if err != nil {
		if synth.IsBadInput(err) {
			return usageError{err.Error()}
		}
		return err
	}
	fmt.Fprintf(g.stderr, "compiled %s: %d constraints, %d wires (%s)\n", name, compiled.NbConstraints(), compiled.NbWires(), time.Since(t).Round(time.Millisecond))

	var vkBytes []byte
	var digest string
	if kd.Has(name) && !force {
		fmt.Fprintf(g.stderr, "keys for %s exist in %s; reusing them (--force to run the ceremony again)\n", name, kd)
		pk, vk, err := kd.Load(name, "")
		if err != nil {
			return err
		}
		if err := keys.Consistent(name, compiled.CS, pk, vk); err != nil {
			return fmt.Errorf("existing keys do not match the circuit (use --force): %w", err)
		}
		if vkBytes, err = encodeVK(vk); err != nil {
			return err
		}
		if digest, err = keys.FileDigest(kd.Path(name, keys.PKFile)); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(g.stderr, "WARNING: running a DEVELOPMENT key ceremony (gnark groth16.Setup). It is NOT a production "+
			"ceremony: the toxic waste exists in this process's memory, so whoever ran it could forge proofs.")
		t = time.Now()
		var vk *groth16bls.VerifyingKey
		err := step(g.stderr, "key setup for "+name, func() (err error) {
			_, vk, digest, err = kd.Setup(ctx, name, compiled.CS)
			return err
		})
		if err != nil {
			return err
		}
		if vkBytes, err = encodeVK(vk); err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "keys written to %s (%s)\n", filepath.Join(string(kd), name), time.Since(t).Round(time.Millisecond))
	}
	err = cuzksql.New(pool).RegisterCircuit(ctx, &cuzksql.Circuit{
		Name: name, Constraints: int64(compiled.NbConstraints()), PublicInputs: compiled.NbPublic() - 1,
		Wires: int64(compiled.NbWires()), VK: vkBytes, PKDigest: digest, Source: "builtin",
		MemEstimateBytes: synth.EstimateBytes(compiled),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "registered %s: %d constraints, %d public inputs, pk sha256 %s\n", name, compiled.NbConstraints(), compiled.NbPublic()-1, digest[:16])
	return nil
}

func importCircuit(ctx context.Context, g *globals, pool *pgxpool.Pool, reg *synth.Registry, kd keys.Dir, name, r1csPath, pkPath, vkPath string) error {
	r1cs, digest, err := kd.Import(name, r1csPath, pkPath, vkPath)
	if err != nil {
		return err
	}
	compiled, err := circuitLoader(reg, kd)(ctx, name)
	if err != nil {
		return err
	}
	_, vk, err := kd.Load(name, digest)
	if err != nil {
		return err
	}
	vkBytes, err := encodeVK(vk)
	if err != nil {
		return err
	}
	err = cuzksql.New(pool).RegisterCircuit(ctx, &cuzksql.Circuit{
		Name: name, Constraints: int64(r1cs.GetNbConstraints()), PublicInputs: compiled.NbPublic() - 1,
		Wires: int64(compiled.NbWires()), VK: vkBytes, PKDigest: digest, Source: "imported",
		MemEstimateBytes: synth.EstimateBytes(compiled),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "imported %s: %d constraints, %d public inputs, pk sha256 %s\n", name, r1cs.GetNbConstraints(), compiled.NbPublic()-1, digest[:16])
	return nil
}

func encodeVK(vk *groth16bls.VerifyingKey) ([]byte, error) {
	var b bytes.Buffer
	_, err := vk.WriteTo(&b)
	return b.Bytes(), err
}
