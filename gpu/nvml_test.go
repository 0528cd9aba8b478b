package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/cuzk/cuzk/gpu/devinfo"
)

// openOrSkip opens the host's NVML. Without it the test is skipped with the
// reason, unless CUZK_REQUIRE_GPU=1 (set on GPU hosts, where a skip would hide
// a broken driver).
func openOrSkip(t *testing.T) *NVML {
	t.Helper()
	n, err := OpenNVML()
	if err != nil {
		if !errors.Is(err, ErrNVMLUnavailable) || !strings.HasPrefix(err.Error(), "unavailable: ") {
			t.Fatalf("OpenNVML error %q does not wrap ErrNVMLUnavailable", err)
		}
		if os.Getenv("CUZK_REQUIRE_GPU") == "1" {
			t.Fatalf("CUZK_REQUIRE_GPU=1 but NVML %v", err)
		}
		t.Skip("NVML unavailable (the reason is on the \"NVML tests:\" line)")
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

// TestNVMLReal runs against the host's driver: on GPU hosts it is the check
// that discovery and telemetry return sane values.
func TestNVMLReal(t *testing.T) {
	n := openOrSkip(t)
	ctx := t.Context()

	devs, err := n.Devices(ctx)
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if len(devs) == 0 {
		t.Fatal("NVML initialised but lists no devices")
	}
	if v, err := n.DriverVersion(); err != nil || v == "" {
		t.Errorf("DriverVersion = %q, %v", v, err)
	} else {
		t.Logf("driver %s", v)
	}
	for _, d := range devs {
		j, _ := json.Marshal(d)
		t.Logf("device %s cc=%s %s", d, d.ComputeCapability(), j)
		if d.Name == "" || !strings.HasPrefix(d.UUID, "GPU-") || d.PCIBusID == "" {
			t.Errorf("device %d: empty name, UUID or PCI bus id: %+v", d.Index, d)
		}
		if d.MemoryTotal == 0 || d.MemoryFree > d.MemoryTotal {
			t.Errorf("device %d: memory free %d of total %d", d.Index, d.MemoryFree, d.MemoryTotal)
		}

		s, err := n.Sample(ctx, d.Index)
		if err != nil {
			t.Fatalf("Sample(%d): %v", d.Index, err)
		}
		j, _ = json.Marshal(s)
		t.Logf("sample %s", j)
		checkSane(t, d, s)
	}

	// Selecting by UUID must find what discovery listed.
	sel, err := devinfo.SelectDevices(devs[len(devs)-1].UUID, devs)
	if err != nil || len(sel) != 1 || sel[0].Index != devs[len(devs)-1].Index {
		t.Fatalf("SelectDevices by UUID = %v, %v", sel, err)
	}

	// The poller over the real driver, as the worker runs it: every device's first
	// sample is taken before StartTelemetry returns.
	indices := make([]int, len(devs))
	for i, d := range devs {
		indices[i] = d.Index
	}
	tel := devinfo.StartTelemetry(n, indices, 10*time.Millisecond, func(i int, err error) { t.Errorf("poll device %d: %v", i, err) })
	tel.Close()
	if got := tel.LatestAll(); len(got) != len(devs) {
		t.Fatalf("%d polled samples, want one of each of %d devices", len(got), len(devs))
	}
	for i, s := range tel.LatestAll() {
		checkSane(t, devs[i], s)
	}
}

// BenchmarkNVMLSample is the cost a per-attempt Sample adds.
func BenchmarkNVMLSample(b *testing.B) {
	n, err := OpenNVML()
	if err != nil {
		b.Skipf("NVML %v", err)
	}
	defer n.Close()
	ctx := b.Context()
	for b.Loop() {
		if _, err := n.Sample(ctx, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func checkSane(t *testing.T, d devinfo.Device, s devinfo.Sample) {
	t.Helper()
	if s.Index != d.Index || s.UUID != d.UUID {
		t.Errorf("sample of device %d is labelled %d %s", d.Index, s.Index, s.UUID)
	}
	if s.MemTotalBytes != d.MemoryTotal || s.MemUsedBytes > s.MemTotalBytes {
		t.Errorf("device %d: memory used %d of total %d (discovery said %d)", d.Index, s.MemUsedBytes, s.MemTotalBytes, d.MemoryTotal)
	}
	for name, v := range map[string]*uint32{"gpu_util_pct": s.GPUUtilPct, "mem_util_pct": s.MemUtilPct} {
		if v != nil && *v > 100 {
			t.Errorf("device %d: %s = %d", d.Index, name, *v)
		}
	}
	if v := s.TemperatureC; v != nil && (*v < 1 || *v > 120) {
		t.Errorf("device %d: temperature %d C", d.Index, *v)
	}
	if v := s.PowerMW; v != nil && *v > 2_000_000 {
		t.Errorf("device %d: power %d mW", d.Index, *v)
	}
	if v := s.SMClockMHz; v != nil && *v > 10_000 {
		t.Errorf("device %d: SM clock %d MHz", d.Index, *v)
	}
	if time.Since(s.At) > time.Minute || s.At.After(time.Now()) {
		t.Errorf("device %d: sample time %v", d.Index, s.At)
	}
}

// Without a driver (CI, laptops), opening must fail with the reason, not panic.
func TestOpenNVMLMissingLibrary(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	_, err := openNVML(lib, "libcuzk-test-missing.so.1")
	if !errors.Is(err, ErrNVMLUnavailable) {
		t.Fatalf("error %v does not wrap ErrNVMLUnavailable", err)
	}
	// dlerror's own words, which go-nvml drops.
	if msg := err.Error(); !strings.HasPrefix(msg, "unavailable: libcuzk-test-missing.so.1: ") || !strings.Contains(msg, "No such file") {
		t.Fatalf("error %q lacks the dlopen reason", msg)
	}
}

func TestOpenNVMLDriverNotLoaded(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}
	_, err := openNVML(lib, nvmlLibrary)
	if !errors.Is(err, ErrNVMLUnavailable) || !strings.HasPrefix(err.Error(), "unavailable: nvmlInit: ") {
		t.Fatalf("error = %v", err)
	}
}

// mockDevice is a healthy H200; tests override single readings.
func mockDevice(uuid string) *mock.Device {
	var pci nvml.PciInfo
	for i, c := range "00000000:1B:00.0" {
		pci.BusId[i] = int8(c)
	}
	return &mock.Device{
		GetUUIDFunc:                  func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetNameFunc:                  func() (string, nvml.Return) { return "NVIDIA H200", nvml.SUCCESS },
		GetMemoryInfoFunc:            func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 100, Free: 60, Used: 40}, nvml.SUCCESS },
		GetPciInfoFunc:               func() (nvml.PciInfo, nvml.Return) { return pci, nvml.SUCCESS },
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) { return 9, 0, nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: 97, Memory: 0}, nvml.SUCCESS
		},
		GetTemperatureFunc: func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
			if s != nvml.TEMPERATURE_GPU {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return 54, nvml.SUCCESS
		},
		GetPowerUsageFunc: func() (uint32, nvml.Return) { return 412_000, nvml.SUCCESS },
		GetClockInfoFunc: func(c nvml.ClockType) (uint32, nvml.Return) {
			if c != nvml.CLOCK_SM {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return 1980, nvml.SUCCESS
		},
	}
}

func mockNVML(t *testing.T, devs ...*mock.Device) (*NVML, *mock.Interface) {
	t.Helper()
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "580.159.04", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return devs[i], nvml.SUCCESS
		},
	}
	n, err := openNVML(lib, nvmlLibrary)
	if err != nil {
		t.Fatalf("openNVML: %v", err)
	}
	return n, lib
}

