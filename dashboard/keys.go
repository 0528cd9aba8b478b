package dashboard

import (
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// Key is where one proving key of this process stands: being read or made resident,
// resident, evicted (freed for another key, or lost to a device reset), or failed (the
// worker's key catalog, not the database: keys are per process).
type Key struct {
	Circuit string
	Device  string // "" while the key's files are read, before any device
	State   string // loading, resident, evicted or failed
	Bytes   int64  // read so far
	Total   int64  // to read in all
	// Resident is the memory the resident key holds on its device, of which
	// Precomputed is its bases' precomputed copies (0: not resident, or none).
	Resident, Precomputed int64
	Elapsed               time.Duration
	Err                   string
}

// KeysFunc lists this process's proving keys for the "Proving keys" section.
type KeysFunc func() []Key

// keysHTML is the "Proving keys" section, left out when there is no provider.
const keysHTML = `{{define "keys"}}{{if .ShowKeys}}
<h2>Proving keys</h2>
{{if .Keys}}
<table id="keys"><tr><th>circuit</th><th>device</th><th>state</th><th>bytes</th><th>on the device</th><th>elapsed</th><th>error</th></tr>
{{range .Keys}}<tr><td>{{.Circuit}}</td><td>{{.Where}}</td><td{{if eq .State "failed"}} class="bad"{{else if eq .State "evicted"}} class="muted"{{end}}>{{.State}}</td><td class="num">{{.Size}}</td><td class="num">{{.OnDevice}}</td><td class="num">{{.Took}}</td><td class="err">{{.Err}}</td></tr>
{{end}}</table>
{{else}}<p class="muted">no proving key loaded or loading in this worker yet</p>{{end}}
{{if .KeyTiers}}
<h3>Key tiers</h3>
<table id="key-tiers"><tr><th>circuit</th><th>tiers</th><th>device</th><th>pinned</th><th>file</th><th>last used</th></tr>
{{range .KeyTiers}}<tr><td>{{.Circuit}}</td><td>{{.TierList}}</td><td class="num">{{.OnDevices}}</td><td class="num">{{.PinnedSize}}</td><td class="num">{{.FileSize}}</td><td class="num">{{.Ago}}</td></tr>
{{end}}</table>
{{end}}
{{end}}{{end}}`

// KeyTier is where one circuit's proving key is held: on devices, as a host copy
// (pinned: an upload away), or only in its files (a read away).
type KeyTier struct {
	Circuit  string
	Tiers    []string // fastest first: device, pinned, file
	Devices  []string
	Device   int64 // bytes on the devices, summed
	Streamed int64 // bases streamed from host memory by each MSM (not in Device)
	Pinned   int64 // bytes of the host copy
	File     int64 // bytes a read from the files brings into memory
	LastUsed time.Time
}

// KeyTiersFunc lists this process's proving keys' tiers.
type KeyTiersFunc func() []KeyTier

// TierList is the key's tiers, fastest first.
func (k KeyTier) TierList() string { return strings.Join(k.Tiers, " → ") }

// OnDevices is the key's device memory and devices, with what it streams.
func (k KeyTier) OnDevices() string {
	if len(k.Devices) == 0 {
		return "–"
	}
	s := humanize.IBytes(uint64(k.Device)) + " (" + strings.Join(k.Devices, ", ") + ")"
	if k.Streamed > 0 {
		s += ", " + humanize.IBytes(uint64(k.Streamed)) + " streamed"
	}
	return s
}

// PinnedSize is the host copy's size, "–" without one.
func (k KeyTier) PinnedSize() string {
	if k.Pinned <= 0 {
		return "–"
	}
	return humanize.IBytes(uint64(k.Pinned))
}

// FileSize is what a read of the key's files brings into memory, "–" before one.
func (k KeyTier) FileSize() string {
	if k.File <= 0 {
		return "–"
	}
	return humanize.IBytes(uint64(k.File))
}

// Ago is the time since the key's last use, to the second.
func (k KeyTier) Ago() string {
	if k.LastUsed.IsZero() {
		return "–"
	}
	return time.Since(k.LastUsed).Round(time.Second).String() + " ago"
}

// Where names the key's device, or its files being read into memory.
func (k Key) Where() string {
	if k.Device == "" {
		return "files → memory"
	}
	return k.Device
}

// Size is what the load has read: all of it, or so much of so much while loading.
func (k Key) Size() string {
	switch {
	case k.Total <= 0:
		return "–"
	case k.State == "loading" && k.Bytes < k.Total:
		return fmt.Sprintf("%s / %s (%d%%)", humanize.IBytes(uint64(max(k.Bytes, 0))), humanize.IBytes(uint64(k.Total)), 100*k.Bytes/k.Total)
	}
	return humanize.IBytes(uint64(k.Total))
}

// OnDevice is the device memory of a resident key, with its precomputed copies' share.
func (k Key) OnDevice() string {
	switch {
	case k.Resident <= 0:
		return "–"
	case k.Precomputed > 0:
		return fmt.Sprintf("%s (%s precomputed)", humanize.IBytes(uint64(k.Resident)), humanize.IBytes(uint64(k.Precomputed)))
	}
	return humanize.IBytes(uint64(k.Resident))
}

// Took is the load's time, to the millisecond under a second, else to a tenth.
func (k Key) Took() string {
	if k.Elapsed < time.Second {
		return k.Elapsed.Round(time.Millisecond).String()
	}
	return k.Elapsed.Round(100 * time.Millisecond).String()
}
