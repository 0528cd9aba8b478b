package sql

import (
	"context"
	"fmt"
)

// Circuit is a row of cuzk.circuits.
type Circuit struct {
	Name             string
	Constraints      int64
	PublicInputs     int // excluding the constant one wire
	Wires            int64
	VK               []byte // gnark VerifyingKey.WriteTo
	PKDigest         string
	Source           string // builtin | imported
	MemEstimateBytes int64
}

// RegisterCircuit inserts or updates a circuit (a new setup replaces the key).
func (s *Store) RegisterCircuit(ctx context.Context, c *Circuit) error {
	src := c.Source
	if src == "" {
		src = "builtin"
	}
	_, err := s.Pool.Exec(ctx, `
		INSERT INTO cuzk.circuits (name, constraints, public_inputs, wires, vk, pk_digest, source, mem_estimate_bytes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (name) DO UPDATE SET constraints = EXCLUDED.constraints, public_inputs = EXCLUDED.public_inputs,
		    wires = EXCLUDED.wires, vk = EXCLUDED.vk, pk_digest = EXCLUDED.pk_digest, source = EXCLUDED.source,
		    mem_estimate_bytes = EXCLUDED.mem_estimate_bytes, updated_at = now()`,
		c.Name, c.Constraints, c.PublicInputs, c.Wires, c.VK, c.PKDigest, src, c.MemEstimateBytes)
	if err != nil {
		return fmt.Errorf("register circuit %q: %w", c.Name, err)
	}
	return nil
}
