package main

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/store"
)

// preloadNames resolves --preload-keys: "all" is every registered circuit whose keys
// are in kd, otherwise the comma-separated names as given.
func preloadNames(ctx context.Context, spec string, pool *pgxpool.Pool, kd keys.Dir) ([]string, error) {
	if strings.TrimSpace(spec) != "all" {
		var names []string
		for _, n := range strings.Split(spec, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		return names, nil
	}
	all, err := store.CircuitNames(ctx, pool)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range all {
		if kd.Has(n) {
			names = append(names, n)
		}
	}
	return names, nil
}
