package devinfo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func fakeDevices(n int) []Device {
	out := make([]Device, n)
	for i := range out {
		out[i] = Device{Index: i, Name: "NVIDIA H200", UUID: fmt.Sprintf("GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i)}
	}
	return out
}

func TestSelectDevices(t *testing.T) {
	four := fakeDevices(4)
	tests := []struct {
		spec    string
		devs    []Device
		want    []int  // selected indices, in order
		wantErr string // substring of the error
	}{
		{spec: "", devs: four, want: []int{0, 1, 2, 3}},
		{spec: "all", devs: four, want: []int{0, 1, 2, 3}},
		{spec: " ALL ", devs: four, want: []int{0, 1, 2, 3}},
		{spec: "2", devs: four, want: []int{2}},
		{spec: "2,0", devs: four, want: []int{2, 0}},
		{spec: " 1 , 3 ", devs: four, want: []int{1, 3}},
		{spec: "0-3", devs: four, want: []int{0, 1, 2, 3}},
		{spec: "1-1", devs: four, want: []int{1}},
		{spec: "3,0-1", devs: four, want: []int{3, 0, 1}},
		{spec: "GPU-00000002-aaaa-bbbb-cccc-dddddddddddd", devs: four, want: []int{2}},
		{spec: "gpu-00000003-AAAA-bbbb-cccc-dddddddddddd,0", devs: four, want: []int{3, 0}},

		{spec: "", devs: nil, wantErr: `devices "": no GPU devices found`},
		{spec: "0", devs: nil, wantErr: "no GPU devices found"},
		{spec: "4", devs: four, wantErr: `devices "4": entry "4": no device with index 4 (available: 0,1,2,3)`},
		{spec: "2-5", devs: four, wantErr: `entry "2-5": no device with index 4`},
		{spec: "0-99999999999", devs: four, wantErr: `entry "0-99999999999": no device with index 4`},
		{spec: "1,1", devs: four, wantErr: `device 1 (GPU-00000001-aaaa-bbbb-cccc-dddddddddddd) selected twice, by "1" and "1"`},
		{spec: "0-2,1", devs: four, wantErr: `selected twice, by "0-2" and "1"`},
		{spec: "2,GPU-00000002-aaaa-bbbb-cccc-dddddddddddd", devs: four, wantErr: `by "2" and "GPU-00000002-aaaa-bbbb-cccc-dddddddddddd"`},
		{spec: "GPU-deadbeef", devs: four, wantErr: `devices "GPU-deadbeef": no device with UUID "GPU-deadbeef"`},
		{spec: "MIG-1234", devs: four, wantErr: `no device with UUID "MIG-1234"`},
		{spec: "0,,1", devs: four, wantErr: `devices "0,,1": empty entry at position 2`},
		{spec: "0,", devs: four, wantErr: "empty entry at position 2"},
		{spec: "all,0", devs: four, wantErr: `"all" cannot be combined with other entries`},
		{spec: "3-1", devs: four, wantErr: `entry "3-1": range start 3 is after its end 1`},
		{spec: "-1", devs: four, wantErr: `entry "-1": a range is two indices`},
		{spec: "1-", devs: four, wantErr: `entry "1-": a range is two indices`},
		{spec: "a-b", devs: four, wantErr: `entry "a-b": a range is two indices`},
		{spec: "+1", devs: four, wantErr: `entry "+1": want an index (2), a range (0-3) or a UUID`},
		{spec: "gpu0", devs: four, wantErr: `entry "gpu0": want an index`},
		{spec: "99999999999999999999", devs: four, wantErr: `want an index`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := SelectDevices(tt.spec, tt.devs)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("SelectDevices(%q) = %v, want error containing %q", tt.spec, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SelectDevices(%q) error = %q, want it to contain %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SelectDevices(%q): %v", tt.spec, err)
			}
			var idx []int
			for _, d := range got {
				idx = append(idx, d.Index)
			}
			if !slices.Equal(idx, tt.want) {
				t.Fatalf("SelectDevices(%q) = %v, want %v", tt.spec, idx, tt.want)
			}
		})
	}
}

func TestSelectDevicesNoDevicesIsDetectable(t *testing.T) {
	_, err := SelectDevices("all", nil)
	if !errors.Is(err, ErrNoDevices) {
		t.Fatalf("error %v does not wrap ErrNoDevices", err)
	}
}

func TestSelectDevicesDoesNotAlias(t *testing.T) {
	all := fakeDevices(2)
	got, err := SelectDevices("", all)
	if err != nil {
		t.Fatal(err)
	}
	got[0].Name = "changed"
	if all[0].Name == "changed" {
		t.Fatal("SelectDevices returned the caller's slice")
	}
}

func TestDeviceStrings(t *testing.T) {
	d := Device{Index: 1, Name: "NVIDIA H200", UUID: "GPU-x", ComputeMajor: 9}
	if got := d.ComputeCapability(); got != "9.0" {
		t.Errorf("ComputeCapability = %q, want 9.0", got)
	}
	if got := (Device{}).ComputeCapability(); got != "" {
		t.Errorf("unknown ComputeCapability = %q, want empty", got)
	}
	if got := d.String(); got != "1 NVIDIA H200 (GPU-x)" {
		t.Errorf("String = %q", got)
	}
}

// The attempt row stores Sample as jsonb; unsupported readings must be absent,
// and a real zero must be present.
func TestSampleJSON(t *testing.T) {
	zero := uint32(0)
	b, err := json.Marshal(Sample{Index: 1, UUID: "GPU-x", GPUUtilPct: &zero, MemUtilPct: &zero, MemUsedBytes: 5, MemTotalBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"index", "uuid", "at", "gpu_util_pct", "mem_util_pct", "mem_used_bytes", "mem_total_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s missing from %s", k, b)
		}
	}
	for _, k := range []string{"temperature_c", "power_mw", "sm_clock_mhz"} {
		if _, ok := m[k]; ok {
			t.Errorf("unsupported %s present in %s", k, b)
		}
	}
}

