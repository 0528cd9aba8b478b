package worker

import (
	"context"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// Catalog resolves circuit names to what proving needs. Implementations load each
// circuit and key once and keep it resident; calls are safe for concurrent use.
type Catalog interface {
	// Circuit returns the compiled constraint system of a circuit.
	Circuit(ctx context.Context, name string) (*synth.Compiled, error)
	// Key returns the circuit's proving key resident on backend b, loading it on first
	// use; loaded is the time this call spent loading (0 when it was resident).
	Key(ctx context.Context, name string, b prover.Backend) (k *ResidentKey, loaded time.Duration, err error)
}

// ResidentKey is a proving key made resident on one backend, with its verifying key.
type ResidentKey struct {
	PK  *prover.ProvingKey
	Key prover.Key
	VK  *groth16bls.VerifyingKey
}
