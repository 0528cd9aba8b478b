package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"runtime/debug"

	"github.com/cuzk/cuzk/internal/hostinfo"
	"github.com/cuzk/cuzk/store"
)

// BuildString names the running binary: module version and VCS revision from its build
// info, with "+dirty" when the tree it was built from had local changes.
func BuildString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
			if len(rev) > 12 {
				rev = rev[:12]
			}
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return version + dirty
	}
	return version + " " + rev + dirty
}

// PerfConfig is the part of a worker's settings that changes how fast it proves.
// Field order is fixed, so its JSON (and the hash of it) is stable.
type PerfConfig struct {
	Backend          string   `json:"backend"`
	Devices          []string `json:"devices"`
	MaxBatch         int      `json:"max_batch"`
	BatchWait        string   `json:"batch_wait"`
	SynthConcurrency int      `json:"synth_concurrency"`
	QueueDepth       int      `json:"queue_depth"`
	MemBudget        int64    `json:"mem_budget"`
	GOMAXPROCS       int      `json:"gomaxprocs"` // the CPU backend and synthesis scale with it
	CPU              string   `json:"cpu"`        // processor model: synthesis runs on it
	GPUDriver        string   `json:"gpu_driver,omitempty"`
	LargeSolves      int      `json:"large_solves,omitempty"` // Config.LargeSolves where it bounds anything
}

// Hash is a short stable digest of the settings.
func (c PerfConfig) Hash() (string, []byte) {
	b, _ := json.Marshal(c) // a struct of strings and numbers always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6]), b
}

func (w *Worker) perfConfig() PerfConfig {
	pc := PerfConfig{
		MaxBatch:         w.cfg.MaxBatch,
		BatchWait:        w.cfg.BatchWait.String(),
		SynthConcurrency: w.cfg.SynthConcurrency,
		QueueDepth:       w.cfg.QueueDepth,
		LargeSolves:      cap(w.largeSynth),
		MemBudget:        w.cfg.MemBudget,
		GOMAXPROCS:       runtime.GOMAXPROCS(0),
		CPU:              hostinfo.CPUModel(),
	}
	for i, d := range w.devices {
		if i == 0 {
			pc.Backend = backendKind(d.Backend.Name())
		}
		pc.Devices = append(pc.Devices, d.Label)
		if pc.GPUDriver == "" {
			pc.GPUDriver = d.Driver
		}
	}
	return pc
}

func (w *Worker) makeOrigin() store.Origin {
	hash, js := w.perfConfig().Hash()
	build := w.cfg.Build
	if build == "" {
		build = BuildString()
	}
	return store.Origin{Worker: w.cfg.Name, Build: build, ConfigHash: hash, Config: js}
}

// backendKind is "cuda" for "cuda:0": the backend, not the device.
func backendKind(name string) string {
	for i := range len(name) {
		if name[i] == ':' {
			return name[:i]
		}
	}
	return name
}

// Observer is told about every attempt the worker finishes (metrics). Calls come from
// many goroutines and must not block.
type Observer interface {
	AttemptFinished(a *store.Attempt)
}

func (w *Worker) observe(a *store.Attempt) {
	if w.cfg.Observer != nil {
		w.cfg.Observer.AttemptFinished(a)
	}
}