func TestNVMLDevicesMock(t *testing.T) {
	old := mockDevice("GPU-b")
	old.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_FUNCTION_NOT_FOUND }
	n, _ := mockNVML(t, mockDevice("GPU-a"), old)
	devs, err := n.Devices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []devinfo.Device{
		{Index: 0, Name: "NVIDIA H200", UUID: "GPU-a", MemoryTotal: 100, MemoryFree: 60, PCIBusID: "00000000:1B:00.0", ComputeMajor: 9},
		{Index: 1, Name: "NVIDIA H200", UUID: "GPU-b", MemoryTotal: 100, MemoryFree: 60, PCIBusID: "00000000:1B:00.0"},
	}
	if len(devs) != len(want) || devs[0] != want[0] || devs[1] != want[1] {
		t.Fatalf("Devices =\n%+v\nwant\n%+v", devs, want)
	}
}

func TestNVMLDriverVersionMock(t *testing.T) {
	n, lib := mockNVML(t, mockDevice("GPU-a"))
	if v, err := n.DriverVersion(); err != nil || v != "580.159.04" {
		t.Errorf("DriverVersion = %q, %v; want 580.159.04", v, err)
	}
	lib.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
	if _, err := n.DriverVersion(); err == nil || !strings.Contains(err.Error(), "driver version") {
		t.Errorf("DriverVersion with a failing driver: err = %v", err)
	}
	n.Close()
	if _, err := n.DriverVersion(); err == nil {
		t.Error("DriverVersion after Close: no error")
	}
}

