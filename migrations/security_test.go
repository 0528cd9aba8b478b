package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/internal/pgtest"
)

// fixedSearchPath is what every SECURITY DEFINER function of schema cuzk runs with.
const fixedSearchPath = "search_path=pg_catalog, cuzk, pg_temp"

// Every function that runs as its owner has a fixed search_path without schema public,
// including any that a later migration adds.
func TestSecurityDefinerFunctionsHaveFixedSearchPath(t *testing.T) {
	db := pgtest.New(t)
	rows, err := db.Pool.Query(context.Background(), `
		SELECT p.oid::regprocedure::text, coalesce(array_to_string(p.proconfig, '; '), '')
		  FROM pg_proc p WHERE p.pronamespace = 'cuzk'::regnamespace AND p.prosecdef ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type fn struct{ Name, Config string }
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) < 5 {
		t.Fatalf("found %d SECURITY DEFINER functions in cuzk, want at least submit_proof, retry_proof, cancel_proof, enqueue and the enqueue trigger: %v", len(fns), fns)
	}
	for _, f := range fns {
		// Other settings may follow (a bounded lock wait), never another search_path.
		set := strings.Split(f.Config, "; ")
		paths := 0
		for _, s := range set {
			if strings.HasPrefix(s, "search_path=") {
				paths++
			}
		}
		if set[0] != fixedSearchPath || paths != 1 {
			t.Errorf("%s runs as its owner with %q, want %q", f.Name, f.Config, fixedSearchPath)
		}
	}
}

// login creates a login role (in group, unless empty) and returns its name and a pool
// connected to db as it.
func login(t *testing.T, db *pgtest.DB, suffix, group string) (string, *pgxpool.Pool) {
	t.Helper()
	name := db.Name + "_" + suffix // database names are unique, so are these
	return name, pgtest.Login(t, db.Pool, db.URL, name, group)
}

func addCircuit(t *testing.T, db *pgtest.DB, name string) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		VALUES ($1, 1, 0, 1, '\x00', 'd')`, name); err != nil {
		t.Fatal(err)
	}
}

// Where PUBLIC may create in schema public (the default before PostgreSQL 15), a login
// outside cuzk's roles puts functions there that match, more closely than the built-in
// ones, the calls that submit_proof, a plain insert and cancel_proof make. A submitter
// then uses them: the outsider's functions never run, so they never run as the owner.
func TestHostilePublicSchemaDoesNotHijackOwnerFunctions(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	if _, err := db.Pool.Exec(ctx, `GRANT CREATE ON SCHEMA public TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	outsider, out := login(t, db, "outsider", "")
	_, sub := login(t, db, "submitter", "cuzk_submitter")

	trap := func(fn, args, call string) string {
		return fmt.Sprintf(`
			CREATE FUNCTION public.%[1]s(%[2]s) RETURNS %[4]s LANGUAGE plpgsql AS $f$
			BEGIN
				INSERT INTO public.hijacked VALUES (current_user, '%[1]s');
				BEGIN
					EXECUTE 'ALTER ROLE %[5]s SUPERUSER';
				EXCEPTION WHEN insufficient_privilege THEN NULL;
				END;
				RETURN %[3]s;
			END $f$;`, fn, args, call, strings.Split(fn, "_")[0], outsider)
	}
	setup := `CREATE TABLE public.hijacked (ran_as text, fn text);
	          GRANT INSERT ON public.hijacked TO PUBLIC;` +
		trap("jsonb_build_object", "text, text, text, text", "pg_catalog.jsonb_build_object($1, $2, $3, $4)") +
		trap("json_build_object", "text, text", "pg_catalog.json_build_object($1, $2)") +
		trap("json_build_object", "text, text, text, bigint, text, text", "pg_catalog.json_build_object($1, $2, $3, $4, $5, $6)")
	if _, err := out.Exec(ctx, setup); err != nil {
		t.Fatalf("outsider's functions in public: %v", err)
	}

	for _, q := range []string{
		`SELECT cuzk.submit_proof('r-fn', 'c', '{"a": "1"}'::jsonb)`,
		`INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('r-insert', 'c', '{"a": "2"}')`,
		`SELECT cuzk.cancel_proof('r-fn')`,
		`SELECT cuzk.retry_proof('r-fn')`,
	} {
		if _, err := sub.Exec(ctx, q); err != nil {
			t.Fatalf("submitter: %s: %v", q, err)
		}
	}
	var ran []string
	rows, err := db.Pool.Query(ctx, `SELECT ran_as || ' ran ' || fn FROM public.hijacked`)
	if err != nil {
		t.Fatal(err)
	}
	if ran, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(ran) > 0 {
		t.Errorf("the outsider's functions in public ran: %v", ran)
	}
	var super bool
	if err := db.Pool.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = $1`, outsider).Scan(&super); err != nil {
		t.Fatal(err)
	}
	if super {
		t.Errorf("the outsider %s became superuser", outsider)
	}
}

