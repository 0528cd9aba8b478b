// Package keys keeps Groth16 key files on disk, one directory per circuit:
//
//	<keys-dir>/<circuit>/pk.dump       gnark ProvingKey.WriteDump: the proving key in the
//	                                   layout the worker loads without decoding a point
//	<keys-dir>/<circuit>/pk.dump.sum   JSON: the dump's format, digest and size, and
//	                                   the digest of the key it holds (pk_digest)
//	<keys-dir>/<circuit>/vk.bin        gnark VerifyingKey.WriteTo
//	<keys-dir>/<circuit>/pk.bin        gnark ProvingKey.WriteTo: imported keys, and keys
//	                                   set up by earlier versions
//	<keys-dir>/<circuit>/circuit.r1cs  gnark R1CS.WriteTo (imported circuits only;
//	                                   built-in ones are compiled by package synth)
//
// Setup writes the proving key once, as the dump: the pk_digest of cuzk.circuits is
// then the dump's tree digest (tree.go; for dumps written before it, their SHA-256,
// which such sidecars record and loads keep checking). Where there is a pk.bin (an import, whose digest stays the
// SHA-256 of the file the operator imported, or a directory set up before), pk.bin is
// the canonical key, its SHA-256 the pk_digest, and pk.dump a load cache of it,
// rebuilt when missing or bad.
//
// Files are written to a temporary name and renamed, so a reader never sees a partial
// key. The proving key's digest is checked on load, so a key that does not match the
// registered circuit is refused rather than used: either pk.bin hashes to it, or the
// dump's sidecar names it and the dump hashes to the digest the sidecar records.
package keys

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/setup"
	"github.com/cuzk/cuzk/synth"
)

// File names inside a circuit's directory.
const (
	PKFile   = "pk.bin"
	VKFile   = "vk.bin"
	R1CSFile = "circuit.r1cs"
	dirPerm  = 0o755
	filePerm = 0o644
	bufSize  = 1 << 20
)

// Dir is a keys directory.
type Dir string

// Path is the path of file f of circuit.
func (d Dir) Path(circuit, f string) string { return filepath.Join(string(d), circuit, f) }

// Has reports whether circuit has both keys in d (pk.bin, or a dump that is the key).
func (d Dir) Has(circuit string) bool {
	_, e1 := os.Stat(d.Path(circuit, PKFile))
	_, e2 := os.Stat(d.Path(circuit, VKFile))
	if e1 != nil && d.dumpOnly(circuit) != nil {
		e1 = nil
	}
	return e1 == nil && e2 == nil
}

// Digest is circuit's pk digest: pk.bin's SHA-256 where there is one, else the one its
// dump's sidecar records for a key written as the dump alone (checked on Load).
func (d Dir) Digest(circuit string) (string, error) {
	if _, err := os.Stat(d.Path(circuit, PKFile)); err == nil {
		return FileDigest(d.Path(circuit, PKFile))
	}
	if s := d.dumpOnly(circuit); s != nil {
		return s.PKDigest, nil
	}
	return "", fmt.Errorf("circuit %s: no proving key in %s", circuit, filepath.Join(string(d), circuit))
}

// Setup runs a development key ceremony for r1cs (package setup, multiplying on o.Mul)
// and writes the keys, the proving key once, as the dump. It is NOT a production
// ceremony: the toxic waste exists in this process's memory, so whoever runs it could
// forge proofs. It returns the verifying key and the pk digest.
func (d Dir) Setup(ctx context.Context, circuit string, r1cs *cs.R1CS, o setup.Options) (vk *groth16bls.VerifyingKey, digest string, err error) {
	if err := synth.CheckCircuitName(circuit); err != nil {
		return nil, "", err
	}
	if err := prover.CheckNoCommitments(circuit, r1cs); err != nil {
		return nil, "", err
	}
	digest, err = d.writeKeys(circuit, treeChunk, func(w io.Writer) error {
		var err error
		vk, err = setup.Write(ctx, r1cs, w, o)
		return err
	}, func() *groth16bls.VerifyingKey { return vk })
	if err != nil {
		return nil, "", fmt.Errorf("setup %s: %w", circuit, err)
	}
	return vk, digest, nil
}

