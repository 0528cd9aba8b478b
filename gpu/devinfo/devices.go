// Package devinfo describes GPUs without talking to them: the device model, --devices
// selection and periodic telemetry (Sample, Poller). It needs neither cgo nor a GPU,
// so what only reads device information (metrics, the dashboard) builds with
// CGO_ENABLED=0; package gpu supplies the real Device list and Sampler (NVML) and the
// CUDA backend.
package devinfo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Device is one GPU as discovery (NVML) or the CUDA runtime saw it.
type Device struct {
	Index        int    `json:"index"` // NVML index; CUDA's ordinal when CUDA_DEVICE_ORDER=PCI_BUS_ID
	Name         string `json:"name"`
	UUID         string `json:"uuid"` // "GPU-…", stable across reboots, unlike Index
	MemoryTotal  uint64 `json:"memory_total_bytes"`
	MemoryFree   uint64 `json:"memory_free_bytes"`
	PCIBusID     string `json:"pci_bus_id"`
	ComputeMajor int    `json:"compute_major,omitempty"` // 0 when NVML could not tell
	ComputeMinor int    `json:"compute_minor,omitempty"`
	SMs          int    `json:"sm_count,omitempty"` // streaming multiprocessors; 0 when unknown (NVML does not tell)
}

// ComputeCapability is "major.minor" (e.g. "9.0"), or "" when unknown.
func (d Device) ComputeCapability() string {
	if d.ComputeMajor == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor)
}

// String is the form used in logs and the attempt row's device column.
func (d Device) String() string {
	return fmt.Sprintf("%d %s (%s)", d.Index, d.Name, d.UUID)
}

// ErrNoDevices reports that discovery found no GPU at all, so that
// --backend auto can fall back to the CPU while --backend cuda fails.
var ErrNoDevices = errors.New("no GPU devices found")

