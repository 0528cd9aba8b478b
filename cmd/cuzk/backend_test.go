package main

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/gpu"
)

// With no usable GPU (here: the CUDA library path points nowhere, so the outcome is
// the same on hosts with and without a driver), --backend auto proves on the CPU and
// logs why, and --backend cuda refuses with the same reason.
func TestBackendAutoFallsBackToCPUAndSaysWhy(t *testing.T) {
	t.Setenv("CUZK_GPU_LIB", filepath.Join(t.TempDir(), "libcuzkgpu.so"))
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))

	devs, tel, err := openDevices("auto", "all", false, log, true, gpu.Options{})
	if err != nil {
		t.Fatalf("--backend auto without a GPU: %v", err)
	}
	if tel != nil {
		t.Error("--backend auto on the CPU started GPU telemetry")
	}
	if len(devs) != 1 || !strings.HasPrefix(devs[0].Label, "cpu (") {
		t.Fatalf("--backend auto without a GPU: devices %+v, want one cpu device", devs)
	}
	devs[0].Backend.Close()
	out := buf.String()
	if !strings.Contains(out, "no usable GPU, proving on the CPU") || !strings.Contains(out, "unavailable") {
		t.Errorf("--backend auto: want a warning with the reason, logged:\n%s", out)
	}

	if _, _, err := openDevices("cuda", "all", false, log, true, gpu.Options{}); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("--backend cuda without a GPU: err = %v, want the unavailable reason", err)
	}
}