// Write stores an imported pk and vk for circuit: pk.bin as gnark's WriteTo encodes
// it, so that the pk digest stays the SHA-256 of the key file the operator imported
// (when it was written by WriteTo), and the dump made from it for loading. It returns
// the pk digest.
func (d Dir) Write(circuit string, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) (string, error) {
	if err := synth.CheckCircuitName(circuit); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(string(d), circuit), dirPerm); err != nil {
		return "", fmt.Errorf("keys dir: %w", err)
	}
	var digest string
	err := writeAtomic(d.Path(circuit, PKFile), func(w io.Writer) error {
		h := sha256.New()
		if _, err := pk.WriteTo(io.MultiWriter(w, h)); err != nil {
			return err
		}
		digest = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("write proving key of %s: %w", circuit, err)
	}
	if err := writeAtomic(d.Path(circuit, VKFile), func(w io.Writer) error { _, err := vk.WriteTo(w); return err }); err != nil {
		return "", fmt.Errorf("write verifying key of %s: %w", circuit, err)
	}
	if err := d.writeDump(circuit, pk, digest, fileSize(d.Path(circuit, PKFile))); err != nil {
		return "", err
	}
	return digest, nil
}

// WriteDumpOnly stores pk and vk for circuit as cuzk setup does: pk.dump is the key
// (its sidecar names the dump's own digest), with no pk.bin. It returns the pk digest.
func (d Dir) WriteDumpOnly(circuit string, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) (string, error) {
	if err := synth.CheckCircuitName(circuit); err != nil {
		return "", err
	}
	return d.writeKeys(circuit, treeChunk, pk.WriteDump, func() *groth16bls.VerifyingKey { return vk })
}

