package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/sql/queries"
)

// Circuit is a row of cuzk.circuits.
type Circuit struct {
	Name             string
	Constraints      int64
	PublicInputs     int // excluding the constant one wire
	SecretInputs     int
	Wires            int64
	VK               []byte // gnark VerifyingKey.WriteTo
	PKDigest         string
	Source           string // builtin | imported
	MemEstimateBytes int64
	// MaxInputsBytes is the longest valid inputs JSON (synth.Compiled.MaxInputsBytes):
	// longer requests are refused at insert.
	MaxInputsBytes int64
}

// RegisterCircuit inserts or updates a circuit. A vk the circuit never had becomes
// a new version in cuzk.circuit_keys (the database's trigger numbers it); the
// versions before it stay, so proofs made with them still verify.
func RegisterCircuit(ctx context.Context, db DB, c *Circuit) error {
	src := c.Source
	if src == "" {
		src = "builtin"
	}
	_, err := db.Exec(ctx, queries.SQL("RegisterCircuit"),
		c.Name, c.Constraints, c.PublicInputs, c.SecretInputs, c.Wires, c.VK, c.PKDigest, src, c.MemEstimateBytes, c.MaxInputsBytes)
	if err != nil {
		return fmt.Errorf("register circuit %q: %w", c.Name, err)
	}
	return nil
}

// CurrentKey is a registered circuit's current key version and vk; ok is false when
// the circuit is not registered.
func CurrentKey(ctx context.Context, db DB, circuit string) (version int, vk []byte, ok bool, err error) {
	err = db.QueryRow(ctx, queries.SQL("CurrentKey"), circuit).Scan(&version, &vk)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("read key of circuit %q: %w", circuit, err)
	}
	return version, vk, true, nil
}

// VKDigest is the hex SHA-256 of a verifying key's bytes, as cuzk.circuit_keys.vk_digest.
func VKDigest(vk []byte) string {
	h := sha256.Sum256(vk)
	return hex.EncodeToString(h[:])
}

// keyVersion is the version of circuit's key whose vk hashes to vkDigest; with
// vkDigest "" it is nil (the database records the current version).
func keyVersion(ctx context.Context, db DB, circuit, vkDigest string) (*int, error) {
	if vkDigest == "" {
		return nil, nil
	}
	var v int
	err := db.QueryRow(ctx, queries.SQL("KeyVersionByDigest"), circuit, vkDigest).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("proof of circuit %q was made with a key the database never registered (vk sha256 %.16s); run cuzk setup", circuit, vkDigest)
	}
	if err != nil {
		return nil, fmt.Errorf("read key version of circuit %q: %w", circuit, err)
	}
	return &v, nil
}

// CircuitSize is a registered circuit's size: its constraints, and the memory one
// synthesis of it reserves (0 where none was recorded).
type CircuitSize struct{ Constraints, MemEstimateBytes int64 }

// CircuitSizes is the size of every registered circuit, by name.
func CircuitSizes(ctx context.Context, db DB) (map[string]CircuitSize, error) {
	rows, err := db.Query(ctx, queries.SQL("CircuitSizes"))
	if err != nil {
		return nil, fmt.Errorf("read circuit sizes: %w", err)
	}
	sizes := map[string]CircuitSize{}
	var name string
	var c CircuitSize
	if _, err := pgx.ForEachRow(rows, []any{&name, &c.Constraints, &c.MemEstimateBytes}, func() error { sizes[name] = c; return nil }); err != nil {
		return sizes, fmt.Errorf("read circuit sizes: %w", err)
	}
	return sizes, nil
}

// CircuitNames are the registered circuits' names, in order.
func CircuitNames(ctx context.Context, db DB) ([]string, error) {
	rows, _ := db.Query(ctx, queries.SQL("CircuitNames"))
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read circuit names: %w", err)
	}
	return names, nil
}

// PKDigest is a registered circuit's proving key digest; ok is false when the circuit
// is not registered.
func PKDigest(ctx context.Context, db DB, circuit string) (digest string, ok bool, err error) {
	err = db.QueryRow(ctx, queries.SQL("PKDigest"), circuit).Scan(&digest)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read pk digest of circuit %q: %w", circuit, err)
	}
	return digest, true, nil
}
