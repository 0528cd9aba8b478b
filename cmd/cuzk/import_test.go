package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// cubeCircuit proves knowledge of X with X³ + X + 5 = Y, Y public.
type cubeCircuit struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func (c *cubeCircuit) Define(api frontend.API) error {
	x3 := api.Mul(c.X, c.X, c.X)
	api.AssertIsEqual(c.Y, api.Add(x3, c.X, 5))
	return nil
}

// pairCircuit has a different shape: two public inputs and more wires.
type pairCircuit struct {
	A, B frontend.Variable
	S    frontend.Variable `gnark:",public"`
	P    frontend.Variable `gnark:",public"`
}

func (c *pairCircuit) Define(api frontend.API) error {
	api.AssertIsEqual(c.S, api.Add(c.A, c.B))
	api.AssertIsEqual(c.P, api.Mul(c.A, c.B))
	return nil
}

// committedCircuit uses gnark's commitment extension, which cuzk does not prove.
type committedCircuit struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func (c *committedCircuit) Define(api frontend.API) error {
	cmt, err := api.(frontend.Committer).Commit(c.X)
	if err != nil {
		return err
	}
	api.AssertIsDifferent(cmt, 0)
	api.AssertIsEqual(c.Y, api.Mul(c.X, c.X))
	return nil
}

// gnarkFiles are an externally produced circuit: R1CS, proving key, verifying key.
type gnarkFiles struct{ r1cs, pk, vk string }

func writeTo(t *testing.T, path string, w io.WriterTo) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(f); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// compileAndSetup compiles circuit for BLS12-381 with gnark and writes its files.
func compileAndSetup(t *testing.T, circuit frontend.Circuit) (constraint.ConstraintSystem, gnarkFiles) {
	t.Helper()
	cs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, circuit)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	pk, vk, err := groth16.Setup(cs)
	if err != nil {
		t.Fatalf("groth16.Setup: %v", err)
	}
	dir := t.TempDir()
	files := gnarkFiles{filepath.Join(dir, "circuit.r1cs"), filepath.Join(dir, "pk.bin"), filepath.Join(dir, "vk.bin")}
	writeTo(t, files.r1cs, cs)
	writeTo(t, files.pk, pk)
	writeTo(t, files.vk, vk)
	return cs, files
}

func importArgs(name string, f gnarkFiles, keysDir, cacheDir string) []string {
	return []string{"setup", "--import", name, "--r1cs", f.r1cs, "--pk", f.pk, "--vk", f.vk, "--keys-dir", keysDir, "--cache-dir", cacheDir}
}

