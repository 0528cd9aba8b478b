package main

import (
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jubjub "github.com/consensys/gnark-crypto/ecc/bls12-381/twistededwards"
	tedwards "github.com/consensys/gnark-crypto/ecc/twistededwards"
	"github.com/consensys/gnark/frontend"
	stdted "github.com/consensys/gnark/std/algebra/native/twistededwards"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

// jubjubMulCircuit proves knowledge of S with S·P = R on Jubjub, the twisted Edwards
// curve over BLS12-381's scalar field: gnark's ScalarMul solves wires through the
// standard library's hints.
type jubjubMulCircuit struct {
	S      frontend.Variable
	PX, PY frontend.Variable `gnark:",public"`
	RX, RY frontend.Variable `gnark:",public"`
}

func (c *jubjubMulCircuit) Define(api frontend.API) error {
	curve, err := stdted.NewEdCurve(api, tedwards.BLS12_381)
	if err != nil {
		return err
	}
	r := curve.ScalarMul(stdted.Point{X: c.PX, Y: c.PY}, c.S)
	api.AssertIsEqual(r.X, c.RX)
	api.AssertIsEqual(r.Y, c.RY)
	return nil
}

// workerArgs run a CPU worker on keysDir and cacheDir.
func workerArgs(keysDir, cacheDir string) []string {
	return []string{"--backend", "cpu", "--keys-dir", keysDir, "--cache-dir", cacheDir,
		"--mem-budget", "2GiB", "--poll-interval", "100ms", "--shutdown-grace", "10s"}
}

// proveOne submits request id through SQL, proves it with a worker process and stops it.
func proveOne(t *testing.T, url, keysDir, cacheDir, id, circuit, inputs string) {
	t.Helper()
	psql(t, url, `SELECT cuzk.submit_proof(request_id => '`+id+`', circuit => '`+circuit+`', inputs => '`+inputs+`'::jsonb);`)
	w := startWorker(t, url, workerArgs(keysDir, cacheDir)...)
	if st := waitDone(t, url, w, id, 2*time.Minute); st.State != "succeeded" {
		t.Fatalf("%s ended %s: %s", id, st.State, st.LastError)
	}
	if code := w.stop(t, 30*time.Second); code != 0 {
		t.Errorf("cuzk worker exited %d after SIGTERM", code)
	}
}

// TestImportCircuitWithStdHints imports a circuit that needs gnark's standard-library
// solver hints (twisted Edwards scalar multiplication on Jubjub), proves a request for
// it with a worker process and verifies the stored proof.
func TestImportCircuitWithStdHints(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keysDir, cacheDir := t.TempDir(), t.TempDir()
	_, files := compileAndSetup(t, &jubjubMulCircuit{})
	r := mustOK(t, cuzkDB(t, db.URL, importArgs("jubjub-mul", files, keysDir, cacheDir)...))
	if !strings.HasPrefix(r.stdout, "imported jubjub-mul: ") {
		t.Errorf("import report: %q", r.stdout)
	}

	params := jubjub.GetEdwardsCurve()
	s := big.NewInt(0).SetUint64(0xdeadbeefcafe1234)
	var res jubjub.PointAffine
	res.ScalarMultiplication(&params.Base, s)
	inputs := `{"S": "` + s.String() + `", "PX": "` + params.Base.X.String() + `", "PY": "` + params.Base.Y.String() +
		`", "RX": "` + res.X.String() + `", "RY": "` + res.Y.String() + `"}`
	proveOne(t, db.URL, keysDir, cacheDir, "jubjub-1", "jubjub-mul", inputs)
	r = mustOK(t, cuzkDB(t, db.URL, "verify", "jubjub-1"))
	if !strings.Contains(r.stdout, "jubjub-1: ok") {
		t.Errorf("cuzk verify: %q", r.stdout)
	}
}

// TestReplacedKeysKeepProofsVerifiable stores a proof, shows that replacing the
// circuit's keys is refused without --force (exit 2, nothing written), replaces them
// with --force (a new key version), and checks that the stored proof still verifies
// with its own version while a new request is proved with the new key.
func TestReplacedKeysKeepProofsVerifiable(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keysDir, cacheDir := t.TempDir(), t.TempDir()
	_, files1 := compileAndSetup(t, &cubeCircuit{})
	_, files2 := compileAndSetup(t, &cubeCircuit{}) // the same circuit, another ceremony
	r := mustOK(t, cuzkDB(t, db.URL, importArgs("cube", files1, keysDir, cacheDir)...))
	if !strings.Contains(r.stdout, ", key version 1\n") {
		t.Errorf("import report: %q", r.stdout)
	}
	proveOne(t, db.URL, keysDir, cacheDir, "cube-v1", "cube", `{"X": "3", "Y": "35"}`)

	vkFile := filepath.Join(keysDir, "cube", "vk.bin")
	vkBefore := fileSHA256(t, vkFile)
	state := func() string {
		return psql(t, db.URL, `SELECT c.key_version || ' ' || encode(sha256(c.vk), 'hex') || ' ' ||
		    (SELECT count(*) FROM cuzk.circuit_keys k WHERE k.circuit = c.name) FROM cuzk.circuits c WHERE c.name = 'cube';`)
	}
	before := state()

	// Without --force: refused, exit 2, nothing written.
	r = cuzkDB(t, db.URL, importArgs("cube", files2, keysDir, cacheDir)...)
	wantExit(t, r, exitUsage, "circuit cube is registered", "needs --force")
	if got := state(); got != before {
		t.Errorf("refused import changed cuzk.circuits: %q, was %q", got, before)
	}
	if got := fileSHA256(t, vkFile); got != vkBefore {
		t.Error("refused import replaced vk.bin")
	}
	// Re-importing the very same keys is not a replacement.
	r = mustOK(t, cuzkDB(t, db.URL, importArgs("cube", files1, keysDir, cacheDir)...))
	if !strings.Contains(r.stdout, ", key version 1\n") {
		t.Errorf("re-import of the same keys: %q", r.stdout)
	}

	r = mustOK(t, cuzkDB(t, db.URL, append(importArgs("cube", files2, keysDir, cacheDir), "--force")...))
	if !strings.Contains(r.stdout, ", key version 2\n") {
		t.Errorf("forced import report: %q", r.stdout)
	}
	if got, want := psql(t, db.URL, `SELECT c.key_version || ' ' || (c.vk = k.vk) || ' ' || k.pk_digest FROM cuzk.circuits c
	    JOIN cuzk.circuit_keys k ON k.circuit = c.name AND k.version = 2 WHERE c.name = 'cube';`), "2 true "+fileSHA256(t, filepath.Join(keysDir, "cube", "pk.bin")); got != want {
		t.Errorf("current key after --force: %q, want %q", got, want)
	}
	r = mustOK(t, cuzkDB(t, db.URL, "verify", "--all"))
	if !strings.Contains(r.stdout, "cube-v1: ok") {
		t.Errorf("cuzk verify --all after the keys were replaced: %q", r.stdout)
	}

	proveOne(t, db.URL, keysDir, cacheDir, "cube-v2", "cube", `{"X": "16", "Y": "4117"}`)
	if got := psql(t, db.URL, `SELECT string_agg(request_id || '=' || key_version, ' ' ORDER BY request_id) FROM cuzk.proofs;`); got != "cube-v1=1 cube-v2=2" {
		t.Errorf("proofs' key versions: %q", got)
	}
	r = mustOK(t, cuzkDB(t, db.URL, "verify", "--all"))
	if !strings.Contains(r.stdout, "cube-v1: ok") || !strings.Contains(r.stdout, "cube-v2: ok") {
		t.Errorf("cuzk verify --all: %q", r.stdout)
	}

	// Submitters read every version's vk and digests, and change none.
	sub := pgtest.Login(t, db.Pool, db.URL, db.Name+"_sub", "cuzk_submitter")
	var n int
	if err := sub.QueryRow(context.Background(), `SELECT count(*) FROM cuzk.circuit_keys
	    WHERE circuit = 'cube' AND vk IS NOT NULL AND vk_digest = encode(sha256(vk), 'hex') AND pk_digest <> ''`).Scan(&n); err != nil || n != 2 {
		t.Errorf("a submitter reading cuzk.circuit_keys: %d rows, %v", n, err)
	}
	if _, err := sub.Exec(context.Background(), `DELETE FROM cuzk.circuit_keys`); err == nil {
		t.Error("a submitter deleted key versions")
	}

	// A built-in circuit: a new ceremony over registered keys needs --force too.
	k6 := func(dir string, extra ...string) result {
		return cuzkDB(t, db.URL, append([]string{"setup", "--circuit", "synthetic-k4", "--keys-dir", dir, "--cache-dir", cacheDir}, extra...)...)
	}
	mustOK(t, k6(keysDir))
	otherKeys := t.TempDir()
	wantExit(t, k6(otherKeys), exitUsage, "circuit synthetic-k4 is registered", "needs --force")
	if ents, _ := os.ReadDir(otherKeys); len(ents) != 0 {
		t.Errorf("refused setup wrote %d entries in the keys dir", len(ents))
	}
	r = mustOK(t, k6(otherKeys, "--force"))
	if !strings.Contains(r.stdout, ", key version 2\n") {
		t.Errorf("forced setup report: %q", r.stdout)
	}
}

// TestCircuitNameRuleMatchesDatabase tries names on both sides: synth's rule accepts
// exactly the names cuzk.circuits' CHECK accepts.
func TestCircuitNameRuleMatchesDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	names := []string{"", "a", "z", "0", "9", "A", "Z", "Cube", "cUbe", "cube", "cube.v2", "cube_v2", "cube-v2", "a..b",
		".cube", "_cube", "-cube", "cube.", "cube-", "a b", "a/b", "../x", "a\\b", "a\nb", "a\n", "\na", "é", "cubé", "ß",
		"\u212a", "ｃ", "a$", "a^b", "a*", "a[b]", "a:b", "a@b", "a+b", "a%b", "a'b",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129), "x" + strings.Repeat("-", 127)}
	for _, name := range names {
		goOK := synth.CheckCircuitName(name) == nil
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SET CONSTRAINTS ALL IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest) VALUES ($1, 1, 0, 1, '\x00', 'x')`, name)
		_ = tx.Rollback(ctx) // nothing is kept
		var pe *pgconn.PgError
		if err != nil && (!errors.As(err, &pe) || pe.Code != "23514") {
			t.Fatalf("insert %q: %v (want success or a check violation)", name, err)
		}
		if sqlOK := err == nil; sqlOK != goOK {
			t.Errorf("name %q: synth.CheckCircuitName accepts=%v, the database's CHECK accepts=%v", name, goOK, sqlOK)
		}
	}
}

// TestFailedImportLeavesNothing: an invalid name is refused before anything is written,
// and an import the database refuses leaves neither files nor rows behind, nor
// disturbs the keys of a circuit it would have replaced.
func TestFailedImportLeavesNothing(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keysDir, cacheDir := t.TempDir(), t.TempDir()
	_, files := compileAndSetup(t, &cubeCircuit{})
	_, files2 := compileAndSetup(t, &cubeCircuit{})
	empty := func(what string) {
		t.Helper()
		for _, dir := range []string{keysDir, cacheDir} {
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() != "cube" {
					t.Errorf("%s left %s behind", what, filepath.Join(dir, e.Name()))
				}
			}
		}
		if got := psql(t, db.URL, `SELECT (SELECT count(*) FROM cuzk.circuits WHERE name <> 'cube') + (SELECT count(*) FROM cuzk.circuit_keys WHERE circuit <> 'cube');`); got != "0" {
			t.Errorf("%s left %s rows behind", what, got)
		}
	}

	r := cuzkDB(t, db.URL, importArgs("Cube", files, keysDir, cacheDir)...)
	wantExit(t, r, exitUsage, `invalid circuit name "Cube"`)
	empty("an upper-case name")
	wantExit(t, cuzkDB(t, db.URL, importArgs("synthetic-k9", files, keysDir, cacheDir)...), exitUsage, "built-in family")
	empty("a built-in name")

	// The database refuses the row after the files were staged.
	psql(t, db.URL, `ALTER TABLE cuzk.circuits ADD CONSTRAINT test_refuse CHECK (name <> 'doomed' AND key_version < 2);`)
	wantExit(t, cuzkDB(t, db.URL, importArgs("doomed", files, keysDir, cacheDir)...), exitRuntime, "test_refuse")
	empty("an import the database refused")

	mustOK(t, cuzkDB(t, db.URL, importArgs("cube", files, keysDir, cacheDir)...))
	sums := map[string]string{}
	for _, f := range []string{"pk.dump", "vk.bin", "circuit.r1cs"} {
		sums[f] = fileSHA256(t, filepath.Join(keysDir, "cube", f))
	}
	wantExit(t, cuzkDB(t, db.URL, append(importArgs("cube", files2, keysDir, cacheDir), "--force")...), exitRuntime, "test_refuse")
	for f, sum := range sums {
		if got := fileSHA256(t, filepath.Join(keysDir, "cube", f)); got != sum {
			t.Errorf("a refused replacement changed %s", f)
		}
	}
	if got := psql(t, db.URL, `SELECT key_version || ' ' || (SELECT count(*) FROM cuzk.circuit_keys) FROM cuzk.circuits WHERE name = 'cube';`); got != "1 1" {
		t.Errorf("a refused replacement left key rows: %q", got)
	}
	empty("a refused replacement")
}
