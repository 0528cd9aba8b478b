package hostinfo

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestParseCPUInfo(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  9654 96-Core Processor\n" +
			"processor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n", "AMD EPYC 9654 96-Core Processor"},
		{"arm with Model", "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B\n",
			"Raspberry Pi 4 Model B"},
		{"arm with Hardware only", "processor\t: 0\nHardware\t: Qualcomm Technologies, Inc SM8250\n",
			"Qualcomm Technologies, Inc SM8250"},
		{"nothing named", "processor\t: 0\nCPU implementer\t: 0x41\nmodel name\t:\n", runtime.GOARCH},
		{"empty", "", runtime.GOARCH},
	} {
		if got := parseCPUInfo(c.text); got != c.want {
			t.Errorf("%s: parseCPUInfo = %q, want %q", c.name, got, c.want)
		}
	}
}

// On this host, CPUModel agrees with the first model name in /proc/cpuinfo.
func TestCPUModelOfThisHost(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo here (%v): CPUModel is %q", err, CPUModel())
	}
	got := CPUModel()
	if got == "" {
		t.Fatal("CPUModel is empty")
	}
	if strings.Contains(string(b), "model name") && !strings.Contains(strings.Join(strings.Fields(string(b)), " "), got) {
		t.Errorf("CPUModel %q does not appear in /proc/cpuinfo", got)
	}
}
