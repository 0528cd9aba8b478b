package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"riverqueue.com/riverui"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/worker"
)

// httpFlags configure the worker's HTTP endpoints.
type httpFlags struct {
	HTTP            string        `name:"http" env:"CUZK_HTTP" placeholder:"ADDR" help:"Serve / (dashboard), /metrics, /healthz, /readyz and /riverui/ on this address. A port alone (:9090) listens on loopback (127.0.0.1) only; name the interface to serve other hosts (0.0.0.0:9090). Default: no HTTP server."`
	RiverUIWritable bool          `name:"riverui-writable" env:"CUZK_RIVERUI_WRITABLE" help:"Let River UI cancel, retry and delete jobs and pause queues (default: read-only). River UI then asks for the token of --http-token-file."`
	DashboardWindow time.Duration `name:"dashboard-window" env:"CUZK_DASHBOARD_WINDOW" default:"24h" help:"How far back the dashboard's charts go (a page can ask for another with ?window=)."`
	Pprof           bool          `name:"pprof" env:"CUZK_PPROF" help:"Also serve Go's profiles under /debug/pprof/ on the --http address (CPU, heap, goroutines, execution trace: where a worker's time goes), behind the token of --http-token-file. Off by default: a profile shows the process's internals."`
	TokenFile       string        `name:"http-token-file" env:"CUZK_HTTP_TOKEN_FILE" placeholder:"FILE" help:"File holding the token (at least 16 characters) that --riverui-writable and --pprof ask for: HTTP basic auth with any user name and the token as password, or Authorization: Bearer TOKEN. Either flag refuses to start without it."`
}

