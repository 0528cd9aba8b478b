package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/regress"
)

// Config is what makes a benchmark arm fast or slow, recorded with its runs. Its hash
// is computed as a worker's is, and "mode" keeps it apart from every worker's.
type Config struct {
	Mode    string   `json:"mode"` // "bench"
	Backend string   `json:"backend"`
	Devices []string `json:"devices"`
	Threads int      `json:"threads"`
	// The host's part, as in a worker's config: processor model and GPU driver.
	CPU       string `json:"cpu"`
	GPUDriver string `json:"gpu_driver,omitempty"`
}

// Hash is a short stable digest of the configuration, and its JSON.
func (c Config) Hash() (string, []byte) {
	b, _ := json.Marshal(c) // strings and numbers always marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6]), b
}

// Recording is one arm's runs as cuzk bench --record stores them.
type Recording struct {
	Arm    string // "" for a single configuration, "A" or "B" for --ab
	Label  string // the arm's flags, for people
	Worker string // host/pid
	Build  string
	Config Config
	Device string
	Result *Result
}

// Record stores the runs in cuzk.bench_runs under one new bench id, in one transaction.
func Record(ctx context.Context, pool *pgxpool.Pool, recs []Recording) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT nextval('cuzk.bench_id_seq')").Scan(&id); err != nil {
			return fmt.Errorf("new bench id: %w", err)
		}
		cols := []string{"bench_id", "arm", "run", "label", "circuit", "worker", "build", "config_hash", "config",
			"backend", "device", "started_at", "finished_at",
			"synth_ms", "prove_ms", "ntt_ms", "msm_ms", "msm_g1_ms", "msm_g2_ms", "h2d_ms", "verify_ms", "total_ms"}
		var rows [][]any
		for _, rec := range recs {
			hash, cfg := rec.Config.Hash()
			for i, s := range rec.Result.Ours {
				p := s.Phases
				rows = append(rows, []any{id, rec.Arm, i + 1, rec.Label, rec.Result.Case, rec.Worker, rec.Build, hash, cfg,
					rec.Config.Backend, rec.Device, s.At.Add(-s.Total()), s.At,
					msOf(s.Solve), msOf(s.Prove), msOf(p.NTT), msOf(p.MSM), msOrNil(p.MSMG1), msOrNil(p.MSMG2), msOrNil(p.H2D),
					msOrNil(s.Verify), msOf(s.Total())})
			}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cuzk", "bench_runs"}, cols, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("store bench runs: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record bench: %w", err)
	}
	return id, nil
}

// Samples are the runs' phase timings as package regress compares them.
func (r *Result) Samples() regress.Samples {
	s := regress.Samples{}
	add := func(phase string, d time.Duration) {
		s.Add(regress.Key{Source: "bench", Circuit: r.Case, Phase: phase}, float64(d)/float64(time.Millisecond))
	}
	for _, x := range r.Ours {
		add("synth", x.Solve)
		add("prove", x.Prove)
		add("ntt", x.Phases.NTT)
		add("msm", x.Phases.MSM)
		for phase, d := range map[string]time.Duration{"msm_g1": x.Phases.MSMG1, "msm_g2": x.Phases.MSMG2, "h2d": x.Phases.H2D, "verify": x.Verify} {
			if d > 0 { // a phase the backend or run does not separate
				add(phase, d)
			}
		}
		add("total", x.Total())
	}
	return s
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// msOrNil is NULL for a phase not measured: the CPU backend has no transfers.
func msOrNil(d time.Duration) *float64 {
	if d <= 0 {
		return nil
	}
	v := msOf(d)
	return &v
}
