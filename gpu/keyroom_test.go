package gpu

import (
	"errors"
	"testing"

	"github.com/cuzk/cuzk/prover"
)

// TestKeyRoom checks Options.KeyMemoryBytes' accounting without a device: base sets
// fit until the limit, then fail while other keys are resident or are streamed when
// the key is alone, and precomputed copies are bounded by what is left.
func TestKeyRoom(t *testing.T) {
	r := newKeyRoom(1000, 300, 200) // 500 left
	if r.short() {
		t.Fatal("500 bytes left reported short")
	}
	if f, err := r.take(400, basesResidentOnly, "A"); err != nil || f != basesResidentOnly {
		t.Fatalf("a set that fits: flags %d, err %v", f, err)
	}
	if got := r.copies(400, 8); got != 1 {
		t.Fatalf("copies with 100 bytes left of a 400-byte set: %d, want 1 (none made)", got)
	}
	_, err := r.take(101, basesResidentOnly, "B2")
	if !errors.Is(err, prover.ErrOutOfMemory) {
		t.Fatalf("a set past the limit beside resident keys: %v, want prover.ErrOutOfMemory", err)
	}
	alone := newKeyRoom(1000, 0, 200)
	if f, err := alone.take(900, 0, "A"); err != nil || f != basesForceStreamed {
		t.Fatalf("a set past the limit, key alone: flags %d, err %v; want streamed", f, err)
	}
	if f, err := alone.take(700, 0, "B1"); err != nil || f != 0 || alone.used != 900 {
		t.Fatalf("the next set, which fits: flags %d, err %v, used %d", f, err, alone.used)
	}
	if got := newKeyRoom(10000, 0, 0).copies(1000, 16); got != 11 {
		t.Fatalf("copies of a 1000-byte set with 9000 bytes left: %d, want 10 more plus the set", got)
	}
	none := newKeyRoom(0, 1<<40, 1<<40)
	if none.short() || none.copies(1<<30, 16) != 16 {
		t.Fatal("limit 0 must not limit")
	}
	if f, err := none.take(1<<40, basesResidentOnly, "A"); err != nil || f != basesResidentOnly {
		t.Fatalf("no limit: flags %d, err %v", f, err)
	}
}
