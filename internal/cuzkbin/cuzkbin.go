// Package cuzkbin builds the cuzk binary for tests that run it as a process.
package cuzkbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build compiles cmd/cuzk into dir and returns the binary's path; the compiler's
// output goes to stderr.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "cuzk")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/cuzk/cuzk/cmd/cuzk")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build cuzk: %w", err)
	}
	return bin, nil
}
