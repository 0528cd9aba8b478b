package main

import (
	"context"
	"fmt"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/store"
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
	list, err := store.StoredProofs(ctx, pool, c.RequestIDs, c.All)
	if err != nil {
		return sqlErr("verify", err)
	}
	found := map[string]bool{}
	bad := 0
	for _, r := range list {
		found[r.RequestID] = true
		if err := verifyParts(&r); err != nil {
			fmt.Fprintf(g.stdout, "%s: INVALID: %v\n", r.RequestID, err)
			bad++
			continue
		}
		if r.Proofs != nil {
			fmt.Fprintf(g.stdout, "%s: ok (%d partitions)\n", r.RequestID, len(r.Proofs))
			continue
		}
		fmt.Fprintf(g.stdout, "%s: ok\n", r.RequestID)
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

// verifyParts verifies every partition of a stored proof (the one proof of a
// single-proof request), naming the first that fails.
func verifyParts(r *store.StoredProof) error {
	proofs, publics := r.Parts()
	if len(proofs) != len(publics) {
		return fmt.Errorf("%d proofs but %d public witnesses", len(proofs), len(publics))
	}
	for i := range proofs {
		if err := prover.Verify(r.VK, proofs[i], publics[i]); err != nil {
			if r.Proofs == nil {
				return err
			}
			return fmt.Errorf("partition %d of %d: %w", i, len(proofs), err)
		}
	}
	return nil
}