func wantError(t *testing.T, err error, code, text string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code || !strings.Contains(pe.Message, text) {
		t.Errorf("got %v, want SQLSTATE %s saying %q", err, code, text)
	}
}

// submit_proof with an existing request_id: the same circuit and inputs (in any key
// order or spacing) return the existing id, also after the inputs were scrubbed; other
// inputs or another circuit are an error naming the request. The same for a witness.
func TestSubmitProofSameIDOtherInputsIsAnError(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	addCircuit(t, db, "c")
	addCircuit(t, db, "d")
	_, sub := login(t, db, "submitter", "cuzk_submitter")
	submit := func(id, circuit string, inputs *string, witness []byte) (int64, error) {
		var rid int64
		err := sub.QueryRow(ctx, `SELECT cuzk.submit_proof(request_id => $1, circuit => $2, inputs => $3::jsonb, witness => $4)`,
			id, circuit, inputs, witness).Scan(&rid)
		return rid, err
	}
	str := func(s string) *string { return &s }

	first, err := submit("r1", "c", str(`{"a": "1", "b": "2"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := submit("r1", "c", str(`{ "b":"2","a":"1" }`), nil)
	if err != nil || again != first {
		t.Fatalf("identical resubmission: id %d, %v; want %d", again, err, first)
	}
	_, err = submit("r1", "c", str(`{"a": "1", "b": "3"}`), nil)
	wantError(t, err, "23505", `request "r1" already exists with different inputs`)
	_, err = submit("r1", "d", str(`{"a": "1", "b": "2"}`), nil)
	wantError(t, err, "23505", `request "r1" already exists for circuit "c", not "d"`)
	_, err = submit("r1", "c", nil, []byte{0, 1, 2})
	wantError(t, err, "23505", `request "r1" already exists with different inputs`)

	// After success the inputs are gone; the comparison still holds.
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.proof_requests SET state = 'succeeded', inputs = NULL, inputs_scrubbed_at = now() WHERE request_id = 'r1'`); err != nil {
		t.Fatal(err)
	}
	if again, err = submit("r1", "c", str(`{"b": "2", "a": "1"}`), nil); err != nil || again != first {
		t.Fatalf("identical resubmission after scrubbing: id %d, %v; want %d", again, err, first)
	}
	_, err = submit("r1", "c", str(`{"a": "9"}`), nil)
	wantError(t, err, "23505", `request "r1" already exists with different inputs`)

	w1, err := submit("w1", "c", nil, []byte{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if again, err = submit("w1", "c", nil, []byte{0, 1, 2}); err != nil || again != w1 {
		t.Fatalf("identical witness resubmission: id %d, %v; want %d", again, err, w1)
	}
	_, err = submit("w1", "c", nil, []byte{0, 1, 3})
	wantError(t, err, "23505", `request "w1" already exists with different inputs`)

	var jobs int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 2 {
		t.Errorf("%d River jobs for two requests, want 2", jobs)
	}
}

// Inputs or a witness longer than any valid request of their circuit (its
// max_inputs_bytes and max_witness_bytes, recorded at setup) are refused at insert,
// through submit_proof and a plain insert alike, with an error naming the request, the
// size, the limit and where the limit comes from. cuzk.settings max_request_bytes is
// unset by default; set, it caps every circuit besides its own limit. A circuit
// registered without its limits has 64 MiB.
func TestOversizedRequestRefusedAtInsert(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	// 1 public and 1 secret input: a full witness of 12 + 2*32 bytes.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, secret_inputs, wires, vk, pk_digest, max_inputs_bytes)
		VALUES ('c', 1, 1, 1, 3, '\x00', 'd', 200)`); err != nil {
		t.Fatal(err)
	}
	addCircuit(t, db, "old")
	_, err := db.Pool.Exec(ctx, `UPDATE cuzk.circuits SET max_inputs_bytes = 1000 WHERE name = 'old'`)
	wantError(t, err, "23514", "circuits_request_limits")
	_, sub := login(t, db, "submitter", "cuzk_submitter")
	var def *string
	if err := sub.QueryRow(ctx, `SELECT value FROM cuzk.settings WHERE name = 'max_request_bytes'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if def != nil {
		t.Errorf("default max_request_bytes %s, want NULL (each circuit's own limit)", *def)
	}
	var witnessLimit int
	if err := sub.QueryRow(ctx, `SELECT max_witness_bytes FROM cuzk.circuits WHERE name = 'c'`).Scan(&witnessLimit); err != nil {
		t.Fatal(err)
	}
	if witnessLimit != 76 {
		t.Errorf("max_witness_bytes %d for 2 input variables, want 12 + 2*32 = 76", witnessLimit)
	}

	inputs := func(n int) string { // jsonb text of n bytes
		return `{"a": "` + strings.Repeat("7", n-9) + `"}`
	}
	const derived = `the 200-byte limit for circuit "c" (derived from its 2 input variables)`
	_, err = sub.Exec(ctx, `SELECT cuzk.submit_proof('big-fn', 'c', $1::jsonb)`, inputs(201))
	wantError(t, err, "54000", `request "big-fn": inputs of 201 bytes exceed `+derived)
	_, err = sub.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('big-insert', 'c', $1::jsonb)`, inputs(8_000_000))
	wantError(t, err, "54000", `request "big-insert": inputs of 8000000 bytes exceed `+derived)
	_, err = sub.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, witness) VALUES ('big-witness', 'c', $1)`, make([]byte, 77))
	wantError(t, err, "54000", `request "big-witness": witness of 77 bytes exceeds the 76-byte limit for circuit "c" (derived from its 2 input variables)`)
	for id, q := range map[string]string{
		"fits":         `SELECT cuzk.submit_proof('fits', 'c', '` + inputs(200) + `'::jsonb)`,
		"fits-witness": `SELECT cuzk.submit_proof('fits-witness', 'c', witness => '\x` + strings.Repeat("00", 76) + `')`,
	} {
		if _, err := sub.Exec(ctx, q); err != nil {
			t.Errorf("%s: a request at the limit: %v", id, err)
		}
	}

	// A cap over the circuit's own limit changes nothing; under it, it is the limit.
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '1000' WHERE name = 'max_request_bytes'`); err != nil {
		t.Fatal(err)
	}
	_, err = sub.Exec(ctx, `SELECT cuzk.submit_proof('over-own', 'c', $1::jsonb)`, inputs(201))
	wantError(t, err, "54000", `inputs of 201 bytes exceed `+derived)
	_, err = sub.Exec(ctx, `SELECT cuzk.submit_proof('capped-old', 'old', $1::jsonb)`, inputs(1001))
	wantError(t, err, "54000", `request "capped-old": inputs of 1001 bytes exceed the 1000-byte limit set by cuzk.settings max_request_bytes`)
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = '100' WHERE name = 'max_request_bytes'`); err != nil {
		t.Fatal(err)
	}
	_, err = sub.Exec(ctx, `SELECT cuzk.submit_proof('capped', 'c', $1::jsonb)`, inputs(150))
	wantError(t, err, "54000", `request "capped": inputs of 150 bytes exceed the 100-byte limit set by cuzk.settings max_request_bytes`)
	_, err = db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = 'lots' WHERE name = 'max_request_bytes'`)
	wantError(t, err, "23514", "settings_max_request_bytes")

	// Unset again: a circuit without recorded limits has the default.
	if _, err := db.Pool.Exec(ctx, `UPDATE cuzk.settings SET value = NULL WHERE name = 'max_request_bytes'`); err != nil {
		t.Fatal(err)
	}
	_, err = sub.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, witness) VALUES ('old-witness', 'old', $1)`, make([]byte, 64<<20+1))
	wantError(t, err, "54000", `request "old-witness": witness of 67108865 bytes exceeds the 67108864-byte limit for circuit "old" (the default: the circuit's own limit is not recorded)`)
	if _, err := sub.Exec(ctx, `SELECT cuzk.submit_proof('old-fits', 'old', $1::jsonb)`, inputs(1001)); err != nil {
		t.Errorf("a request under the default limit: %v", err)
	}

	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM cuzk.proof_requests`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d requests stored, want only the 3 within their limits", n)
	}
}