// writeKeys writes circuit's dump with dump (tree digest in chunks of chunk bytes),
// then vk.bin with vk() (known once dump ran), then the sidecar naming the dump as the
// key (a pk.bin there goes first).
func (d Dir) writeKeys(circuit string, chunk int, dump func(io.Writer) error, vk func() *groth16bls.VerifyingKey) (string, error) {
	if err := os.MkdirAll(filepath.Join(string(d), circuit), dirPerm); err != nil {
		return "", fmt.Errorf("keys dir: %w", err)
	}
	sumPath := d.Path(circuit, DumpSumFile)
	if err := os.Remove(sumPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := os.Remove(d.Path(circuit, PKFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	s, err := d.writeDumpFile(circuit, chunk, dump)
	if err != nil {
		return "", err
	}
	if err := writeAtomic(d.Path(circuit, VKFile), func(w io.Writer) error { _, err := vk().WriteTo(w); return err }); err != nil {
		return "", fmt.Errorf("write verifying key of %s: %w", circuit, err)
	}
	s.PKDigest = s.DumpTree // the dump is the key
	if err := d.writeSum(circuit, s); err != nil {
		return "", err
	}
	return s.PKDigest, nil
}

// Import copies externally produced gnark files (R1CS, pk, vk) into d after checking
// that they are BLS12-381, mutually consistent and free of commitments.
func (d Dir) Import(circuit, r1csPath, pkPath, vkPath string) (*cs.R1CS, string, error) {
	r1cs, pk, vk, err := ReadImport(circuit, r1csPath, pkPath, vkPath)
	if err != nil {
		return nil, "", err
	}
	digest, err := d.WriteImported(circuit, r1cs, pk, vk)
	return r1cs, digest, err
}

// ReadImport reads and checks externally produced gnark files (R1CS, pk, vk) for
// circuit, writing nothing: the name must be valid, the files BLS12-381, mutually
// consistent and free of commitments.
func ReadImport(circuit, r1csPath, pkPath, vkPath string) (*cs.R1CS, *groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
	if err := synth.CheckImportName(circuit); err != nil {
		return nil, nil, nil, err
	}
	r1cs := new(cs.R1CS)
	if err := readFile(r1csPath, func(r io.Reader) error { _, err := r1cs.ReadFrom(r); return err }); err != nil {
		return nil, nil, nil, fmt.Errorf("read R1CS %s (a BLS12-381 gnark R1CS is expected): %w", r1csPath, err)
	}
	if err := prover.CheckNoCommitments(circuit, r1cs); err != nil {
		return nil, nil, nil, err
	}
	pk := groth16.NewProvingKey(ecc.BLS12_381).(*groth16bls.ProvingKey)
	if err := readFile(pkPath, func(r io.Reader) error { _, err := pk.ReadFrom(r); return err }); err != nil {
		return nil, nil, nil, fmt.Errorf("read proving key %s: %w", pkPath, err)
	}
	vk := groth16.NewVerifyingKey(ecc.BLS12_381).(*groth16bls.VerifyingKey)
	if err := readFile(vkPath, func(r io.Reader) error { _, err := vk.ReadFrom(r); return err }); err != nil {
		return nil, nil, nil, fmt.Errorf("read verifying key %s: %w", vkPath, err)
	}
	if err := Consistent(circuit, r1cs, pk, vk); err != nil {
		return nil, nil, nil, err
	}
	return r1cs, pk, vk, nil
}

// WriteImported stores an imported circuit's R1CS and keys, and returns the pk digest.
func (d Dir) WriteImported(circuit string, r1cs *cs.R1CS, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) (string, error) {
	if err := synth.CheckCircuitName(circuit); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(string(d), circuit), dirPerm); err != nil {
		return "", fmt.Errorf("keys dir: %w", err)
	}
	if err := writeAtomic(d.Path(circuit, R1CSFile), func(w io.Writer) error { _, err := r1cs.WriteTo(w); return err }); err != nil {
		return "", fmt.Errorf("write R1CS of %s: %w", circuit, err)
	}
	return d.Write(circuit, pk, vk)
}

// Consistent checks that pk and vk were made for r1cs (sizes and shapes).
func Consistent(circuit string, r1cs *cs.R1CS, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey) error {
	nbWires := r1cs.GetNbInternalVariables() + r1cs.GetNbPublicVariables() + r1cs.GetNbSecretVariables()
	nbPublic := r1cs.GetNbPublicVariables()
	switch {
	case len(pk.CommitmentKeys) > 0 || len(vk.PublicAndCommitmentCommitted) > 0:
		return fmt.Errorf("circuit %s: keys use gnark commitments, which cuzk does not support", circuit)
	case len(pk.InfinityA) != nbWires || len(pk.InfinityB) != nbWires:
		return fmt.Errorf("circuit %s: proving key is for %d wires, the R1CS has %d", circuit, len(pk.InfinityA), nbWires)
	case len(pk.G1.K) != nbWires-nbPublic:
		return fmt.Errorf("circuit %s: proving key has %d private bases, the R1CS has %d private wires", circuit, len(pk.G1.K), nbWires-nbPublic)
	case len(vk.G1.K) != nbPublic:
		return fmt.Errorf("circuit %s: verifying key is for %d public wires, the R1CS has %d", circuit, len(vk.G1.K), nbPublic)
	case pk.Domain.Cardinality < uint64(r1cs.GetNbConstraints()):
		return fmt.Errorf("circuit %s: proving key domain %d is smaller than the %d constraints", circuit, pk.Domain.Cardinality, r1cs.GetNbConstraints())
	case !pk.G1.Alpha.Equal(&vk.G1.Alpha) || !pk.G1.Beta.Equal(&vk.G1.Beta) || !pk.G1.Delta.Equal(&vk.G1.Delta) ||
		!pk.G2.Beta.Equal(&vk.G2.Beta) || !pk.G2.Delta.Equal(&vk.G2.Delta):
		// Same shapes, different ceremonies: every proof would fail verification.
		return fmt.Errorf("circuit %s: proving and verifying keys come from different setups (alpha/beta/delta differ)", circuit)
	}
	return nil
}

// Source names the file a proving key was decoded from.
const (
	SourceDump = DumpFile // the dump: no point decoding
	SourcePK   = PKFile   // pk.bin: every point decompressed and subgroup-checked
)

// LoadStats says how Load got a proving key.
type LoadStats struct {
	Source      string        // SourceDump or SourcePK
	Bytes       int64         // size of that file
	Duration    time.Duration // the whole load, writing a new dump included
	DumpWritten bool          // pk.dump was (re)built from pk.bin
}

// Load reads circuit's keys, checking the proving key against digest when it is set.
func (d Dir) Load(circuit, digest string) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
	pk, vk, _, err := d.LoadWith(circuit, digest, LoadOptions{})
	return pk, vk, err
}

// LoadLogged is Load that says on log (nil: nowhere) how it goes (LoadWith).
func (d Dir) LoadLogged(circuit, digest string, log *slog.Logger) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, LoadStats, error) {
	return d.LoadWith(circuit, digest, LoadOptions{Log: log})
}

