package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/cuzk/cuzk/gpu/devinfo"
	// Without cgo the build stops there with a message naming the C compiler,
	// rather than only with go-nvml's "undefined: Return".
	_ "github.com/cuzk/cuzk/internal/requirecgo"
)

// nvmlLibrary is the soname go-nvml dlopens at Init.
const nvmlLibrary = "libnvidia-ml.so.1"

// ErrNVMLUnavailable wraps every reason NVML cannot be used on this host (no
// driver library, driver not loaded, version mismatch), so callers can tell "no
// GPU here" from a failure on a GPU that exists.
var ErrNVMLUnavailable = errors.New("unavailable")

// NVML is one initialised NVML session: OpenNVML starts it, Close ends it. It
// lists devices and implements devinfo.Sampler; it is safe for concurrent use.
type NVML struct {
	lib nvml.Interface

	// mu guards closed: every driver call holds it for reading, because after
	// Shutdown the library is dlclosed and a call into it would crash.
	mu      sync.RWMutex
	closed  bool
	handles []nvmlHandle // by NVML index, fixed at open
}

type nvmlHandle struct {
	dev  nvml.Device
	uuid string
}

var _ devinfo.Sampler = (*NVML)(nil)

// OpenNVML loads libnvidia-ml.so.1 and initialises NVML. Without a usable
// driver it returns an error wrapping ErrNVMLUnavailable that says why,
// e.g. "unavailable: libnvidia-ml.so.1: cannot open shared object file".
func OpenNVML() (*NVML, error) {
	return openNVML(nvml.New(nvml.WithLibraryPath(nvmlLibrary)), nvmlLibrary)
}

// openNVML takes the library as a parameter so tests can pass go-nvml's mock.
func openNVML(lib nvml.Interface, path string) (*NVML, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: %s", ErrNVMLUnavailable, initFailure(ret, path))
	}
	n := &NVML{lib: lib}
	if err := n.loadHandles(); err != nil {
		_ = lib.Shutdown()
		return nil, err
	}
	return n, nil
}

// initFailure explains a failed Init. go-nvml maps every dlopen failure to
// ERROR_LIBRARY_NOT_FOUND and drops dlerror's text, which is the useful part
// (missing file, wrong architecture, missing dependency), so it probes again.
func initFailure(ret nvml.Return, path string) string {
	if ret != nvml.ERROR_LIBRARY_NOT_FOUND {
		return "nvmlInit: " + ret.Error()
	}
	lib := dl.New(path, dl.RTLD_LAZY|dl.RTLD_LOCAL)
	if err := lib.Open(); err != nil {
		return err.Error()
	}
	_ = lib.Close()
	return path + ": library not found"
}

func (n *NVML) loadHandles() error {
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: device count: %w", ret)
	}
	n.handles = make([]nvmlHandle, count)
	for i := range count {
		dev, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("nvml: device %d: handle: %w", i, ret)
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("nvml: device %d: uuid: %w", i, ret)
		}
		n.handles[i] = nvmlHandle{dev: dev, uuid: uuid}
	}
	return nil
}

// DriverVersion is the NVIDIA driver's version, e.g. "580.159.04". A driver upgrade
// can change proving speed, so the recorded performance settings carry it.
func (n *NVML) DriverVersion() (string, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return "", errors.New("nvml: closed")
	}
	v, ret := n.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("nvml: driver version: %w", ret)
	}
	return v, nil
}

// Close shuts NVML down. It waits for calls in flight; later calls fail, and
// a second Close is a no-op.
func (n *NVML) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: shutdown: %w", ret)
	}
	return nil
}

// with runs f on the device's handle while holding mu for reading, so Close
// cannot unload the library under it.
func (n *NVML) with(index int, f func(h nvmlHandle) error) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return errors.New("nvml: closed")
	}
	if index < 0 || index >= len(n.handles) {
		return fmt.Errorf("nvml: no device with index %d (have %d)", index, len(n.handles))
	}
	return f(n.handles[index])
}

