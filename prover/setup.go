package prover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/consensys/gnark"
	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"
	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
)

// Progress receives one human-readable line per step of Setup or Import. May be nil.
type Progress func(step string)

func (p Progress) say(format string, args ...any) {
	if p != nil {
		p(fmt.Sprintf(format, args...))
	}
}

// Setup runs a development Groth16 ceremony (gnark's groth16.Setup) for ccs and writes
// circuit's key directory under keysDir (see Files). It is NOT a production ceremony:
// the toxic waste lives in this process's memory; Setup reports DevSetupWarning through
// progress first and records it in the manifest. gnark's Setup cannot be interrupted:
// ctx is checked before and after it. An existing key directory is never overwritten.
func Setup(ctx context.Context, circuit string, ccs constraint.ConstraintSystem, keysDir string, progress Progress) (*Manifest, error) {
	r1, err := checkR1CS(circuit, ccs)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if err := checkAbsent(keysDir, circuit); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	progress.say("WARNING: %s", DevSetupWarning)
	progress.say("setup %s: %d constraints, %d wires: running gnark groth16.Setup", circuit, ccs.GetNbConstraints(), nbWiresOf(ccs))
	t0 := time.Now()
	var pk groth16bls.ProvingKey
	var vk groth16bls.VerifyingKey
	if err := groth16bls.Setup(r1, &pk, &vk); err != nil {
		return nil, fmt.Errorf("setup %s: gnark setup: %w", circuit, err)
	}
	progress.say("setup %s: ceremony took %v", circuit, time.Since(t0).Round(time.Millisecond))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := writeKeyDir(ctx, keysDir, circuit, r1, &pk, &vk, OriginDevSetup, progress)
	if err != nil {
		return nil, fmt.Errorf("setup %s: %w", circuit, err)
	}
	return m, nil
}

// Import registers a circuit compiled and set up elsewhere with gnark (BLS12-381) by
// copying its files into circuit's key directory under keysDir in cuzk's layout. The
// proving key may be compressed (WriteTo) or not (WriteRawTo); it is read with full
// subgroup checks. The three files must belong together: Import checks curve, sizes,
// the public-input count against the verifying key, which wires have A and B bases,
// and that α, β, δ are the same in both keys. It cannot check the ceremony itself.
func Import(ctx context.Context, circuit, r1csPath, pkPath, vkPath, keysDir string, progress Progress) (*Manifest, error) {
	if err := checkAbsent(keysDir, circuit); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	r1 := new(cs.R1CS)
	if err := readFileInto(r1csPath, r1.ReadFrom); err != nil {
		return nil, fmt.Errorf("import %s: read r1cs: %w", circuit, err)
	}
	if _, err := checkR1CS(circuit, r1); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	progress.say("import %s: reading proving key %s (with subgroup checks)", circuit, pkPath)
	var pk groth16bls.ProvingKey
	if err := readFileInto(pkPath, pk.ReadFrom); err != nil {
		return nil, fmt.Errorf("import %s: read proving key: %w", circuit, err)
	}
	var vk groth16bls.VerifyingKey
	if err := readFileInto(vkPath, vk.ReadFrom); err != nil {
		return nil, fmt.Errorf("import %s: read verifying key: %w", circuit, err)
	}
	if err := checkKeysMatch(circuit, r1, &pk, &vk); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := writeKeyDir(ctx, keysDir, circuit, r1, &pk, &vk, OriginImport, progress)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", circuit, err)
	}
	return m, nil
}

// checkR1CS accepts only BLS12-381 R1CS without commitments.
func checkR1CS(circuit string, ccs constraint.ConstraintSystem) (*cs.R1CS, error) {
	if err := checkCircuitName(circuit); err != nil {
		return nil, err
	}
	r1, ok := ccs.(*cs.R1CS)
	if !ok || ccs.Field().Cmp(ecc.BLS12_381.ScalarField()) != 0 {
		return nil, fmt.Errorf("circuit %s: need a BLS12-381 R1CS, got %T over field %s", circuit, ccs, ccs.Field().Text(16))
	}
	if ccs.GetNbConstraints() == 0 {
		return nil, fmt.Errorf("circuit %s has no constraints", circuit)
	}
	if err := checkNoCommitments(circuit, ccs); err != nil {
		return nil, err
	}
	return r1, nil
}

func nbWiresOf(ccs constraint.ConstraintSystem) int {
	return ccs.GetNbInternalVariables() + ccs.GetNbPublicVariables() + ccs.GetNbSecretVariables()
}