// LoadOptions say where a load reports how it goes.
type LoadOptions struct {
	// Log gets a line when the load starts (from which file), progress lines for a
	// large key (bytes read, percent, every few seconds or tenth), and a line when it
	// ends (bytes, ms, MB/s). nil: nowhere.
	Log *slog.Logger
	// Progress, when set, is told the bytes read so far and the bytes the load expects
	// to read (a dump is read twice: hashed, then decoded), from the loading goroutine.
	Progress func(read, total int64)

	progress *progressLimits // when progress is logged; nil: defaultProgress
}

// LoadWith reads circuit's keys, checking the proving key against digest when it is
// set, and reports how it goes to o.
//
// The proving key comes from pk.dump when its sidecar has this build's format and
// names the pk digest (and pk.bin's size, when it records it), and the dump hashes to
// the digest the sidecar records; pk.bin is then not read at all. Otherwise pk.bin is
// parsed (and checked against digest) and a new dump is written for the next load; a
// dump that fails a check is logged and replaced, never used. A dump that cannot be
// written (a read-only keys directory) is logged and the key returned all the same.
// A pk.bin that is truncated or damaged fails the load with an error naming the file,
// its size and SHA-256 and what was expected.
//
// With digest "" (no registered circuit to compare with) the dump must have been made
// from the pk.bin there now, so pk.bin is hashed (a second or two at 2^22, without
// parsing it) to tell whether a stale dump outlived a replaced key.
func (d Dir) LoadWith(circuit, digest string, o LoadOptions) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, LoadStats, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	st := LoadStats{Source: SourcePK}
	// Beside a pk.bin the dump is a cache of it, never a key of its own: without pk.bin
	// such a key is missing (an operator who removes it expects the circuit's key to be
	// gone). A key written as the dump alone has a sidecar that says so.
	if _, err := os.Stat(d.Path(circuit, PKFile)); err != nil {
		if s := d.dumpOnly(circuit); s != nil {
			return d.loadDumpOnly(circuit, digest, s, o, log)
		}
		return nil, nil, st, fmt.Errorf("load proving key of %s: %w", circuit, err)
	}
	pkBytes, dumpBytes := fileSize(d.Path(circuit, PKFile)), fileSize(d.Path(circuit, DumpFile))
	prog := newLoadProgress(circuit, log, o.Progress, o.progress)

	want := digest
	var sum *dumpSum
	var err error
	if want == "" && fileSize(d.Path(circuit, DumpSumFile)) >= 0 {
		prog.expect(pkBytes)
		want, err = hashFile(d.Path(circuit, PKFile), func(r io.Reader) io.Reader { return prog.reader(r, PKFile+" (hash)") })
	}
	if err == nil {
		sum, err = d.readSum(circuit, want, pkBytes)
	}
	if err != nil && !errors.Is(err, errNoDump) {
		log.Warn("proving key dump not used; it will be rebuilt from "+PKFile, "circuit", circuit, "reason", err)
	}
	if sum != nil {
		st.Source = SourceDump
	}
	log.Info("loading proving key", "circuit", circuit, "from", st.Source, "pk_bytes", pkBytes, "dump_bytes", dumpBytes)

	var pk *groth16bls.ProvingKey
	if sum != nil {
		prog.expect(2 * dumpBytes)
		if pk, err = d.readDump(circuit, sum, prog); err != nil {
			log.Warn("proving key dump not used; it will be rebuilt from "+PKFile, "circuit", circuit, "reason", err)
			st.Source = SourcePK
		}
	}
	if pk == nil {
		prog.expect(pkBytes)
		var got string
		if pk, got, err = d.readPK(circuit, digest, prog); err != nil {
			return nil, nil, st, err
		}
		if err := d.writeDump(circuit, pk, got, pkBytes); err != nil {
			log.Warn("cannot write the proving key dump; the next load parses "+PKFile+" again", "circuit", circuit, "err", err)
		} else {
			st.DumpWritten = true
		}
	}
	st.Bytes = pkBytes
	if st.Source == SourceDump {
		st.Bytes = dumpBytes
	}

	vk := groth16.NewVerifyingKey(ecc.BLS12_381).(*groth16bls.VerifyingKey)
	if err := readFile(d.Path(circuit, VKFile), func(r io.Reader) error { _, err := vk.ReadFrom(r); return err }); err != nil {
		return nil, nil, st, fmt.Errorf("load verifying key of %s: %w", circuit, err)
	}
	st.Duration = time.Since(start)
	log.Info("proving key loaded", "circuit", circuit, "from", st.Source, "bytes", st.Bytes, "ms", st.Duration.Milliseconds(),
		"mb_per_s", mbPerSecond(st.Bytes, st.Duration), "dump_written", st.DumpWritten)
	return pk, vk, st, nil
}