// Devices lists every device with its current free memory.
func (n *NVML) Devices(ctx context.Context) ([]devinfo.Device, error) {
	n.mu.RLock()
	count := len(n.handles)
	n.mu.RUnlock()
	out := make([]devinfo.Device, count)
	for i := range count {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := n.with(i, func(h nvmlHandle) (err error) {
			out[i], err = describe(i, h)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func describe(index int, h nvmlHandle) (devinfo.Device, error) {
	d := devinfo.Device{Index: index, UUID: h.uuid}
	var ret nvml.Return
	if d.Name, ret = h.dev.GetName(); ret != nvml.SUCCESS {
		return devinfo.Device{}, fmt.Errorf("nvml: device %d: name: %w", index, ret)
	}
	mem, ret := h.dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return devinfo.Device{}, fmt.Errorf("nvml: device %d: memory info: %w", index, ret)
	}
	d.MemoryTotal, d.MemoryFree = mem.Total, mem.Free
	pci, ret := h.dev.GetPciInfo()
	if ret != nvml.SUCCESS {
		return devinfo.Device{}, fmt.Errorf("nvml: device %d: pci info: %w", index, ret)
	}
	d.PCIBusID = cString(pci.BusId[:])
	// Old drivers lack this query; the capability then stays unknown (0.0).
	if major, minor, ret := h.dev.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		d.ComputeMajor, d.ComputeMinor = major, minor
	}
	return d, nil
}

// Sample implements devinfo.Sampler. Readings the device does not support are left
// nil; any other failure (a lost GPU, say) fails the whole sample.
func (n *NVML) Sample(ctx context.Context, index int) (devinfo.Sample, error) {
	if err := ctx.Err(); err != nil {
		return devinfo.Sample{}, err
	}
	var s devinfo.Sample
	err := n.with(index, func(h nvmlHandle) (err error) {
		s, err = sample(index, h)
		return err
	})
	return s, err
}

func sample(index int, h nvmlHandle) (devinfo.Sample, error) {
	s := devinfo.Sample{Index: index, UUID: h.uuid, At: time.Now()}
	mem, ret := h.dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return devinfo.Sample{}, fmt.Errorf("nvml: device %d: memory info: %w", index, ret)
	}
	s.MemUsedBytes, s.MemTotalBytes = mem.Used, mem.Total

	var err error
	util, ret := h.dev.GetUtilizationRates()
	if s.GPUUtilPct, err = reading(util.Gpu, ret, index, "utilization"); err != nil {
		return devinfo.Sample{}, err
	}
	if s.GPUUtilPct != nil {
		s.MemUtilPct = new(util.Memory)
	}
	temp, ret := h.dev.GetTemperature(nvml.TEMPERATURE_GPU)
	if s.TemperatureC, err = reading(temp, ret, index, "temperature"); err != nil {
		return devinfo.Sample{}, err
	}
	power, ret := h.dev.GetPowerUsage()
	if s.PowerMW, err = reading(power, ret, index, "power"); err != nil {
		return devinfo.Sample{}, err
	}
	clock, ret := h.dev.GetClockInfo(nvml.CLOCK_SM)
	if s.SMClockMHz, err = reading(clock, ret, index, "sm clock"); err != nil {
		return devinfo.Sample{}, err
	}
	return s, nil
}

// reading keeps v on success and turns NOT_SUPPORTED into "no reading" (nil);
// any other result is an error naming what was read.
func reading(v uint32, ret nvml.Return, index int, what string) (*uint32, error) {
	switch ret {
	case nvml.SUCCESS:
		return new(v), nil
	case nvml.ERROR_NOT_SUPPORTED:
		return nil, nil
	default:
		return nil, fmt.Errorf("nvml: device %d: %s: %w", index, what, ret)
	}
}

// cString converts NVML's NUL-terminated char arrays.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
