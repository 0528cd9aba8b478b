package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A worker killed with SIGKILL in the middle of a partitioned request loses none of
// the partitions it finished: the rescuing worker proves only the others.
func TestKill9MidPartitionsKeepsFinishedOnes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inputs := e.cuzk("inputs", "--circuit", small, "--partitions", "3")
	if _, err := e.pool.Exec(ctx, `INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('kp', $1, $2::jsonb)`,
		small, inputs); err != nil {
		t.Fatal(err)
	}
	// Partition 1's store waits for an advisory lock the test holds, so that the kill
	// lands after partition 0 is stored and before partition 1 is, however fast the
	// machine proves.
	if _, err := e.pool.Exec(ctx, `
		CREATE FUNCTION cuzk.hold_partition_1() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		    IF NEW.partition = 1 THEN PERFORM pg_advisory_xact_lock(16016); END IF;
		    RETURN NEW;
		END $$;
		CREATE TRIGGER hold_partition_1 BEFORE INSERT ON cuzk.partition_proofs
		    FOR EACH ROW EXECUTE FUNCTION cuzk.hold_partition_1();`); err != nil {
		t.Fatal(err)
	}
	hold, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_xact_lock(16016)`); err != nil {
		t.Fatal(err)
	}
	a := e.start("kp-a")
	// Partitions are stored as each is made, in any order: partition 2 may be stored
	// before the kill too.
	e.waitFor(2*time.Minute, "kp-a storing partition 1 after partition 0", func(ctx context.Context) (bool, string, error) {
		var first, waiting int
		err := e.pool.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM cuzk.partition_proofs WHERE request_id = 'kp' AND partition = 0),
			       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = 16016)`).
			Scan(&first, &waiting)
		return first == 1 && waiting == 1, fmt.Sprintf("partition 0 stored: %d, %d waiting", first, waiting), err
	})
	a.kill9(t)
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	kept := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.partition_proofs WHERE request_id = 'kp'`)

	b := e.start("kp-b", "--rescue-after", "15s")
	e.waitStates(100*time.Second, "succeeded", []string{"kp"})
	b.alive(t)
	if got := scalar[string](t, e.pool, `SELECT string_agg(partition || ':' || attempt || ':' || worker, ' ' ORDER BY partition)
	                                      FROM cuzk.partition_proofs WHERE request_id = 'kp'`); !strings.HasPrefix(got, "0:1:kp-a 1:") {
		t.Errorf("partition proofs (partition:attempt:worker): %s, want partition 0 kept from kp-a's attempt 1", got)
	}
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.partition_attempts WHERE request_id = 'kp' AND partition = 0`); n != 1 {
		t.Errorf("partition 0 worked on %d times, want once (the killed attempt)", n)
	}
	if n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.partition_attempts
	                                 WHERE request_id = 'kp' AND attempt > 1 AND outcome = 'succeeded'`); n != 3-kept {
		t.Errorf("%d partitions proven after the kill, want %d (those of 3 not stored before it)", n, 3-kept)
	}
	if out := e.cuzk("verify", "kp"); out != "kp: ok (3 partitions)\n" {
		t.Errorf("cuzk verify kp: %q", out)
	}
	// A partition's proof swapped for another's no longer verifies: verify names it.
	if _, err := e.pool.Exec(ctx, `UPDATE cuzk.proofs SET proofs[3] = proofs[2] WHERE request_id = 'kp'`); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(ctx, []string{"DATABASE_URL=" + e.url}, "verify", "kp")
	if err == nil || !strings.Contains(err.Error(), "\nkp: INVALID: partition 2 of 3: ") {
		t.Errorf("cuzk verify kp with partition 2's proof replaced: %v", err)
	}
}
