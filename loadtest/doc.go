// Package loadtest runs the cuzk binary as real worker processes against a real
// PostgreSQL database: a thousand SQL-inserted requests, two workers, one of them
// killed with SIGKILL and restarted, and every stored proof verified with gnark alone.
// It has only tests; run it with `go test ./loadtest/`.
package loadtest