// listenAddr is the address --http listens on: a port alone means loopback, so that a
// worker never serves other hosts unless the operator names an interface.
func listenAddr(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// minTokenLen is the shortest token --http-token-file may hold.
const minTokenLen = 16

// httpToken guards the endpoints that change jobs and queues or show the process's
// internals. Only its digest is kept; comparing digests takes the same time whatever
// part of a wrong token matches.
type httpToken struct{ sum [sha256.Size]byte }

// token reads --http-token-file when an endpoint needs it: nil when none does.
func (f httpFlags) token() (*httpToken, error) {
	if !f.RiverUIWritable && !f.Pprof {
		return nil, nil
	}
	if f.TokenFile == "" {
		return nil, usagef("--riverui-writable and --pprof need --http-token-file (CUZK_HTTP_TOKEN_FILE): a file holding a token of at least %d characters", minTokenLen)
	}
	b, err := os.ReadFile(f.TokenFile)
	if err != nil {
		return nil, usagef("--http-token-file: %v", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen {
		return nil, usagef("--http-token-file %s: the token has %d characters, want at least %d", f.TokenFile, len(tok), minTokenLen)
	}
	return &httpToken{sum: sha256.Sum256([]byte(tok))}, nil
}

// guard serves h to requests that carry the token and answers 401 to the others.
func (t *httpToken) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t.allows(r) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="cuzk", charset="UTF-8"`)
		http.Error(w, "unauthorized: give the token of --http-token-file (basic auth password, or Authorization: Bearer)", http.StatusUnauthorized)
	})
}

func (t *httpToken) allows(r *http.Request) bool {
	given, ok := "", false
	if _, pass, basic := r.BasicAuth(); basic {
		given, ok = pass, true
	} else if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		given, ok = bearer, true
	}
	sum := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 && ok
}

// observability is what the HTTP endpoints show about one worker process.
type observability struct {
	pool     *pgxpool.Pool
	metrics  *metrics.Metrics
	gpus     devinfo.LatestSamples // nil on CPU hosts
	backends []string
	keys     worker.KeyStates       // the worker's proving keys; nil before it has a catalog
	tiers    worker.KeyTierReporter // where its keys are held; nil without a catalog that says
	budget   *worker.Budget         // the worker's memory budget; nil before the worker exists
}

// watchKeys shows cat's keys: their loads (/readyz, the dashboard) and, when cat
// reports them, their tiers (also metrics).
func (o *observability) watchKeys(cat worker.KeyStates) error {
	o.keys = cat
	r, ok := cat.(worker.KeyTierReporter)
	if !ok {
		return nil
	}
	o.tiers = r
	err := o.metrics.WatchKeyTiers(metrics.KeyTierReader{
		Tiers: func() []metrics.KeyTier {
			ts := r.KeyTiers()
			out := make([]metrics.KeyTier, len(ts))
			for i, t := range ts {
				out[i] = metrics.KeyTier{Circuit: t.Circuit, Bytes: t.Bytes, LastUsed: t.LastUsed}
			}
			return out
		},
		Moves: func() []metrics.KeyMove {
			ms := r.TierMoves()
			out := make([]metrics.KeyMove, len(ms))
			for i, m := range ms {
				out[i] = metrics.KeyMove(m)
			}
			return out
		},
		HostLimit: r.HostKeyLimit,
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// newObservability registers the metrics that do not need the worker (queue depth,
// GPU telemetry). Set the result's metrics as the worker's Observer, then call
// watchWorker once the worker exists.
func newObservability(pool *pgxpool.Pool, devices []worker.Prover, gpus devinfo.LatestSamples) (*observability, error) {
	o := &observability{pool: pool, metrics: metrics.New()}
	for _, d := range devices {
		o.backends = append(o.backends, d.Backend.Name())
	}
	if err := o.metrics.WatchQueue(pool); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if err := o.metrics.WatchBuild(worker.BuildString()); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if gpus != nil {
		o.gpus = gpus
		if err := o.metrics.WatchGPUs(gpus); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return o, nil
}

func (o *observability) watchWorker(w *worker.Worker) error {
	o.budget = w.Budget()
	if err := o.metrics.WatchBudget(w.Budget()); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// readOnly refuses every request that could change something (River UI's API
// changes jobs and queues only with POST, PUT, PATCH and DELETE).
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			h.ServeHTTP(w, r)
		default:
			http.Error(w, "River UI is read-only here: start the worker with --riverui-writable to change jobs or queues", http.StatusForbidden)
		}
	})
}

// handler builds the mux; River UI's background services run until ctx ends.
func (o *observability) handler(ctx context.Context, f httpFlags, log *slog.Logger) (http.Handler, error) {
	tok, err := f.token()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", o.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if len(o.backends) == 0 {
			http.Error(w, "no prover backend loaded", http.StatusServiceUnavailable)
			return
		}
		c, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := o.pool.Ping(c); err != nil {
			http.Error(w, "database unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if wantsJSON(r) {
			o.readyJSON(w)
			return
		}
		fmt.Fprintf(w, "ready: database reachable, backend %s\n", strings.Join(o.backends, ", "))
		if o.budget != nil {
			fmt.Fprintln(w, budgetLine(o.budget))
		}
		if o.keys != nil {
			for _, k := range o.keys.KeyStates() {
				fmt.Fprintln(w, keyLine(k))
			}
		}
		if o.tiers != nil {
			for _, k := range o.tiers.KeyTiers() {
				fmt.Fprintln(w, tierLine(k))
			}
		}
	})

	// An insert-only client (no queues): River UI reads and changes jobs through it.
	rc, err := river.NewClient(riverpgxv5.New(o.pool), &river.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("river ui: client: %w", err)
	}
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints:                riverui.NewEndpoints(rc, nil),
		JobListHideArgsByDefault: false, // the args are the request id and circuit: what an operator looks for
		Logger:                   log.With("component", "riverui"),
		Prefix:                   "/riverui",
	})
	if err != nil {
		return nil, fmt.Errorf("river ui: %w", err)
	}
	if err := ui.Start(ctx); err != nil {
		return nil, fmt.Errorf("river ui: start: %w", err)
	}
	var uiHandler http.Handler = ui
	if !f.RiverUIWritable {
		uiHandler = readOnly(ui)
	} else {
		uiHandler = tok.guard(ui)
	}
	mux.Handle("/riverui/", uiHandler)
	if f.Pprof {
		mux.Handle("GET /debug/pprof/", tok.guard(http.HandlerFunc(pprof.Index)))
		// The command line may carry --database-url with its password: not served.
		mux.HandleFunc("GET /debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "not served: the command line may hold secrets", http.StatusNotFound)
		})
		mux.Handle("GET /debug/pprof/profile", tok.guard(http.HandlerFunc(pprof.Profile)))
		mux.Handle("GET /debug/pprof/symbol", tok.guard(http.HandlerFunc(pprof.Symbol)))
		mux.Handle("GET /debug/pprof/trace", tok.guard(http.HandlerFunc(pprof.Trace)))
	}
	mux.Handle("/riverui", http.RedirectHandler("/riverui/", http.StatusMovedPermanently))

	mux.Handle("/", dashboard.New(o.pool, dashboard.Options{
		Window:     f.DashboardWindow,
		GPUs:       o.gpus,
		Keys:       o.dashboardKeys(),
		KeyTiers:   o.dashboardKeyTiers(),
		Comparison: comparisonPanel(o.pool),
		Log:        log.With("component", "dashboard"),
	}))
	// The charts of long windows read hourly aggregates; keep them filled.
	go dashboard.KeepRollup(ctx, o.pool, time.Minute, log.With("component", "dashboard"))
	return mux, nil
}

// serve listens on f.HTTP and serves the endpoints until ctx ends or the server is closed.
func (o *observability) serve(ctx context.Context, f httpFlags, log *slog.Logger) (*http.Server, error) {
	h, err := o.handler(ctx, f, log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listenAddr(f.HTTP))
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", f.HTTP, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	log.Info("serving http", "addr", ln.Addr().String(), "riverui_writable", f.RiverUIWritable, "pprof", f.Pprof)
	return srv, nil
}

// budgetLine is the memory budget on /readyz: what is reserved of it, its peak, and
// each kind's bytes now and at most, e.g.
//
//	memory budget 2147483648 bytes: 1283457024 reserved (peak 1912602624), waiting 1; process 41943040 (peak 41943040), synthesis 1140850688 (peak 1769996288), ...
func budgetLine(b *worker.Budget) string {
	var kinds []string
	for _, k := range b.Kinds() {
		kinds = append(kinds, fmt.Sprintf("%s %d (peak %d)", k.Kind, k.Bytes, k.Peak))
	}
	return fmt.Sprintf("memory budget %d bytes: %d reserved (peak %d), waiting %d; %s",
		b.Total(), b.Reserved(), b.PeakBytes(), b.Waiting(), strings.Join(kinds, ", "))
}

// keyLine is one proving key's state on /readyz, e.g.
//
//	key synthetic-k22 files: loading 1234567 of 4937433088 bytes (0%), 1.2s
//	key synthetic-k22 on cuda:0: resident 4937433088 bytes, 3.1s; 32614904160 bytes on the device, 28991025792 of them precomputed
//	key synthetic-k22 files: failed after 20ms: proving key ... is truncated or damaged (...)
//	key synthetic-k22 on cuda:0: evicted (device reset: ...), loads again when next used
func keyLine(k worker.KeyState) string {
	where := "files"
	if k.Device != "" {
		where = "on " + k.Device
	}
	took := k.Elapsed.Round(time.Millisecond)
	switch k.State {
	case worker.KeyLoading:
		if k.Total > 0 {
			return fmt.Sprintf("key %s %s: loading %d of %d bytes (%d%%), %v", k.Circuit, where, k.Bytes, k.Total, 100*k.Bytes/k.Total, took)
		}
		return fmt.Sprintf("key %s %s: loading, %v", k.Circuit, where, took)
	case worker.KeyFailed:
		return fmt.Sprintf("key %s %s: failed after %v: %s", k.Circuit, where, took, k.Err)
	case worker.KeyEvicted:
		return fmt.Sprintf("key %s %s: evicted (%s), loads again when next used", k.Circuit, where, k.Err)
	}
	line := fmt.Sprintf("key %s %s: %s %d bytes, %v", k.Circuit, where, k.State, k.Total, took)
	if k.Resident > 0 {
		line += fmt.Sprintf("; %d bytes on the device, %d of them precomputed", k.Resident, k.Precomputed)
	}
	return line
}

// dashboardKeyTiers is the dashboard's "Key tiers" table's provider; nil (no table)
// without a catalog that reports tiers.
func (o *observability) dashboardKeyTiers() dashboard.KeyTiersFunc {
	if o.tiers == nil {
		return nil
	}
	return func() []dashboard.KeyTier {
		ts := o.tiers.KeyTiers()
		out := make([]dashboard.KeyTier, len(ts))
		for i, k := range ts {
			out[i] = dashboard.KeyTier{Circuit: k.Circuit, Tiers: k.Tiers, Devices: k.Devices, Device: k.Bytes[worker.TierDevice],
				Streamed: k.Streamed, Pinned: k.Bytes[worker.TierPinned], File: k.Bytes[worker.TierFile], LastUsed: k.LastUsed}
		}
		return out
	}
}

// dashboardKeys is the dashboard's "Proving keys" section's provider; nil (no section)
// without a catalog.
func (o *observability) dashboardKeys() dashboard.KeysFunc {
	if o.keys == nil {
		return nil
	}
	return func() []dashboard.Key {
		states := o.keys.KeyStates()
		out := make([]dashboard.Key, len(states))
		for i, k := range states {
			out[i] = dashboard.Key{Circuit: k.Circuit, Device: k.Device, State: k.State, Bytes: k.Bytes, Total: k.Total,
				Resident: k.Resident, Precomputed: k.Precomputed, Elapsed: k.Elapsed, Err: k.Err}
		}
		return out
	}
}

// wantsJSON says whether a request asks for JSON (?format=json, or Accept).
func wantsJSON(r *http.Request) bool {
	return r.URL.Query().Get("format") == "json" || strings.Contains(r.Header.Get("Accept"), "application/json")
}

// readyJSON is /readyz as JSON: the backends, each key load's state, and each key's
// tiers with the host key memory limit.
func (o *observability) readyJSON(w http.ResponseWriter) {
	type keyJSON struct {
		Circuit     string  `json:"circuit"`
		Device      string  `json:"device,omitempty"`
		State       string  `json:"state"`
		Bytes       int64   `json:"bytes"`
		Total       int64   `json:"total"`
		Resident    int64   `json:"resident_bytes,omitempty"`
		Precomputed int64   `json:"precomputed_bytes,omitempty"`
		ElapsedMS   float64 `json:"elapsed_ms"`
		Err         string  `json:"error,omitempty"`
	}
	type tierJSON struct {
		Circuit  string           `json:"circuit"`
		Tiers    []string         `json:"tiers"`
		Bytes    map[string]int64 `json:"bytes"`
		Devices  []string         `json:"devices,omitempty"`
		Streamed int64            `json:"streamed_bytes,omitempty"`
		LastUsed *time.Time       `json:"last_used,omitempty"`
	}
	out := struct {
		Ready        bool       `json:"ready"`
		Backends     []string   `json:"backends"`
		Keys         []keyJSON  `json:"keys"`
		Tiers        []tierJSON `json:"key_tiers"`
		HostKeyLimit int64      `json:"key_host_limit_bytes"`
	}{Ready: true, Backends: o.backends, Keys: []keyJSON{}, Tiers: []tierJSON{}}
	if o.keys != nil {
		for _, k := range o.keys.KeyStates() {
			out.Keys = append(out.Keys, keyJSON{Circuit: k.Circuit, Device: k.Device, State: k.State, Bytes: k.Bytes,
				Total: k.Total, Resident: k.Resident, Precomputed: k.Precomputed,
				ElapsedMS: float64(k.Elapsed) / 1e6, Err: k.Err})
		}
	}
	if o.tiers != nil {
		out.HostKeyLimit = o.tiers.HostKeyLimit()
		for _, k := range o.tiers.KeyTiers() {
			t := tierJSON{Circuit: k.Circuit, Tiers: k.Tiers, Bytes: k.Bytes, Devices: k.Devices, Streamed: k.Streamed}
			if !k.LastUsed.IsZero() {
				t.LastUsed = &k.LastUsed
			}
			out.Tiers = append(out.Tiers, t)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// tierLine is /readyz's line for one key's tiers, e.g. "key merkle tiers: device
// 1234 bytes (cuda:0), pinned 5678 bytes, file 5678 bytes; last used 3s ago".
func tierLine(k worker.KeyTier) string {
	parts := make([]string, 0, len(k.Tiers))
	for _, t := range k.Tiers {
		p := fmt.Sprintf("%s %d bytes", t, k.Bytes[t])
		if t == worker.TierDevice {
			p += " (" + strings.Join(k.Devices, ", ") + ")"
			if k.Streamed > 0 {
				p += fmt.Sprintf(", %d bytes of bases streamed", k.Streamed)
			}
		}
		parts = append(parts, p)
	}
	line := fmt.Sprintf("key %s tiers: %s", k.Circuit, strings.Join(parts, ", "))
	if !k.LastUsed.IsZero() {
		line += fmt.Sprintf("; last used %v ago", time.Since(k.LastUsed).Round(time.Second))
	}
	return line
}
