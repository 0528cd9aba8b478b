package gpu

import (
	"fmt"
	"os"
	"testing"
)

// noDevice is why this host runs no CUDA tests ("" when it has a device): found
// once, before the tests, and printed once, so each skipped test need not repeat it.
var noDevice string

// TestMain prints one line for the CUDA tests and one for the NVML tests, saying
// whether they run here and, when not, why (go test -v shows them; make test
// prints them after the suite).
func TestMain(m *testing.M) {
	noDevice = probeDevice()
	if noDevice == "" {
		fmt.Println("GPU tests: running on CUDA device 0")
	} else {
		fmt.Printf("GPU tests: skipped (%s)\n", noDevice)
	}
	if n, err := OpenNVML(); err != nil {
		fmt.Printf("NVML tests: skipped (NVML %v)\n", err)
	} else {
		fmt.Println("NVML tests: running")
		_ = n.Close()
	}
	os.Exit(m.Run())
}

func probeDevice() string {
	lib, err := openLib("")
	if err != nil {
		return "no CUDA device: " + err.Error()
	}
	n, err := lib.deviceCount()
	switch {
	case err != nil:
		return "no CUDA device: " + err.Error()
	case n == 0:
		return "no CUDA device: device count is 0"
	}
	return ""
}

// skipWithoutDevice skips a test that needs a CUDA device on a host without one,
// unless CUZK_REQUIRE_GPU=1 (GPU hosts), where that is a failure.
func skipWithoutDevice(t testing.TB) {
	t.Helper()
	if noDevice == "" {
		return
	}
	if os.Getenv("CUZK_REQUIRE_GPU") == "1" {
		t.Fatalf("CUZK_REQUIRE_GPU=1 but %s", noDevice)
	}
	t.Skip("no CUDA device (the reason is on the \"GPU tests:\" line)")
}
