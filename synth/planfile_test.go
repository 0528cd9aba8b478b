package synth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A circuit's block plan is kept beside its R1CS cache file: the next load reads it
// instead of finding it (the plan it uses is the file's), and gets the plan it would
// have found, for circuits with a useful split and one without.
func TestBlockPlanKept(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"porep-k18", "merkle-poseidon2-d4-c4", "sha256-preimage-b3", "synthetic-k6"} {
		found, err := NewRegistry(dir).Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		path := NewRegistry(dir).CacheFile(name)
		if _, err := os.Stat(planFile(path)); err != nil {
			t.Fatalf("%s: no plan file after the first load: %v", name, err)
		}
		kept, err := NewRegistry(dir).Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(kept.plan, found.plan) || kept.est != found.est {
			t.Errorf("%s: the kept plan (%s) is not the one found (%s)", name, kept.BlockSplit(), found.BlockSplit())
		}
		if found.plan == nil {
			continue
		}
		// A plan of the same system laid out otherwise (its tasks in reverse): the next
		// load uses the file's.
		other := *found.plan
		other.tasks = slices.Clone(other.tasks)
		slices.Reverse(other.tasks)
		_, sum, err := readR1CSFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := writePlanFile(planFile(path), sum, len(found.CS.Instructions), &other); err != nil {
			t.Fatal(err)
		}
		read, err := NewRegistry(dir).Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(read.plan, &other) {
			t.Errorf("%s: the load did not use the kept plan", name)
		}
	}
}

// A kept plan that is damaged, of another system, or not a tiling of the system's
// instructions is not used: the plan is found again and the file rewritten.
func TestBlockPlanKeptRejected(t *testing.T) {
	dir := t.TempDir()
	reg := NewRegistry(dir)
	c, err := reg.Get(context.Background(), "porep-k18")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Get(context.Background(), "porep-k16"); err != nil {
		t.Fatal(err)
	}
	path := reg.CacheFile("porep-k18")
	_, sum, err := readR1CSFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := len(c.CS.Instructions)
	good, err := os.ReadFile(planFile(path))
	if err != nil {
		t.Fatal(err)
	}
	overlap := *c.plan
	overlap.tasks = append(slices.Clone(overlap.tasks), []instrRange{overlap.tasks[0][0]})
	badUnknown := *c.plan
	badUnknown.unknown = slices.Clone(badUnknown.unknown)
	badUnknown.unknown[n/2] = 0x3f // side 0
	damaged := slices.Clone(good)
	damaged[len(damaged)/2] ^= 1
	other, err := os.ReadFile(planFile(reg.CacheFile("porep-k16")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		file       []byte
	}{
		{"damaged", "checksum mismatch", damaged},
		{"another system's", "the plan of another constraint system", other},
		{"overlapping ranges", "ranges do not tile", encodePlan(sum, n, &overlap)},
		{"a bad unknown", "unknown 0x3f", encodePlan(sum, n, &badUnknown)},
		{"another version", "not a plan of this version", resum(append([]byte("cuzk-blockplan-0"), good[len(planMagic):len(good)-sha256.Size]...))},
		{"truncated", "checksum mismatch", good[:len(good)-100]},
	} {
		if err := os.WriteFile(planFile(path), tc.file, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readPlanFile(planFile(path), sum, n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
		again, err := NewRegistry(dir).Get(context.Background(), "porep-k18")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again.plan, c.plan) {
			t.Errorf("%s: the plan loaded is not the one found", tc.name)
		}
		if p, _, err := readPlanFile(planFile(path), sum, n); err != nil || !reflect.DeepEqual(p, c.plan) {
			t.Errorf("%s: the file was not rewritten with the plan found: %v", tc.name, err)
		}
	}
}

// resum is a plan file's body with its checksum.
func resum(body []byte) []byte {
	h := sha256.Sum256(body)
	return append(body, h[:]...)
}

// TestBlockPlanDigest pins what planBlocks finds for porep-k18 and how it is laid out:
// when a change alters it, change planMagic (kept plans of the old planner are then
// found again) and the digest here.
func TestBlockPlanDigest(t *testing.T) {
	c := mustCompile(t, "porep-k18")
	p := planBlocks(c.CS)
	h := sha256.Sum256(encodePlan(make([]byte, sha256.Size), len(c.CS.Instructions), p))
	const want = "2aaee2def02b205b854c2ccc403613b90fd16be283150025b6ba0a69e4f6aaf0"
	if got := hex.EncodeToString(h[:]); got != want {
		t.Errorf("porep-k18's plan digest %s, want %s: if planBlocks changed, change planMagic and this digest", got, want)
	}
}
