package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/phase"
)

func TestEveryPhaseHasItsOwnField(t *testing.T) {
	var a Attempt
	seen := map[**float64]string{}
	for _, p := range phase.All() {
		f := a.phaseField(p.Name)
		if f == nil {
			t.Errorf("Attempt has no field for phase %s", p.Name)
			continue
		}
		if q, ok := seen[f]; ok {
			t.Errorf("phases %s and %s share a field", q, p.Name)
		}
		seen[f] = p.Name
	}
	if a.PhaseMs("gpu_idle") != nil || a.phaseField("gpu_idle") != nil {
		t.Error("a name that is no phase has a field")
	}
}

// FinishAttempt stores each phase in its own column and leaves queue_ms as the claim
// wrote it.
func TestFinishAttemptWritesEveryPhaseColumn(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest)
		VALUES ('c', 1, 0, 1, '\x00', 'd');
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('r', 'c', '{}')`); err != nil {
		t.Fatal(err)
	}
	req, err := BeginAttempt(ctx, db.Pool, "r", 1, Origin{Worker: "w"}, time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	a := &Attempt{RequestID: "r", Attempt: req.Attempt, Outcome: "succeeded"}
	want := map[string]float64{}
	for _, p := range phase.All() {
		v := float64(p.Ord*100 + 7)
		if p.Name == phase.Queue {
			v = req.QueueMs
		}
		*a.phaseField(p.Name) = &v
		want[p.Column] = v
	}
	*a.phaseField(phase.Queue) = Ms(time.Hour) // not FinishAttempt's to write
	if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return FinishAttempt(ctx, tx, a) }); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, p := range phase.All() {
		cols = append(cols, p.Column)
	}
	got := make([]float64, len(cols))
	dest := make([]any, len(cols))
	for i := range got {
		dest[i] = &got[i]
	}
	if err := db.Pool.QueryRow(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM cuzk.proof_attempts WHERE request_id = 'r'`).
		Scan(dest...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		if got[i] != want[c] {
			t.Errorf("%s = %v, want %v", c, got[i], want[c])
		}
	}
}

func TestSetPhasesTurnsDurationsIntoMilliseconds(t *testing.T) {
	q := 5.0
	a := &Attempt{QueueMs: &q}
	a.SetPhases(map[string]time.Duration{phase.Synth: 1500 * time.Microsecond, phase.Total: 2 * time.Second})
	if a.SynthMs == nil || *a.SynthMs != 1.5 || a.TotalMs == nil || *a.TotalMs != 2000 {
		t.Errorf("synth %v, total %v; want 1.5 and 2000 ms", a.SynthMs, a.TotalMs)
	}
	if a.ProveMs != nil || a.QueueMs != &q {
		t.Error("a phase without a duration changed")
	}
}