// SelectDevices resolves a --devices value against the discovered devices.
//
// spec is "" or "all" for every device, or a comma list whose entries are indices
// ("2"), inclusive ranges ("0-3") or UUIDs ("GPU-…", matched case-insensitively).
// The result follows the order of spec (ranges ascending). Naming a device that
// does not exist, or the same device twice, is an error that quotes the entries.
func SelectDevices(spec string, all []Device) ([]Device, error) {
	spec = strings.TrimSpace(spec)
	if len(all) == 0 {
		return nil, fmt.Errorf("devices %q: %w", spec, ErrNoDevices)
	}
	if spec == "" || strings.EqualFold(spec, "all") {
		return slices.Clone(all), nil
	}

	byIndex := make(map[int]Device, len(all))
	for _, d := range all {
		byIndex[d.Index] = d
	}
	var (
		out    []Device
		fromBy = make(map[int]string) // device index -> the entry that selected it
	)
	add := func(d Device, entry string) error {
		if prev, dup := fromBy[d.Index]; dup {
			return fmt.Errorf("devices %q: device %d (%s) selected twice, by %q and %q",
				spec, d.Index, d.UUID, prev, entry)
		}
		fromBy[d.Index] = entry
		out = append(out, d)
		return nil
	}
	lookup := func(i int, entry string) (Device, error) {
		d, ok := byIndex[i]
		if !ok {
			return Device{}, fmt.Errorf("devices %q: entry %q: no device with index %d (available: %s)",
				spec, entry, i, availableIndices(all))
		}
		return d, nil
	}

	for pos, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		switch {
		case entry == "":
			return nil, fmt.Errorf("devices %q: empty entry at position %d", spec, pos+1)
		case strings.EqualFold(entry, "all"):
			return nil, fmt.Errorf("devices %q: \"all\" cannot be combined with other entries", spec)
		case isUUID(entry):
			i := slices.IndexFunc(all, func(d Device) bool { return strings.EqualFold(d.UUID, entry) })
			if i < 0 {
				return nil, fmt.Errorf("devices %q: no device with UUID %q", spec, entry)
			}
			if err := add(all[i], entry); err != nil {
				return nil, err
			}
		case strings.Contains(entry, "-"):
			lo, hi, err := parseRange(entry)
			if err != nil {
				return nil, fmt.Errorf("devices %q: %w", spec, err)
			}
			// Stops at the first missing index, so a huge range fails fast.
			for i := lo; i <= hi; i++ {
				d, err := lookup(i, entry)
				if err != nil {
					return nil, err
				}
				if err := add(d, entry); err != nil {
					return nil, err
				}
			}
		default:
			i, err := parseIndex(entry)
			if err != nil {
				return nil, fmt.Errorf("devices %q: entry %q: want an index (2), a range (0-3) or a UUID (GPU-…)", spec, entry)
			}
			d, err := lookup(i, entry)
			if err != nil {
				return nil, err
			}
			if err := add(d, entry); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// isUUID recognises NVML's UUID forms; MIG UUIDs are accepted here so that
// they fail with "no device with UUID" rather than as a malformed range.
func isUUID(s string) bool {
	u := strings.ToUpper(s)
	return strings.HasPrefix(u, "GPU-") || strings.HasPrefix(u, "MIG-")
}

func parseRange(entry string) (lo, hi int, err error) {
	a, b, _ := strings.Cut(entry, "-")
	lo, errLo := parseIndex(strings.TrimSpace(a))
	hi, errHi := parseIndex(strings.TrimSpace(b))
	if errLo != nil || errHi != nil {
		return 0, 0, fmt.Errorf("entry %q: a range is two indices, e.g. 0-3", entry)
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("entry %q: range start %d is after its end %d", entry, lo, hi)
	}
	return lo, hi, nil
}

// parseIndex accepts only plain decimal digits: "+1", "-1" and " 1" are typos, not indices.
func parseIndex(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a device index", s)
	}
	return strconv.Atoi(s)
}

func availableIndices(all []Device) string {
	idx := make([]string, len(all))
	for i, d := range all {
		idx[i] = strconv.Itoa(d.Index)
	}
	return strings.Join(idx, ",")
}

// Sample is one telemetry reading of one device. It is stored as jsonb in the
// attempt row, so the JSON names are a contract. Pointer fields are nil (and
// omitted) when the device does not support that reading; 0 is a real value.
type Sample struct {
	Index         int       `json:"index"`
	UUID          string    `json:"uuid"`
	At            time.Time `json:"at"`
	GPUUtilPct    *uint32   `json:"gpu_util_pct,omitempty"` // over NVML's last sample period
	MemUtilPct    *uint32   `json:"mem_util_pct,omitempty"` // memory controller busy, not capacity
	MemUsedBytes  uint64    `json:"mem_used_bytes"`
	MemTotalBytes uint64    `json:"mem_total_bytes"`
	TemperatureC  *uint32   `json:"temperature_c,omitempty"`
	PowerMW       *uint32   `json:"power_mw,omitempty"`
	SMClockMHz    *uint32   `json:"sm_clock_mhz,omitempty"`
}

// Sampler reads one telemetry sample from a device, by index. *NVML implements
// it; a call costs a handful of driver queries, cheap enough for every attempt.
type Sampler interface {
	Sample(ctx context.Context, index int) (Sample, error)
}

// LatestSamples is the read side of a Poller, for the metrics layer and for
// attempt rows that want a recent reading without querying the driver.
type LatestSamples interface {
	// Latest is the newest sample of the device, false before the first success.
	Latest(index int) (Sample, bool)
	// LatestAll is the newest sample of every device that has one, by index.
	LatestAll() []Sample
}

// DefaultPollInterval suits gauges scraped every 15 s or so.
const DefaultPollInterval = 5 * time.Second

// Poller samples a fixed set of devices periodically and keeps the latest
// sample of each, readable concurrently while Run is going.
type Poller struct {
	src      Sampler
	indices  []int
	interval time.Duration
	onErr    func(index int, err error)

	mu     sync.RWMutex
	latest map[int]Sample
}

var _ LatestSamples = (*Poller)(nil)

// NewPoller polls indices from src every interval (DefaultPollInterval if <= 0).
// onErr, if not nil, is called from Run's goroutine for each failed sample; the
// device's previous sample is kept, and its At shows how old it is.
func NewPoller(src Sampler, indices []int, interval time.Duration, onErr func(index int, err error)) *Poller {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	return &Poller{
		src:      src,
		indices:  slices.Clone(indices),
		interval: interval,
		onErr:    onErr,
		latest:   make(map[int]Sample, len(indices)),
	}
}

// Run samples every device at once and then every interval until ctx is done.
// Call it in its own goroutine; it returns after ctx is cancelled.
func (p *Poller) Run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.pollOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Poller) pollOnce(ctx context.Context) {
	for _, i := range p.indices {
		if ctx.Err() != nil {
			return
		}
		s, err := p.src.Sample(ctx, i)
		if err != nil {
			if p.onErr != nil {
				p.onErr(i, err)
			}
			continue
		}
		p.mu.Lock()
		p.latest[i] = s
		p.mu.Unlock()
	}
}

// Latest implements LatestSamples.
func (p *Poller) Latest(index int) (Sample, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s, ok := p.latest[index]
	return s, ok
}

// LatestAll implements LatestSamples.
func (p *Poller) LatestAll() []Sample {
	p.mu.RLock()
	out := make([]Sample, 0, len(p.latest))
	for _, s := range p.latest {
		out = append(out, s)
	}
	p.mu.RUnlock()
	slices.SortFunc(out, func(a, b Sample) int { return a.Index - b.Index })
	return out
}
