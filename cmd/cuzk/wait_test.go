package main

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cuzkUntilLog runs a long-running command until its stderr holds want, then stops it
// with SIGTERM and returns how it ended; it fails the test if want does not appear
// within timeout.
func cuzkUntilLog(t *testing.T, env []string, want string, timeout time.Duration, args ...string) result {
	t.Helper()
	cmd := exec.Command(cuzkBin, args...)
	cmd.Env = baseEnv(t, env...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	res := result{args: args}
	var err error
	deadline := time.After(timeout)
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("cuzk %s: %q not logged within %s\nstderr:\n%s", strings.Join(args, " "), want, timeout, stderr.String())
		case <-time.After(100 * time.Millisecond):
			if strings.Contains(stderr.String(), want) {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case err = <-done:
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("cuzk %s did not stop within 30s of SIGTERM\nstderr:\n%s", strings.Join(args, " "), stderr.String())
				}
				break wait
			}
		}
	}
	res.stdout, res.stderr = stdout.String(), stderr.String()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run cuzk %s: %v", strings.Join(args, " "), err)
	}
	return res
}
