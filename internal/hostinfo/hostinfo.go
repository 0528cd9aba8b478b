// Package hostinfo names the host's processor. The recorded performance settings
// carry it, because synthesis (and the CPU backend) run on it: the same build and
// flags on another CPU model is another configuration.
package hostinfo

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"sync"
)

var cpuModel = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	return parseCPUInfo(string(b))
})

// CPUModel is the processor's model name from /proc/cpuinfo, or the architecture
// (runtime.GOARCH) where the file is missing or names no model.
func CPUModel() string { return cpuModel() }

// parseCPUInfo takes the first of "model name" (x86), "Model" or "Hardware" (some
// Arm kernels) with a value.
func parseCPUInfo(text string) string {
	found := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.Join(strings.Fields(v), " ")
		if _, seen := found[k]; !seen && v != "" {
			found[k] = v
		}
	}
	for _, k := range []string{"model name", "Model", "Hardware"} {
		if v := found[k]; v != "" {
			return v
		}
	}
	return runtime.GOARCH
}
