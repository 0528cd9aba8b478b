package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/dustin/go-humanize"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
	"github.com/cuzk/cuzk/synth"
	"github.com/cuzk/cuzk/worker"
)

type workerCmd struct {
	dirs
	httpFlags
	Backend          string        `env:"CUZK_BACKEND" enum:"cpu,cuda,auto" default:"auto" help:"Prover backend: cpu, cuda, or auto (cuda when a GPU is usable, else cpu)."`
	Devices          string        `env:"CUZK_DEVICES" default:"all" help:"GPUs to use: all, or indices/UUIDs/ranges like 0,2 or 0-3."`
	MemBudget        string        `name:"mem-budget" env:"CUZK_MEM_BUDGET" help:"Memory for everything the worker holds (requests' working sets, compiled circuits, proving keys' host copies, staging buffers, the process itself), in bytes or with a unit (20GiB). Default: cgroup limit or MemAvailable, minus a safety margin."`
	MaxBatch         int           `name:"max-batch" env:"CUZK_MAX_BATCH" default:"1" help:"Most requests of one circuit proven together."`
	BatchWait        time.Duration `name:"batch-wait" env:"CUZK_BATCH_WAIT" default:"50ms" help:"Longest a request waits for its batch to fill."`
	SynthConcurrency int           `name:"synth-concurrency" env:"CUZK_SYNTH_CONCURRENCY" default:"0" help:"Solves at once, a partitioned request's partitions too; the solves under way take the cores in line, urgent first, then the oldest (0: half the CPUs, at least 1)."`
	LargeSolves      int           `name:"large-solves" env:"CUZK_LARGE_SOLVES" default:"0" help:"Solves at once, within --synth-concurrency, of circuits of 2^25 constraints or more that the block solver splits (Filecoin-size partitions): one of those uses many cores well, so fewer at once, each with more of the cores, finish sooner and hold less memory (0: the CPUs/8, at least 1)."`
	QueueDepth       int           `name:"queue-depth" env:"CUZK_QUEUE_DEPTH" default:"2" help:"Solved batches waiting for a prover."`
	UrgentSlots      int           `name:"urgent-slots" env:"CUZK_URGENT_SLOTS" default:"2" help:"Urgent requests (priority 1) this worker holds beside its other work, in a River queue of their own (cuzk_urgent), so one is claimed at once even while every other slot holds a long request. 0: this worker claims no urgent requests, leaving them to workers with urgent slots."`
	RescueAfter      time.Duration `name:"rescue-after" env:"CUZK_RESCUE_AFTER" default:"1h" help:"A job running this long without finishing (its worker died) is retried; also the longest one attempt may run, so keep it above the slowest proof."`
	RetryBackoff     time.Duration `name:"retry-backoff" env:"CUZK_RETRY_BACKOFF" default:"5s" help:"Delay before retrying a failed attempt, doubled for each further attempt (at most 10m)."`
	ShutdownGrace    time.Duration `name:"shutdown-grace" env:"CUZK_SHUTDOWN_GRACE" default:"2m" help:"On SIGTERM, in-flight work gets this long to finish before it is handed back."`
	PollInterval     time.Duration `name:"poll-interval" env:"CUZK_POLL_INTERVAL" default:"1s" help:"How often to look for work when no notification arrives."`
	DeadAfter        time.Duration `name:"dead-after" env:"CUZK_DEAD_AFTER" default:"1m" help:"A worker whose heartbeat is older than this is dead: its running jobs are handed back at once instead of after --rescue-after (0: off; at least three heartbeats)."`
	Heartbeat        time.Duration `env:"CUZK_HEARTBEAT" default:"10s" help:"How often the worker records that it is alive (cuzk.workers)."`
	KeepInputs       bool          `name:"keep-inputs" env:"CUZK_KEEP_INPUTS" help:"Keep private inputs after success (default: scrub them)."`
	Name             string        `env:"CUZK_NAME" help:"Worker identity in attempt rows (default host/pid)."`
	GPUPrecompute    string        `name:"gpu-precompute" env:"CUZK_GPU_PRECOMPUTE" default:"auto" placeholder:"COPIES" help:"Keep up to COPIES (2..16) shifted copies of each proving key's bases on the GPU, computed when the key loads, so every MSM runs fewer, wider windows (H200, 2^22: two provers 243 -> 212 ms a proof, the key load 0.1 -> 4.0 s, about 13 times the bases' device memory at 16). A base set whose copies do not fit stays as it is. auto: 16 copies where they are cheap against the key memory: for keys small enough to be proven in batches (domain up to 2^19) each base set with its copies within 1/32 of it (H200, batches of 16 at 2^14: 481 -> 559 proofs/s), for larger keys all sets or none, all when 16 times the key's bases fit within half of it and in the room left. 0 or off: none."`
	GPUKeyMemory     string        `name:"gpu-key-memory" env:"CUZK_GPU_KEY_MEMORY" placeholder:"SIZE" help:"Most GPU memory the resident proving keys of one device may hold together (bases, precomputed copies, per-proof buffers), in bytes or with a unit (40GiB): a key that would pass it evicts the least recently used keys not in use; alone, its bases that do not fit are streamed from pinned host memory, counted in --mem-budget (kind pinned). Default: the device's own memory."`
	KeyHostMemory    string        `name:"key-host-memory" env:"CUZK_KEY_HOST_MEMORY" placeholder:"SIZE" help:"Most host memory the proving keys' host copies (the pinned tier: an upload away from a GPU) may hold together, in bytes or with a unit (96GiB), counted in --mem-budget: past it the least recently used copy not in use is dropped (when none is left, the least recently used idle CPU-backend key, which proves from its copy, is evicted with it), and its key is read from its files again when next needed; a GPU-resident key does not hold its copy. Default: half of --mem-budget."`
	PreloadKeys      string        `name:"preload-keys" env:"CUZK_PRELOAD_KEYS" placeholder:"CIRCUITS" help:"Load these circuits' proving keys onto every device at start, in the background, each followed by its compiled circuit: comma-separated names, or all (every registered circuit with keys in --keys-dir). The keys of circuits with queued requests load at start too, after these. A request for a circuit waits for its load meanwhile, without holding a device."`
}