// fakeSampler counts calls per device and fails on demand.
type fakeSampler struct {
	calls [4]atomic.Int64
	fail  atomic.Bool
}

func (f *fakeSampler) Sample(ctx context.Context, index int) (Sample, error) {
	n := f.calls[index].Add(1)
	if f.fail.Load() {
		return Sample{}, errors.New("device lost")
	}
	return Sample{Index: index, At: time.Now(), MemUsedBytes: uint64(n), MemTotalBytes: 1 << 40}, nil
}

// waitFor polls cond; the machines that run this are shared, so be generous.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPollerConcurrentReads(t *testing.T) {
	src := &fakeSampler{}
	p := NewPoller(src, []int{2, 0}, time.Millisecond, nil)
	if _, ok := p.Latest(0); ok {
		t.Fatal("Latest before Run reported a sample")
	}
	if got := p.LatestAll(); len(got) != 0 {
		t.Fatalf("LatestAll before Run = %v", got)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()

	// Readers race the poller; -race checks the locking, the loop checks that
	// each device's readings only move forward.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var last uint64
			for src.calls[0].Load() < 20 {
				if s, ok := p.Latest(0); ok {
					if s.MemUsedBytes < last {
						t.Errorf("sample went backwards: %d after %d", s.MemUsedBytes, last)
						return
					}
					last = s.MemUsedBytes
				}
				var m LatestSamples = p
				for _, s := range m.LatestAll() {
					if s.Index != 0 && s.Index != 2 {
						t.Errorf("sample for unpolled device %d", s.Index)
					}
				}
				time.Sleep(100 * time.Microsecond)
			}
		})
	}
	wg.Wait()

	all := p.LatestAll()
	if len(all) != 2 || all[0].Index != 0 || all[1].Index != 2 {
		t.Fatalf("LatestAll = %+v, want devices 0 and 2 in index order", all)
	}
	if src.calls[1].Load() != 0 || src.calls[3].Load() != 0 {
		t.Fatal("poller sampled a device it was not given")
	}

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	after := src.calls[0].Load()
	time.Sleep(20 * time.Millisecond)
	if got := src.calls[0].Load(); got != after {
		t.Fatalf("sampled %d times after Run returned", got-after)
	}
}

func TestPollerKeepsLastSampleOnError(t *testing.T) {
	src := &fakeSampler{}
	var errs atomic.Int64
	p := NewPoller(src, []int{1}, time.Millisecond, func(index int, err error) {
		if index != 1 || err == nil {
			t.Errorf("onErr(%d, %v)", index, err)
		}
		errs.Add(1)
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()

	waitFor(t, "first sample", func() bool { _, ok := p.Latest(1); return ok })
	src.fail.Store(true)
	waitFor(t, "errors reported", func() bool { return errs.Load() >= 3 })
	before, _ := p.Latest(1)
	waitFor(t, "more errors", func() bool { return errs.Load() >= 6 })
	after, ok := p.Latest(1)
	if !ok || after.MemUsedBytes != before.MemUsedBytes {
		t.Fatalf("sample changed while sampling failed: %+v -> %+v", before, after)
	}
	cancel()
	<-done
}

func TestPollerDefaultInterval(t *testing.T) {
	if p := NewPoller(&fakeSampler{}, []int{0}, 0, nil); p.interval != DefaultPollInterval {
		t.Fatalf("interval = %v, want %v", p.interval, DefaultPollInterval)
	}
}

func TestPollerSamplesAtOnce(t *testing.T) {
	// The first tick is an hour away: a sample now proves Run does not wait for it.
	p := NewPoller(&fakeSampler{}, []int{0}, time.Hour, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	waitFor(t, "immediate sample", func() bool { _, ok := p.Latest(0); return ok })
	cancel()
	<-done
}

func TestTelemetryJSON(t *testing.T) {
	src := &fakeSampler{}
	tel := StartTelemetry(src, []int{1, 3}, time.Millisecond, nil)
	closed := 0
	tel.OnClose(func() { closed++ })
	defer tel.Close()
	// The first sample is taken before StartTelemetry returns.
	for _, i := range []int{1, 3} {
		b := tel.JSON(i)()
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("device %d: %q: %v", i, b, err)
		}
		if m["index"] != float64(i) || m["mem_total_bytes"] != float64(1<<40) || m["mem_used_bytes"] == nil {
			t.Errorf("device %d: %s", i, b)
		}
	}
	if b := tel.JSON(2)(); b != nil {
		t.Errorf("unpolled device: %s, want nil", b)
	}
	// Later samples replace the first (the fake counts calls in mem_used_bytes).
	waitFor(t, "a second sample", func() bool {
		s, _ := tel.Latest(1)
		return s.MemUsedBytes >= 2
	})
	tel.Close() // and once more when the test returns: Close may be repeated
	n := src.calls[1].Load()
	time.Sleep(20 * time.Millisecond)
	if m := src.calls[1].Load(); m != n {
		t.Errorf("sampled %d more times after Close", m-n)
	}
	tel.Close()
	if closed != 1 {
		t.Errorf("OnClose ran %d times, want 1", closed)
	}
	var none *Telemetry
	none.Close() // no GPU: nothing to stop
}
