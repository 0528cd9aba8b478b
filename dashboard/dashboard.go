// Package dashboard renders an operator's overview page from the database: timing
// history per circuit as charts (per-phase stacked bars, p50/p95 of the total,
// throughput, GPU utilization where attempts carry telemetry), recent failures (one
// row per request, long errors folded), live workers and their GPUs.
// Everything is rendered on the server as HTML and inline SVG, so the page loads on
// machines with no network beyond the worker itself.
package dashboard

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"

	"github.com/cuzk/cuzk/gpu/devinfo"
	"github.com/cuzk/cuzk/store"
)

// Comparison is the content of the "last comparison between the two most recent
// builds" panel: a titled table the provider fills however it compares.
type Comparison struct {
	Title   string     // e.g. "v1.3 abc123 vs v1.2 def456"
	Note    string     // one line under the table (method, significance)
	Columns []string   // table header
	Rows    [][]string // cells, one slice per row
}

// ComparisonFunc provides the build comparison panel; it returns nil, nil when there
// is nothing to compare yet.
type ComparisonFunc func(ctx context.Context) (*Comparison, error)

// Options configure the page.
type Options struct {
	Window   time.Duration // how far back the charts go unless ?window= says; default 24h
	Failures int           // recent failures listed; default 20
	// Comparison, if set, fills the build comparison panel; the panel is left out when nil.
	Comparison ComparisonFunc
	// GPUs, if set, are this process's devices' live readings (nil on CPU hosts).
	GPUs devinfo.LatestSamples
	// Keys, if set, fills the "Proving keys" section; it is left out when nil.
	Keys KeysFunc
	// KeyTiers, if set, fills the "Key tiers" table of the "Proving keys" section.
	KeyTiers KeyTiersFunc
	// QueryTimeout bounds the page's queries; default 10s.
	QueryTimeout time.Duration
	Log          *slog.Logger
}

// Handler serves the dashboard at its mount point.
type Handler struct {
	db   store.DB
	opts Options
	tmpl *template.Template
}

//go:embed page.html
var pageHTML string

// New returns the dashboard reading from db.
func New(db store.DB, opts Options) *Handler {
	if opts.Window <= 0 {
		opts.Window = 24 * time.Hour
	}
	if opts.Failures <= 0 {
		opts.Failures = 20
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	funcs := template.FuncMap{
		"timing":     TimingChart,
		"throughput": ThroughputChart,
		"gpu":        GPUChart,
		"clip":       clipError,
		"ms":         FormatMs,
		"color":      func(p string) template.CSS { return template.CSS(PhaseColors[p]) },
		"bytes":      func(n uint64) string { return humanize.IBytes(n) },
		"ago": func(now, t time.Time) string {
			return humanize.RelTime(t, now, "ago", "from now")
		},
		"dur":  shortDuration,
		"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"pct":  func(p *uint32) string { return optional(p, "%d%%") },
		"temp": func(p *uint32) string { return optional(p, "%d °C") },
		"watts": func(p *uint32) string {
			if p == nil {
				return "–"
			}
			return fmt.Sprintf("%.0f W", float64(*p)/1000)
		},
		"cfg": func(m map[string]any, k string) string {
			if v, ok := m[k]; ok {
				if f, isNum := v.(float64); isNum && k == "mem_budget" {
					return humanize.IBytes(uint64(f))
				}
				return fmt.Sprint(v)
			}
			return ""
		},
	}
	return &Handler{db: db, opts: opts, tmpl: template.Must(template.Must(template.New("page").Funcs(funcs).Parse(pageHTML)).Parse(keysHTML))}
}

// errorPreview is how much of an error the failures table shows before "more".
const errorPreview = 300

// clipError is the start of s, at most errorPreview bytes, cut at a character boundary.
func clipError(s string) string {
	if len(s) <= errorPreview {
		return s
	}
	cut := errorPreview
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func optional(p *uint32, format string) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf(format, *p)
}

// Windows offered as links on the page.
var windows = []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour}

func shortDuration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	default:
		return strings.TrimSuffix(d.String(), "0s")
	}
}

// maxWindow is the longest window a page may ask for: ten years is more history than
// any deployment keeps, and a bound keeps days times 24h from overflowing a Duration.
const maxWindow = 3650 * 24 * time.Hour

// parseWindow accepts Go durations and whole days ("7d"), from 1m to maxWindow.
func parseWindow(s string) (time.Duration, error) {
	bad := fmt.Errorf("window %q: want a duration from 1m to %s, like 6h or 7d", s, shortDuration(maxWindow))
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 1 || days > int(maxWindow/(24*time.Hour)) {
			return 0, bad
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Minute || d > maxWindow {
		return 0, bad
	}
	return d, nil
}

type page struct {
	*Data
	Windows     []time.Duration
	ShowCompare bool
	CompareErr  string
	Stack       []string
	ShowKeys    bool
	Keys        []Key
	KeyTiers    []KeyTier
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
		return
	}
	window := h.opts.Window
	if s := r.URL.Query().Get("window"); s != "" {
		var err error
		if window, err = parseWindow(s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.QueryTimeout)
	defer cancel()
	d, err := load(ctx, h.db, window, h.opts.Failures)
	if err != nil {
		h.opts.Log.Warn("dashboard", "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	p := page{Data: d, Windows: windows, Stack: StackPhases()}
	if h.opts.GPUs != nil {
		for _, s := range h.opts.GPUs.LatestAll() {
			d.GPUs = append(d.GPUs, GPU{Device: fmt.Sprintf("%d %s", s.Index, s.UUID), Worker: "this worker", Sample: s, Live: true})
		}
	}
	if h.opts.Keys != nil {
		p.ShowKeys, p.Keys = true, h.opts.Keys()
	}
	if h.opts.KeyTiers != nil {
		p.KeyTiers = h.opts.KeyTiers()
	}
	if h.opts.Comparison != nil {
		p.ShowCompare = true
		if d.Comparison, err = h.opts.Comparison(ctx); err != nil {
			p.CompareErr = err.Error()
		}
	}
	var buf bytes.Buffer
	if err := h.tmpl.Execute(&buf, p); err != nil {
		h.opts.Log.Error("dashboard template", "err", err)
		http.Error(w, "dashboard: render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = buf.WriteTo(w)
}