func (c workerCmd) Run(ctx context.Context, g *globals) error {
	if err := c.resolve(); err != nil {
		return err
	}
	if c.HTTP != "" {
		// Before anything loads: an endpoint without its token is a usage error.
		if _, err := c.token(); err != nil {
			return err
		}
	}
	budget, err := memBudget(c.MemBudget, g.log)
	if err != nil {
		return err
	}
	var keyMem uint64
	if c.GPUKeyMemory != "" {
		if keyMem, err = humanize.ParseBytes(c.GPUKeyMemory); err != nil || keyMem == 0 || keyMem > 1<<62 {
			return usagef("--gpu-key-memory %q: want bytes or a size like 40GiB", c.GPUKeyMemory)
		}
	}
	var hostKeyMem uint64
	if c.KeyHostMemory != "" {
		if hostKeyMem, err = humanize.ParseBytes(c.KeyHostMemory); err != nil || hostKeyMem == 0 || hostKeyMem > uint64(budget) {
			return usagef("--key-host-memory %q: want bytes or a size like 96GiB, at most --mem-budget (%d bytes)", c.KeyHostMemory, budget)
		}
	}
	copies, auto, err := parsePrecompute(c.GPUPrecompute)
	if err != nil {
		return err
	}
	devices, tel, err := openDevices(c.Backend, c.Devices, namedDevices(c.Devices), g.log, true,
		gpu.Options{PrecomputeCopies: copies, PrecomputeAuto: auto, KeyMemoryBytes: int64(keyMem)})
	if err != nil {
		return err
	}
	defer tel.Close()
	defer func() {
		for _, d := range devices {
			d.Backend.Close()
		}
	}()
	// A worker started before its database waits for it, as it does when the
	// database restarts under a running worker.
	pool, err := g.connectWaiting(ctx)
	if err != nil {
		return err
	}
	if pool == nil {
		g.log.Info("stopped while waiting for the database")
		return nil
	}
	defer pool.Close()

	cfg := worker.DefaultConfig()
	if c.Name != "" {
		cfg.Name = c.Name
	}
	cfg.MemBudget = budget
	cfg.MaxBatch = c.MaxBatch
	cfg.BatchWait = c.BatchWait
	cfg.SynthConcurrency = c.SynthConcurrency
	if cfg.SynthConcurrency <= 0 {
		cfg.SynthConcurrency = max(1, runtime.NumCPU()/2)
	}
	cfg.LargeSolves = c.LargeSolves
	if cfg.LargeSolves <= 0 {
		cfg.LargeSolves = max(1, runtime.NumCPU()/8)
	}
	cfg.QueueDepth = c.QueueDepth
	cfg.UrgentSlots = c.UrgentSlots
	cfg.RescueAfter = c.RescueAfter
	cfg.ShutdownGrace = c.ShutdownGrace
	cfg.RetryBackoff = c.RetryBackoff
	cfg.PollInterval = c.PollInterval
	cfg.DeadAfter = c.DeadAfter
	cfg.HeartbeatEvery = c.Heartbeat
	cfg.ScrubInputs = !c.KeepInputs
	var gpus devinfo.LatestSamples // nil on CPU hosts (a nil *devinfo.Telemetry in it would not be)
	if tel != nil {
		gpus = tel
	}
	obs, err := newObservability(pool, devices, gpus)
	if err != nil {
		return err
	}
	cfg.Observer = obs.metrics

	kd := keys.Dir(c.KeysDir)
	reg := synth.NewRegistry(c.CacheDir)
	digests := digestLookup(pool)
	cat := worker.NewCatalogWith(circuitLoader(reg, kd), func(ctx context.Context, name string, progress func(read, total int64)) (*groth16bls.ProvingKey, *groth16bls.VerifyingKey, error) {
		d, err := digests(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		pk, vk, _, err := kd.LoadWith(name, d, keys.LoadOptions{Log: g.log, Progress: progress})
		return pk, vk, err
	}, g.log, worker.CatalogOptions{HostKeyMemory: int64(hostKeyMem), Unload: reg.Unload})
	if err := obs.watchKeys(cat); err != nil {
		return err
	}
	if c.PreloadKeys != "" {
		if cfg.PreloadKeys, err = preloadNames(ctx, c.PreloadKeys, pool, kd); err != nil {
			g.log.Warn("preloading proving keys", "err", err)
		}
	}
	base, outsideGo := processMemory(budget)
	cfg.BaseBytes = base
	w, err := worker.New(pool, cfg, cat, devices, g.log)
	if err != nil {
		return usageError{err.Error()}
	}
	setMemoryLimit(w.Budget(), outsideGo, g.log)
	if err := obs.watchWorker(w); err != nil {
		return err
	}
	if c.HTTP != "" {
		srv, err := obs.serve(ctx, c.httpFlags, g.log)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	return w.Run(ctx)
}

// digestLookup reads a circuit's registered pk digest, so a worker never proves with
// a key other than the one whose vk the database holds.
func digestLookup(pool *pgxpool.Pool) func(context.Context, string) (string, error) {
	return func(ctx context.Context, name string) (string, error) {
		d, ok, err := store.PKDigest(ctx, pool, name)
		switch {
		case err != nil:
			return "", err
		case !ok:
			return "", fmt.Errorf("circuit %q is not registered (run cuzk setup)", name)
		}
		return d, nil
	}
}

// openBackends builds one prover per selected device; --backend auto falls back to
// the CPU when they cannot be used.
func openBackends(kind, devices string, log *slog.Logger) ([]worker.Prover, error) {
	devs, _, err := openDevices(kind, devices, false, log, false, gpu.Options{})
	return devs, err
}

// openDevices is openBackends for the worker: with telemetry, each GPU's latest NVML
// reading (utilization, memory used/total, temperature), polled in the background,
// is stored in its attempt rows. tel is nil on the CPU; Close it after the worker.
// strict: the operator named the devices, so devices this host lacks are a usage
// error, and auto does not fall back to the CPU for them.
func openDevices(kind, devices string, strict bool, log *slog.Logger, telemetry bool, opt gpu.Options) (devs []worker.Prover, tel *devinfo.Telemetry, err error) {
	if kind == "cpu" {
		if strict {
			return nil, nil, usagef("--devices %s: --backend cpu uses no GPU (drop --devices, or use --backend cuda or auto)", devices)
		}
		return []worker.Prover{{Backend: prover.NewCPU(), Label: fmt.Sprintf("cpu (%d cores)", runtime.NumCPU())}}, nil, nil
	}
	devs, tel, err = cudaBackends(devices, strict, log, telemetry, opt)
	if err == nil {
		return devs, tel, nil
	}
	if kind == "cuda" {
		return nil, nil, fmt.Errorf("--backend cuda: %w", err)
	}
	if strict {
		// GPUs were asked for by name: proving on the CPU instead would hide the mistake.
		return nil, nil, err
	}
	log.Warn("no usable GPU, proving on the CPU", "reason", err)
	return []worker.Prover{{Backend: prover.NewCPU(), Label: fmt.Sprintf("cpu (%d cores)", runtime.NumCPU())}}, nil, nil
}

func cudaBackends(spec string, strict bool, log *slog.Logger, telemetry bool, opt gpu.Options) ([]worker.Prover, *devinfo.Telemetry, error) {
	// NVML numbers devices by PCI bus; make CUDA agree before the library loads.
	os.Setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
	nv, err := gpu.OpenNVML()
	if err != nil {
		if strict {
			return nil, nil, usagef("--devices %s: no GPU found on this host (NVML %v)", spec, err)
		}
		return nil, nil, err
	}
	keepNVML := false
	defer func() {
		if !keepNVML {
			nv.Close()
		}
	}()
	all, err := nv.Devices(context.Background())
	if err != nil {
		return nil, nil, err
	}
	sel, err := devinfo.SelectDevices(spec, all)
	if err != nil {
		if strict {
			return nil, nil, usagef("%v; found: %s", err, foundDevices(all))
		}
		return nil, nil, err
	}
	driver, _ := nv.DriverVersion() // "" if the driver does not say: the config then lacks it
	var out []worker.Prover
	for _, d := range sel {
		b, err := gpu.NewCUDA(d.Index, opt)
		if err != nil {
			for _, o := range out {
				o.Backend.Close()
			}
			return nil, nil, fmt.Errorf("device %s: %w", d, err)
		}
		out = append(out, worker.Prover{Backend: b, Label: d.Name + " " + d.UUID, Driver: driver})
	}
	if !telemetry {
		return out, nil, nil
	}
	indices := make([]int, len(sel))
	for i, d := range sel {
		indices[i] = d.Index
	}
	tel := devinfo.StartTelemetry(nv, indices, 0, func(index int, err error) {
		log.Warn("GPU telemetry", "device", index, "err", err)
	})
	tel.OnClose(func() { nv.Close() })
	keepNVML = true
	for i, d := range sel {
		out[i].Telemetry = tel.JSON(d.Index)
	}
	return out, tel, nil
}

// namedDevices tells whether --devices names GPUs rather than taking all there are.
func namedDevices(spec string) bool {
	spec = strings.TrimSpace(spec)
	return spec != "" && !strings.EqualFold(spec, "all")
}

// foundDevices lists the GPUs discovery found, for a --devices that names others.
func foundDevices(all []devinfo.Device) string {
	if len(all) == 0 {
		return "none"
	}
	names := make([]string, len(all))
	for i, d := range all {
		names[i] = d.String()
	}
	return strings.Join(names, ", ")
}

// memBudget parses --mem-budget or derives it from the cgroup limit / MemAvailable.
func memBudget(spec string, log *slog.Logger) (int64, error) {
	if spec != "" {
		n, err := humanize.ParseBytes(spec)
		if err != nil || n == 0 {
			return 0, usagef("--mem-budget %q: want bytes or a size like 20GiB", spec)
		}
		return int64(n), nil
	}
	avail, source := availableMemory()
	if avail <= 0 {
		return 0, errors.New("cannot determine available memory: set --mem-budget")
	}
	margin := max(avail/10, 1<<30) // leave 10% (at least 1 GiB) to the OS
	budget := max(avail-margin, 256<<20)
	log.Info("memory budget", "budget", humanize.IBytes(uint64(budget)), "from", source, "available", humanize.IBytes(uint64(avail)))
	return budget, nil
}

// processMemory is what the process holds at start that its memory budget counts as
// the process's own (worker.KindProcess): its anonymous resident memory, every file it
// maps in full (its code and libraries, whose pages it touches as it runs), and 1/32
// of the budget for the Go runtime's overhead (collector metadata, fragmentation) as
// the heap grows. outsideGo is the part of it that the Go runtime does not count (the
// files, memory of C libraries), which the Go memory limit leaves out.
func processMemory(budget int64) (base, outsideGo int64) {
	anon, files := procMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	outsideGo = files + max(anon-int64(ms.Sys-ms.HeapReleased), 0)
	return anon + files + budget/32, outsideGo
}

// procMemory reads the process's anonymous resident memory (RssAnon) and the size of
// its file mappings (/proc/self/smaps), 0 where unknown.
func procMemory() (anon, files int64) {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
				fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &anon)
				anon <<= 10
			}
		}
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return anon, 0
	}
	file := false
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			file = len(f) >= 6 && strings.HasPrefix(f[5], "/")
			continue
		}
		if v, ok := strings.CutPrefix(line, "Size:"); ok && file {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			files += kb << 10
		}
	}
	return anon, files
}

