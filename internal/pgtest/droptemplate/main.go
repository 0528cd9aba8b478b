// Command droptemplate drops the migrated template database that the tests clone
// (pgtest), on the server of CUZK_TEST_DATABASE_URL; make test runs it last so that
// a run leaves no database behind.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, err := pgtest.DropTemplate(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "droptemplate:", err)
		os.Exit(1)
	}
	fmt.Println("test template", name, "dropped")
}
