package requirecgo_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Without a C compiler Go builds with cgo off; the build of the GPU package
// must then fail with the sentence that names what is missing.
func TestBuildWithoutCgoNamesTheCompiler(t *testing.T) {
	cmd := exec.Command("go", "build", "-o", os.DevNull, "github.com/cuzk/cuzk/gpu")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("go build with CGO_ENABLED=0 succeeded; want it to fail naming the C compiler")
	}
	if want := "cuzk needs a C compiler: install gcc or clang (or set CC)"; !strings.Contains(string(out), want) {
		t.Fatalf("go build with CGO_ENABLED=0: output lacks %q:\n%s", want, out)
	}
}