// readPK parses pk.bin (every point decompressed and subgroup-checked) and checks it
// against digest when set; it returns the key and pk.bin's digest.
func (d Dir) readPK(circuit, digest string, prog *loadProgress) (*groth16bls.ProvingKey, string, error) {
	path := d.Path(circuit, PKFile)
	pk := groth16.NewProvingKey(ecc.BLS12_381).(*groth16bls.ProvingKey)
	h := sha256.New()
	err := readFile(path, func(r io.Reader) error {
		if prog != nil {
			r = prog.reader(r, PKFile)
		}
		_, err := pk.ReadFrom(io.TeeReader(r, h))
		if err == nil {
			_, err = io.Copy(h, r) // hash any trailing bytes too
		}
		return err
	})
	if err != nil {
		return nil, "", d.damagedPK(circuit, digest, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if digest != "" && got != digest {
		return nil, "", fmt.Errorf("proving key %s has SHA-256 %s, but cuzk.circuits.pk_digest of %s is %s: not the registered key (run cuzk setup again or fix --keys-dir)",
			path, got, circuit, digest)
	}
	return pk, got, nil
}

// damagedPK is the error of a pk.bin that does not decode: the file, its size and
// SHA-256, and what they should be as far as the digest and the dump's sidecar say.
func (d Dir) damagedPK(circuit, digest string, err error) error {
	path := d.Path(circuit, PKFile)
	size := fileSize(path)
	what := fmt.Sprintf("%d bytes", size)
	if s := d.rawSum(circuit); s != nil && s.PKBytes > 0 && (digest == "" || s.PKDigest == digest) && s.PKBytes != size {
		what += fmt.Sprintf(", %d expected (%s)", s.PKBytes, DumpSumFile)
	}
	if got, herr := FileDigest(path); herr == nil {
		what += ", SHA-256 " + got
		if digest != "" {
			what += ", cuzk.circuits.pk_digest " + digest
		}
	}
	return fmt.Errorf("proving key %s of %s is truncated or damaged (%s): %w", path, circuit, what, err)
}

// fileSize is path's size, or -1 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// FileDigest is the hex SHA-256 of the file at path (of pk.bin: the pk digest).
func FileDigest(path string) (string, error) {
	return hashFile(path, nil)
}

// hashFile is FileDigest reading through wrap (nil: directly).
func hashFile(path string, wrap func(io.Reader) io.Reader) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	var r io.Reader = bufio.NewReaderSize(f, bufSize)
	if wrap != nil {
		r = wrap(r)
	}
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// LoadR1CS reads an imported circuit's constraint system.
func (d Dir) LoadR1CS(circuit string) (*cs.R1CS, error) {
	r1cs := new(cs.R1CS)
	err := readFile(d.Path(circuit, R1CSFile), func(r io.Reader) error { _, err := r1cs.ReadFrom(r); return err })
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("circuit %s: no %s in %s", circuit, R1CSFile, filepath.Join(string(d), circuit))
	}
	return r1cs, err
}

func readFile(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return decode(f, read)
}

// decode runs read over f through a buffer.
func decode(f *os.File, read func(io.Reader) error) error {
	return decodeWith(func() error { return read(bufio.NewReaderSize(f, bufSize)) })
}

// decodeWith runs read, a panic in it an error: gnark's decoders trust the lengths
// they read, so a file of the wrong kind can make them panic (makeslice out of range)
// instead of returning an error.
func decodeWith(read func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed file (decoder panicked: %v)", r)
		}
	}()
	return read()
}

func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, bufSize)
	if err := write(w); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), filePerm); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
