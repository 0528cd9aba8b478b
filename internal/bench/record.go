package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/cuzk/cuzk/regress"
	"github.com/cuzk/cuzk/store"
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
func Record(ctx context.Context, db store.DB, recs []Recording) (int64, error) {
	var runs []store.BenchRun
	for _, rec := range recs {
		hash, cfg := rec.Config.Hash()
		for i, s := range rec.Result.Ours {
			p := s.Phases
			runs = append(runs, store.BenchRun{Arm: rec.Arm, Run: i + 1, Label: rec.Label, Circuit: rec.Result.Case,
				Worker: rec.Worker, Build: rec.Build, ConfigHash: hash, Config: cfg,
				Backend: rec.Config.Backend, Device: rec.Device, StartedAt: s.At.Add(-s.Total()), FinishedAt: s.At,
				SynthMs: msOf(s.Solve), ProveMs: msOf(s.Prove), NttMs: msOf(p.NTT), MsmMs: msOf(p.MSM),
				MsmG1Ms: msOrNil(p.MSMG1), MsmG2Ms: msOrNil(p.MSMG2), H2DMs: msOrNil(p.H2D),
				VerifyMs: msOrNil(s.Verify), TotalMs: msOf(s.Total())})
		}
	}
	return store.RecordBench(ctx, db, runs)
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
