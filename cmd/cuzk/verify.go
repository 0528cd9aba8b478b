package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/prover"
)

type verifyCmd struct {
	RequestIDs []string `arg:"" optional:"" name:"request-id" help:"Requests whose stored proofs to verify."`
	All        bool     `help:"Verify every stored proof."`
}

func (c verifyCmd) Run(ctx context.Context, g *globals) error {
	if len(c.RequestIDs) == 0 && !c.All {
		return usagef("name requests to verify, or give --all")
	}
	pool, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, `
		SELECT p.request_id, p.proof, p.public_witness, k.vk
		  FROM cuzk.proofs p JOIN cuzk.circuit_keys k ON k.circuit = p.circuit AND k.version = p.key_version
		 WHERE $1 OR p.request_id = ANY($2) ORDER BY p.created_at`, c.All, c.RequestIDs)
	if err != nil {
		return sqlErr("verify", err)
	}
	type row struct {
		ID                string
		Proof, Public, VK []byte
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return sqlErr("verify", err)
	}
	found := map[string]bool{}
	bad := 0
	for _, r := range list {
		found[r.ID] = true
		if err := prover.Verify(r.VK, r.Proof, r.Public); err != nil {
			fmt.Fprintf(g.stdout, "%s: INVALID: %v\n", r.ID, err)
			bad++
			continue
		}
		fmt.Fprintf(g.stdout, "%s: ok\n", r.ID)
	}
	for _, id := range c.RequestIDs {
		if !found[id] {
			fmt.Fprintf(g.stdout, "%s: no stored proof\n", id)
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d proofs did not verify", bad, max(len(list), len(c.RequestIDs)))
	}
	return nil
}
