package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/sql/queries"
)

// StoredProof is a stored proof with the verifying key of the version it was made with.
type StoredProof struct {
	RequestID         string
	Proof, Public, VK []byte
	// Proofs and Publics are a partitioned request's, in partition order; nil for a
	// single proof (Proof and Public).
	Proofs, Publics [][]byte
}

// Parts are the stored proof's proofs and public witnesses, one per partition.
func (p *StoredProof) Parts() (proofs, publics [][]byte) {
	if p.Proofs == nil {
		return [][]byte{p.Proof}, [][]byte{p.Public}
	}
	return p.Proofs, p.Publics
}

// StoredProofs reads the stored proofs of the named requests, or every one with all,
// oldest first.
func StoredProofs(ctx context.Context, db DB, requestIDs []string, all bool) ([]StoredProof, error) {
	rows, err := db.Query(ctx, queries.SQL("StoredProofs"), all, requestIDs)
	if err != nil {
		return nil, fmt.Errorf("read stored proofs: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[StoredProof])
	if err != nil {
		return nil, fmt.Errorf("read stored proofs: %w", err)
	}
	return list, nil
}