// checkKeysMatch checks that pk and vk were set up for r1 and for each other.
func checkKeysMatch(circuit string, r1 *cs.R1CS, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) error {
	if len(pk.CommitmentKeys) != 0 || len(vk.CommitmentKeys) != 0 {
		return &CommitmentError{Circuit: circuit}
	}
	nbWires, nbPublic := nbWiresOf(r1), r1.GetNbPublicVariables()
	want := fft.NewDomain(uint64(r1.GetNbConstraints())).Cardinality
	switch {
	case len(pk.InfinityA) != nbWires:
		return fmt.Errorf("circuit %s: proving key is for %d wires, r1cs has %d", circuit, len(pk.InfinityA), nbWires)
	case len(vk.G1.K) != nbPublic:
		return fmt.Errorf("circuit %s: verifying key is for %d public inputs, r1cs has %d", circuit, len(vk.G1.K)-1, nbPublic-1)
	case len(pk.G1.K) != nbWires-nbPublic:
		return fmt.Errorf("circuit %s: proving key has %d private-wire bases, r1cs has %d private wires", circuit, len(pk.G1.K), nbWires-nbPublic)
	case pk.Domain.Cardinality != want:
		return fmt.Errorf("circuit %s: proving key domain %d, r1cs with %d constraints needs %d", circuit, pk.Domain.Cardinality, r1.GetNbConstraints(), want)
	case !pk.G1.Alpha.Equal(&vk.G1.Alpha) || !pk.G2.Beta.Equal(&vk.G2.Beta) || !pk.G2.Delta.Equal(&vk.G2.Delta):
		return fmt.Errorf("circuit %s: proving and verifying keys come from different setups (α, β or δ differ)", circuit)
	}
	infA, infB := infinityOf(r1)
	for i := range infA {
		if infA[i] != pk.InfinityA[i] || infB[i] != pk.InfinityB[i] {
			return fmt.Errorf("circuit %s: proving key does not match the r1cs: wire %d has A/B bases %v/%v, r1cs says %v/%v",
				circuit, i, !pk.InfinityA[i], !pk.InfinityB[i], !infA[i], !infB[i])
		}
	}
	_, err := NewProvingKey(circuit, pk, r1.GetNbConstraints())
	return err
}

// infinityOf returns, per wire, whether it appears in no A (L) or no B (R) term of
// any constraint: exactly the wires whose Setup bases are the point at infinity.
func infinityOf(r1 *cs.R1CS) (infA, infB []bool) {
	n := nbWiresOf(r1)
	infA, infB = make([]bool, n), make([]bool, n)
	for i := range infA {
		infA[i], infB[i] = true, true
	}
	it := r1.GetR1CIterator()
	for c := it.Next(); c != nil; c = it.Next() {
		for _, t := range c.L {
			infA[t.WireID()] = false
		}
		for _, t := range c.R {
			infB[t.WireID()] = false
		}
	}
	return infA, infB
}

func checkAbsent(keysDir, circuit string) error {
	if err := checkCircuitName(circuit); err != nil {
		return err
	}
	d := CircuitFiles(keysDir, circuit).Dir
	if _, err := os.Stat(d); err == nil {
		return fmt.Errorf("circuit %s already has keys in %s; remove that directory to replace them", circuit, d)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func readFileInto(path string, read func(io.Reader) (int64, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = read(fullReader{bufio.NewReaderSize(f, 1<<20)})
	return err
}

// writeKeyDir writes all key files into a temporary directory next to the final one,
// then renames it into place.
func writeKeyDir(ctx context.Context, keysDir, circuit string, r1 *cs.R1CS, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey, origin string, progress Progress) (*Manifest, error) {
	if err := os.MkdirAll(keysDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(keysDir, "."+circuit+".tmp-")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	final := CircuitFiles(keysDir, circuit)
	t := CircuitFiles(filepath.Dir(tmp), filepath.Base(tmp))

	m := &Manifest{
		Circuit:      circuit,
		Curve:        ecc.BLS12_381.String(),
		Constraints:  r1.GetNbConstraints(),
		PublicInputs: r1.GetNbPublicVariables() - 1,
		Wires:        nbWiresOf(r1),
		Domain:       int(pk.Domain.Cardinality),
		Origin:       origin,
		GnarkVersion: gnark.Version.String(),
		CreatedAt:    time.Now().UTC().Truncate(time.Second),
	}
	if origin == OriginDevSetup {
		m.Warning = DevSetupWarning
	}
	steps := []struct {
		name   string
		path   string
		write  func(io.Writer) error
		digest *string
		size   *int64
	}{
		{"r1cs", t.R1CS, func(w io.Writer) error { _, err := r1.WriteTo(w); return err }, &m.R1CSDigest, nil},
		{"proving key", t.PK, func(w io.Writer) error { _, err := pk.WriteRawTo(w); return err }, &m.PKDigest, &m.PKBytes},
		{"proving key dump", t.PKDump, pk.WriteDump, &m.PKDumpDigest, nil},
		{"verifying key", t.VK, func(w io.Writer) error { _, err := vk.WriteTo(w); return err }, &m.VKDigest, nil},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		d, n, err := writeFileDigest(s.path, s.write)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", s.name, err)
		}
		*s.digest = d
		if s.size != nil {
			*s.size = n
		}
		progress.say("%s: wrote %s (%d bytes) in %v", circuit, filepath.Base(s.path), n, time.Since(t0).Round(time.Millisecond))
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, _, err := writeFileDigest(t.Manifest, func(w io.Writer) error { _, err := w.Write(append(mb, '\n')); return err }); err != nil {
		return nil, err
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	if err := checkAbsent(keysDir, circuit); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, final.Dir); err != nil {
		return nil, fmt.Errorf("move keys into place: %w", err)
	}
	ok = true
	if err := syncDir(keysDir); err != nil {
		return nil, err
	}
	progress.say("%s: keys in %s, pk_digest %s", circuit, final.Dir, m.PKDigest)
	return m, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