// TestImportedAndBuiltinProvedByWorker imports a circuit made with gnark alone, submits
// requests for it (a full-witness binary through cuzk submit, inputs JSON through psql)
// and for a built-in circuit (cuzk inputs piped into cuzk submit), proves them with a
// cuzk worker process, verifies the stored proofs, and stops the worker with SIGTERM.
func TestImportedAndBuiltinProvedByWorker(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keysDir, cacheDir := t.TempDir(), t.TempDir()
	_, files := compileAndSetup(t, &cubeCircuit{})

	r := mustOK(t, cuzkDB(t, db.URL, importArgs("cube", files, keysDir, cacheDir)...))
	if !strings.HasPrefix(r.stdout, "imported cube: ") || !strings.Contains(r.stdout, " 1 public inputs") {
		t.Errorf("import report: %q", r.stdout)
	}
	// Request limits: a witness of 12 + 2*32 bytes; inputs of at most 2 + 2*(1 + 8 + 80)
	// bytes (synth.Compiled.MaxInputsBytes).
	if got, want := psql(t, db.URL, "SELECT concat_ws(' ', public_inputs, secret_inputs, max_witness_bytes, max_inputs_bytes, source, pk_digest) FROM cuzk.circuits WHERE name = 'cube';"),
		"1 1 76 180 imported "+fileSHA256(t, files.pk); got != want {
		t.Errorf("cuzk.circuits row for cube: %q, want %q", got, want)
	}
	mustOK(t, cuzkDB(t, db.URL, "setup", "--circuit", "synthetic-k6", "--keys-dir", keysDir, "--cache-dir", cacheDir))
	if got := psql(t, db.URL, "SELECT max_inputs_bytes > 0 AND max_witness_bytes > 12 FROM cuzk.circuits WHERE name = 'synthetic-k6';"); got != "t" {
		t.Errorf("synthetic-k6's request limits recorded: %q, want t", got)
	}

	// X = 3: 27 + 3 + 5 = 35. A full witness, as gnark serializes it.
	full, err := frontend.NewWitness(&cubeCircuit{X: 3, Y: 35}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	witnessFile := filepath.Join(t.TempDir(), "cube.wtns")
	wb, err := full.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(witnessFile, wb, 0o600); err != nil {
		t.Fatal(err)
	}
	r = mustOK(t, cuzkDB(t, db.URL, "submit", "--request-id", "cube-witness", "--circuit", "cube", "--witness", witnessFile))
	if !strings.HasPrefix(r.stdout, "submitted cube-witness (id ") {
		t.Errorf("submit report: %q", r.stdout)
	}
	// X = 0x10 = 16: 4096 + 16 + 5 = 4117. Inputs JSON keyed by the circuit's variable names.
	psql(t, db.URL, `SELECT cuzk.submit_proof(request_id => 'cube-json', circuit => 'cube', inputs => '{"X": "0x10", "Y": "4117"}'::jsonb);`)

	inputs := mustOK(t, cuzkDB(t, "", "inputs", "--circuit", "synthetic-k6", "--seed", "3"))
	r = cuzkEnv(t, []string{"DATABASE_URL=" + db.URL}, inputs.stdout, time.Minute,
		"submit", "--request-id", "k6-seed3", "--circuit", "synthetic-k6", "--inputs", "-")
	mustOK(t, r)
	if got := psql(t, db.URL, "SELECT state FROM cuzk.proof_status WHERE request_id = 'k6-seed3';"); got != "queued" {
		t.Errorf("k6-seed3 before any worker runs: state %q, want queued", got)
	}

	w := startWorker(t, db.URL, "--backend", "cpu", "--keys-dir", keysDir, "--cache-dir", cacheDir,
		"--mem-budget", "2GiB", "--poll-interval", "100ms", "--shutdown-grace", "10s", "--log-format", "json")
	for _, id := range []string{"cube-witness", "cube-json", "k6-seed3"} {
		if st := waitDone(t, db.URL, w, id, 90*time.Second); st.State != "succeeded" {
			t.Fatalf("%s ended %s: %s", id, st.State, st.LastError)
		}
	}

	r = mustOK(t, cuzkDB(t, db.URL, "verify", "cube-witness", "cube-json", "k6-seed3"))
	for _, id := range []string{"cube-witness", "cube-json", "k6-seed3"} {
		if !strings.Contains(r.stdout, id+": ok\n") {
			t.Errorf("cuzk verify did not report %s ok:\n%s", id, r.stdout)
		}
	}
	// Tampering with a stored proof's public witness must make verify fail.
	psql(t, db.URL, `UPDATE cuzk.proofs SET public_witness = (SELECT public_witness FROM cuzk.proofs WHERE request_id = 'cube-json')
	                  WHERE request_id = 'cube-witness';`)
	r = cuzkDB(t, db.URL, "verify", "cube-witness")
	wantExit(t, r, exitRuntime, "1 of 1 proofs did not verify")
	if !strings.Contains(r.stdout, "cube-witness: INVALID") {
		t.Errorf("cuzk verify of a tampered proof: %s", r)
	}
	wantExit(t, cuzkDB(t, db.URL, "verify", "never-submitted"), exitRuntime, "did not verify")

	// Retrying a succeeded request is refused by cuzk.retry_proof, whose message is shown.
	r = cuzkDB(t, db.URL, "retry", "k6-seed3")
	wantExit(t, r, exitRuntime, `request "k6-seed3" is succeeded, only failed or cancelled requests can be retried`,
		"1 of 1 requests could not be retried")

	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("cuzk worker exited %d after SIGTERM, want 0; output:\n%s", code, w.out.String())
	}
}

func TestImportRejectsCommitments(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	_, files := compileAndSetup(t, &committedCircuit{})
	r := cuzkDB(t, db.URL, importArgs("committed", files, t.TempDir(), t.TempDir())...)
	wantExit(t, r, exitRuntime, "uses gnark commitments, which cuzk does not support")
	if el := errorLines(r.stderr); len(el) != 1 {
		t.Errorf("want one error line, got %q", el)
	}
	if got := psql(t, db.URL, "SELECT count(*) FROM cuzk.circuits WHERE name = 'committed';"); got != "0" {
		t.Errorf("a rejected circuit was registered (%s rows)", got)
	}
}

func TestImportRejectsMismatchedFiles(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	_, cube := compileAndSetup(t, &cubeCircuit{})
	_, pair := compileAndSetup(t, &pairCircuit{})
	_, cube2 := compileAndSetup(t, &cubeCircuit{}) // same circuit, another ceremony

	cases := []struct {
		name  string
		files gnarkFiles
		want  string
	}{
		{"pk of another circuit", gnarkFiles{cube.r1cs, pair.pk, cube.vk}, "proving key is for"},
		{"vk of another circuit", gnarkFiles{cube.r1cs, cube.pk, pair.vk}, "verifying key is for"},
		{"r1cs of another circuit", gnarkFiles{pair.r1cs, cube.pk, cube.vk}, "circuit mm: "},
		{"pk and vk of different ceremonies", gnarkFiles{cube.r1cs, cube.pk, cube2.vk}, "come from different setups"},
		{"pk file is a vk", gnarkFiles{cube.r1cs, cube.vk, cube.vk}, "read proving key"},
		{"r1cs file is a pk", gnarkFiles{cube.pk, cube.pk, cube.vk}, "read R1CS"},
	}
	for _, tc := range cases {
		r := cuzkDB(t, db.URL, importArgs("mm", tc.files, t.TempDir(), t.TempDir())...)
		if r.code != exitRuntime {
			t.Errorf("%s: want exit 1, got %s", tc.name, r)
			continue
		}
		el := errorLines(r.stderr)
		if len(el) != 1 || !strings.Contains(el[0], tc.want) {
			t.Errorf("%s: want one error line containing %q, got %q", tc.name, tc.want, r.stderr)
		}
	}
	if got := psql(t, db.URL, "SELECT count(*) FROM cuzk.circuits WHERE name = 'mm';"); got != "0" {
		t.Errorf("mismatched files were registered (%s rows)", got)
	}
}
