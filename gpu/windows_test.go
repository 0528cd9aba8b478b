package gpu

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// TestSignedDigitWindows checks, without a device, the arithmetic that msm_windows
// (gpu/cuda/ff/bls12_381.cuh) rests on, as k_digits computes digits: a scalar from 2^254
// up is replaced by r - k against the negated point, and then ceil(255/c) signed
// c-bit windows hold every scalar with no carry out of the top one. The digits must
// give back k (or -k, for the replaced ones) mod r.
func TestSignedDigitWindows(t *testing.T) {
	r := fr.Modulus()
	two254 := new(big.Int).Lsh(big.NewInt(1), 254)
	rng := rand.New(rand.NewPCG(9, 10))
	for c := 4; c <= 22; c++ {
		nwin := (255 + c - 1) / c
		for i, e := range windowEdgeScalars(rng, c, 300) {
			k := e.BigInt(new(big.Int))
			flip := k.Cmp(two254) >= 0
			if flip {
				k.Sub(r, k)
			}
			half := int64(1) << (c - 1)
			carry := int64(0)
			sum := new(big.Int)
			for w := 0; w < nwin; w++ {
				d := new(big.Int).Rsh(k, uint(w*c)).Int64()&(1<<c-1) + carry
				carry = 0
				if d > half {
					d -= 1 << c
					carry = 1
				}
				sum.Add(sum, new(big.Int).Lsh(big.NewInt(d), uint(w*c)))
			}
			if carry != 0 {
				t.Fatalf("c = %d, scalar %d (%s): carry out of window %d", c, i, e.String(), nwin-1)
			}
			if flip {
				sum.Neg(sum)
			}
			if got := sum.Mod(sum, r); got.Cmp(e.BigInt(new(big.Int))) != 0 {
				t.Fatalf("c = %d, scalar %d: digits give %s, want %s", c, i, got, e.String())
			}
		}
	}
}

// TestWindowChoice compiles gpu/cuda/msm/windows.cuh with the system's C++ compiler (no
// device, no nvcc; with the sanitizers) and checks the window sizes it chooses against
// its own tables, read from the source: a lone MSM of 2^k points takes kWindowG1/G2[k-12]
// (k rounded, clamped to 12..24), a batch of 2^12..2^16 points per vector the batch
// tables, fewer than 3·2^10 points the cost model, and every choice is 4..22. A lookup
// written as (g2 ? A : B)[min(max(k, 12), 24) - 12] once gave c = 12 for every lone G1
// MSM in gcc 12's build of the library; the device tests pass at any c, so only the
// benchmarks showed it.
func TestWindowChoice(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed: windows.cuh is checked with the system's C++ compiler")
	}
	src, err := os.ReadFile("cuda/msm/windows.cuh")
	if err != nil {
		t.Fatal(err)
	}
	table := func(name string, n int) []int {
		m := regexp.MustCompile(`constexpr int ` + name + `\[(\d+)\] = \{([^}]*)\};`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("table %s not found in windows.cuh", name)
		}
		var v []int
		for _, f := range strings.Split(string(m[2]), ",") {
			x, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("table %s: %v", name, err)
			}
			v = append(v, x)
		}
		if len(v) != n {
			t.Fatalf("table %s has %d entries, want %d", name, len(v), n)
		}
		return v
	}
	g1, g2 := table("kWindowG1", 13), table("kWindowG2", 13)
	b1, b2 := table("kBatchWindowG1", 5), table("kBatchWindowG2", 5)

	dir := t.TempDir()
	harness := `#include "windows.cuh"
#include <cstdio>
int main() {
    const size_t sizes[] = {1, 2, 3, 1000, 3071, 3072, 4096, 5000, 5793, 5794, 16384, 23170, 23171, 65536, 131071,
                            1u << 20, 1u << 22, 3u << 22, 1u << 24, 1u << 25, (size_t)1 << 30};
    for (size_t n : sizes)
        for (int g2 = 0; g2 < 2; g2++)
            for (unsigned nb : {1u, 16u}) {
                int nwin = 0;
                int c = msm_choose_c(n, g2 != 0, nb, &nwin);
                printf("%zu %d %u %d %d\n", n, g2, nb, c, nwin);
            }
}
`
	if err := os.WriteFile(filepath.Join(dir, "h.cc"), []byte(harness), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("cuda/msm")
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"-O0", "-O2"} {
		bin := filepath.Join(dir, "h"+opt)
		build := exec.Command(cxx, "-std=c++17", opt, "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
			"-I", abs, "-o", bin, filepath.Join(dir, "h.cc"))
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("compile windows.cuh (%s): %v\n%s", opt, err, out)
		}
		out, err := exec.Command(bin).CombinedOutput()
		if err != nil {
			t.Fatalf("run (%s): %v\n%s", opt, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var n uint64
			var isG2, nb, c, nwin int
			if _, err := fmt.Sscan(line, &n, &isG2, &nb, &c, &nwin); err != nil {
				t.Fatalf("%s: %q: %v", opt, line, err)
			}
			k := 0 // log2(n) rounded: the smallest k with 3·2^k > 2n
			for k < 40 && uint64(3)<<k <= 2*n {
				k++
			}
			want := 0
			switch {
			case nb > 1 && k >= 12 && k <= 16:
				want = [][]int{b1, b2}[isG2][k-12]
			case n < 3<<10:
				want = -1 // the cost model: only the range is checked
			default:
				want = [][]int{g1, g2}[isG2][min(max(k, 12), 24)-12]
			}
			if (want > 0 && c != want) || c < 4 || c > 22 || nwin != (255+c-1)/c {
				t.Errorf("%s: n=%d g2=%d batch=%d: c=%d windows=%d, want c=%d (-1: any of 4..22)", opt, n, isG2, nb, c, nwin, want)
			}
		}
	}
}