// setMemoryLimit makes the Go runtime collect garbage as its memory nears what the
// budget leaves it (the budget less what the process holds outside the Go runtime and
// the host memory reserved outside the Go heap: staging buffers, pinned copies), rather
// than let the heap grow to twice what is live: the budget counts live bytes, and
// without the limit garbage could take the process's memory well past it. GOMEMLIMIT,
// when set, is left as it is.
func setMemoryLimit(b *worker.Budget, outsideGo int64, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	b.OnPinned(func(pinned int64) {
		limit := max(b.Total()-outsideGo-pinned, b.Total()/4)
		debug.SetMemoryLimit(limit)
		log.Debug("go memory limit", "bytes", limit, "outside_go", outsideGo, "pinned", pinned)
	})
}

func availableMemory() (int64, string) {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		s := strings.TrimSpace(string(b))
		if s != "max" {
			var n int64
			if _, err := fmt.Sscan(s, &n); err == nil && n > 0 {
				return n, "cgroup memory.max"
			}
		}
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemAvailable:") {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "MemAvailable:"), "kB")), &kb)
			return kb << 10, "MemAvailable"
		}
	}
	return 0, ""
}

// parsePrecompute reads --gpu-precompute: auto (16 copies where they are cheap against
// the key memory: gpu.Options.PrecomputeAuto), 0 or off, or a copy count from 2 to 16
// for every key.
func parsePrecompute(v string) (copies int, auto bool, err error) {
	switch v {
	case "auto":
		return 16, true, nil
	case "off", "0":
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 || n > 16 {
		return 0, false, usagef("--gpu-precompute %q: want auto, off, 0, or a copy count from 2 to 16", v)
	}
	return n, false, nil
}
