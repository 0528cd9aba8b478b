package faults

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killedInside submits two requests of big, starts worker name with flags and kills it
// with SIGKILL once it is inside both attempts; it returns the requests.
func (e *env) killedInside(name string, flags []string) []string {
	e.t.Helper()
	ids := e.submit(name, big, 2, 5)
	release := e.holdProofs() // no attempt ends before the kill, however fast the machine
	a := e.start(name, flags...)
	e.runningCount(name, 2, time.Minute)
	a.signal(e.t, syscall.SIGSTOP)
	release()
	a.kill9(e.t)
	return ids
}

// A worker killed with SIGKILL and started again under the same --name, with the
// heartbeat and rescue settings of a production worker (10 s, --dead-after 1m,
// --rescue-after 1h): the new process finds the name free, so its predecessor is
// gone, and hands the predecessor's running jobs back at start instead of after an
// hour (its own heartbeat keeps the name's row alive, so --dead-after never fires).
func TestRestartUnderSameNameHandsBackAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flags := []string{"--heartbeat", "10s", "--dead-after", "1m", "--rescue-after", "1h"}
	ids := e.killedInside("same", flags)
	b := e.start("same", flags...)
	e.waitStates(90*time.Second, "succeeded", ids)
	b.alive(t)
	e.exactlyOnce(ids)
	for _, id := range ids {
		outcome := scalar[string](t, e.pool, `SELECT outcome FROM cuzk.proof_attempts WHERE request_id = $1 AND attempt = 1`, id)
		if outcome != "interrupted" {
			t.Errorf("%s attempt 1: %s, want interrupted (the killed process's)", id, outcome)
		}
		errs := e.jobErrors(id)
		if !strings.Contains(errs, "worker same restarted: its previous process") {
			t.Errorf("%s: River job errors %q do not say why it was handed back", id, errs)
		}
	}
	if out := b.output(); !strings.Contains(out, "previous process of this worker is gone: its running jobs handed back") {
		t.Errorf("the restarted worker did not log the hand-back:\n%s", out)
	}
}

// Two live processes started under one name by mistake: neither hands back the
// other's running jobs, and both say loudly that the name is shared.
func TestTwoLiveWorkersWithOneNameKeepTheirJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.submit("twin", big, 2, 5)
	flags := []string{"--heartbeat", "300ms", "--dead-after", "1s", "--rescue-after", "1h"}
	release := e.holdProofs() // both attempts still running when a is frozen, however fast the machine
	a := e.start("twin", flags...)
	e.runningCount("twin", 2, time.Minute)
	a.signal(t, syscall.SIGSTOP) // alive, but holding its jobs while the namesake starts
	release()
	b := e.start("twin", flags...)
	const loud = "TWO LIVE WORKERS SHARE THE NAME twin"
	e.waitFor(time.Minute, "the second process reports the shared name", func(context.Context) (bool, string, error) {
		return strings.Contains(b.output(), loud), "no conflict logged yet", nil
	})
	a.signal(t, syscall.SIGCONT)
	e.waitFor(time.Minute, "the first process reports the shared name", func(context.Context) (bool, string, error) {
		return strings.Contains(a.output(), loud), "no conflict logged yet", nil
	})
	e.waitStates(90*time.Second, "succeeded", ids)
	a.alive(t)
	b.alive(t)
	e.exactlyOnce(ids)
	for _, id := range ids {
		n := scalar[int](t, e.pool, `SELECT count(*) FROM cuzk.proof_attempts WHERE request_id = $1`, id)
		errs := e.jobErrors(id)
		if n != 1 || errs != "" {
			t.Errorf("%s: %d attempts, job errors %q; want the first process's one attempt, untouched", id, n, errs)
		}
	}
	if strings.Contains(b.output(), "running jobs handed back") {
		t.Errorf("the second process handed jobs back:\n%s", b.output())
	}
}

// A login in no cuzk role holds the advisory lock on a worker's name (advisory locks
// need no privilege) while the worker is killed with SIGKILL and started again: the
// new process does not take the outsider for a live namesake. It names the session
// that holds the lock, reads its predecessor's liveness from the heartbeat row, which
// only cuzk's worker role writes, and hands the predecessor's running jobs back as
// soon as that heartbeat is three intervals old, not after --rescue-after.
func TestNameLockHeldByOutsiderDoesNotKeepJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.outsider()
	flags := []string{"--heartbeat", "1s", "--dead-after", "1h", "--rescue-after", "1h"}
	ids := e.killedInside("hijack", flags)
	conn, err := out.Acquire(context.Background()) // the lock lives as long as this session
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	e.waitFor(time.Minute, "the outsider holds the name lock", func(ctx context.Context) (bool, string, error) {
		var got bool
		err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(6519403, hashtext('hijack'))`).Scan(&got)
		return got, "lock still held by the killed worker's session", err
	})
	login := conn.Conn().Config().User
	pid := conn.Conn().PgConn().PID()

	b := e.start("hijack", flags...)
	e.waitStates(90*time.Second, "succeeded", ids)
	b.alive(t)
	e.exactlyOnce(ids)
	for _, id := range ids {
		if errs := e.jobErrors(id); !strings.Contains(errs, "worker hijack restarted: its previous process") {
			t.Errorf("%s: River job errors %q do not say why it was handed back", id, errs)
		}
	}
	log := b.output()
	if strings.Contains(log, "TWO LIVE WORKERS") {
		t.Errorf("the restarted worker took the outsider for a live namesake:\n%s", log)
	}
	if !strings.Contains(log, fmt.Sprintf("pid %d login %s", pid, login)) {
		t.Errorf("the restarted worker does not name the session holding the lock (pid %d, login %s):\n%s", pid, login, log)
	}
	if !strings.Contains(log, "previous process of this worker stopped heartbeating: its running jobs handed back") {
		t.Errorf("the restarted worker did not log the hand-back:\n%s", log)
	}
}