func TestNVMLSampleMock(t *testing.T) {
	noPower := mockDevice("GPU-b")
	noPower.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	lost := mockDevice("GPU-c")
	lost.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	n, _ := mockNVML(t, mockDevice("GPU-a"), noPower, lost)
	ctx := t.Context()

	s, err := n.Sample(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(s.At) > time.Minute {
		t.Fatalf("sample time %v", s.At)
	}
	s.At = time.Time{}
	got, _ := json.Marshal(s)
	want := `{"index":0,"uuid":"GPU-a","at":"0001-01-01T00:00:00Z","gpu_util_pct":97,"mem_util_pct":0,"mem_used_bytes":40,"mem_total_bytes":100,"temperature_c":54,"power_mw":412000,"sm_clock_mhz":1980}`
	if string(got) != want {
		t.Fatalf("sample JSON\n%s\nwant\n%s", got, want)
	}

	s, err = n.Sample(ctx, 1)
	if err != nil || s.PowerMW != nil || s.TemperatureC == nil {
		t.Fatalf("unsupported power: sample %+v, err %v; want power nil, the rest read", s, err)
	}

	_, err = n.Sample(ctx, 2)
	if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || !strings.Contains(err.Error(), "device 2: temperature") {
		t.Fatalf("lost GPU: err = %v", err)
	}

	if _, err := n.Sample(ctx, 3); err == nil || !strings.Contains(err.Error(), "no device with index 3") {
		t.Fatalf("index out of range: err = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := n.Sample(cctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: err = %v", err)
	}
}

func TestNVMLCloseMock(t *testing.T) {
	n, lib := mockNVML(t, mockDevice("GPU-a"))
	for range 2 {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if c := len(lib.ShutdownCalls()); c != 1 {
		t.Fatalf("Shutdown called %d times, want 1", c)
	}
	if _, err := n.Sample(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Sample after Close: err = %v", err)
	}
	if _, err := n.Devices(t.Context()); err == nil {
		t.Fatal("Devices after Close succeeded")
	}
}

// A failure while listing handles must not leave NVML initialised.
func TestOpenNVMLShutsDownOnHandleFailure(t *testing.T) {
	bad := mockDevice("")
	bad.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return bad, nvml.SUCCESS },
	}
	_, err := openNVML(lib, nvmlLibrary)
	if err == nil || errors.Is(err, ErrNVMLUnavailable) || !strings.Contains(err.Error(), "device 0: uuid") {
		t.Fatalf("err = %v; want a device error, not unavailable", err)
	}
	if len(lib.ShutdownCalls()) != 1 {
		t.Fatal("NVML left initialised after a failed open")
	}
}
