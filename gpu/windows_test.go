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
	rng := rand.New(rand.NewPCG(9, 10))
	for c := 4; c <= 22; c++ {
		nwin := (255 + c - 1) / c
		for i, e := range windowEdgeScalars(rng, c, 300) {
			k, flip := digitScalar(e.BigInt(new(big.Int)))
			digits, carry := signedDigits(k, c, nwin)
			sum := new(big.Int)
			for w, d := range digits {
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

// digitScalar is k as the digits take it (msm.cuh's scalar_limbs): k below 2^254,
// else r - k against the negated point (flip).
func digitScalar(k *big.Int) (_ *big.Int, flip bool) {
	if k.Cmp(new(big.Int).Lsh(big.NewInt(1), 254)) < 0 {
		return k, false
	}
	return new(big.Int).Sub(fr.Modulus(), k), true
}

// signedDigits is k in nwin signed c-bit windows as k_digits takes them: a digit above
// 2^(c-1) becomes negative and carries one into the next window; carry is what is
// left past the top window.
func signedDigits(k *big.Int, c, nwin int) (digits []int64, carry int64) {
	half := int64(1) << (c - 1)
	for w := 0; w < nwin; w++ {
		d := new(big.Int).Rsh(k, uint(w*c)).Int64()&(1<<c-1) + carry
		carry = 0
		if d > half {
			d -= 1 << c
			carry = 1
		}
		digits = append(digits, d)
	}
	return digits, carry
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
	for _, opt := range []string{"-O0", "-O2"} {
		out := runWindowsHarness(t, cxx, harness, opt)
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

// TestLiveWindows checks msm_live_windows' bound on the digit arithmetic, without a
// device: a scalar of at most L bits (as the digits see it: k, or r - k from 2^254 up)
// has no nonzero digit above window floor(L/c), so an MSM runs only those windows.
func TestLiveWindows(t *testing.T) {
	r := fr.Modulus()
	rng := rand.New(rand.NewPCG(11, 12))
	for c := 4; c <= 22; c++ {
		nwin := (255 + c - 1) / c
		var ks []*big.Int
		for L := 1; L <= 254; L++ {
			all := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(L)), big.NewInt(1)) // L ones: every window carries
			ks = append(ks, all, new(big.Int).Sub(r, all))
			var x fr.Element // random, cut to L bits, its top bit set
			x.MustSetRandom()
			xb := x.BigInt(new(big.Int))
			xb.And(xb, all)
			ks = append(ks, xb.SetBit(xb, L-1, 1))
		}
		for _, e := range windowEdgeScalars(rng, c, 50) {
			ks = append(ks, e.BigInt(new(big.Int)))
		}
		for _, k0 := range ks {
			k, _ := digitScalar(k0)
			L := k.BitLen()
			digits, _ := signedDigits(k, c, nwin)
			top := -1
			for w, d := range digits {
				if d != 0 {
					top = w
				}
			}
			if live := min(nwin, L/c+1); top >= live {
				t.Fatalf("c = %d, scalar %s (%d bits): digit in window %d, live windows %d", c, k0, L, top, live)
			}
		}
	}
}

// TestDensityWindowChoice compiles windows.cuh as TestWindowChoice does and checks
// msm_density_c on bit-length histograms of 2^22 scalars: dense ones keep the table's
// window and run every window, a witness of mostly ones and zeros takes a narrower
// one, scalars of at most 64 bits run only the windows that can hold a digit, ones
// alone run one window, and all-zero scalars run none.
func TestDensityWindowChoice(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed: windows.cuh is checked with the system's C++ compiler")
	}
	harness := `#include "windows.cuh"
#include <cstdio>
int main() {
    const uint64_t n = 1u << 22;
    struct { const char* name; uint64_t h[256]; } cases[6] = {};
    cases[0].name = "dense";   cases[0].h[254] = n / 2; cases[0].h[253] = n / 4; cases[0].h[252] = n / 4;
    cases[1].name = "ones";    cases[1].h[1] = n;
    cases[2].name = "witness"; cases[2].h[1] = n * 6 / 10; cases[2].h[0] = n * 39 / 100; cases[2].h[254] = n / 100;
    cases[3].name = "small";   cases[3].h[64] = n / 2; cases[3].h[20] = n / 2;
    cases[4].name = "zero";    cases[4].h[0] = n;
    cases[5].name = "one";     cases[5].h[254] = 1;
    for (auto& k : cases)
        for (int g2 = 0; g2 < 2; g2++) {
            int tw = 0, nwin = -1;
            int table = msm_choose_c(n, g2 != 0, 1, &tw);
            int c = msm_density_c(k.h, g2 != 0, &nwin);
            printf("%s %d %d %d %d %d\n", k.name, g2, table, tw, c, nwin);
        }
}
`
	out := runWindowsHarness(t, cxx, harness, "-O2")
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var name string
		var g2, table, tableWin, c, nwin int
		if _, err := fmt.Sscan(line, &name, &g2, &table, &tableWin, &c, &nwin); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		seen++
		t.Logf("%-7s g2=%d: table c=%d (%d windows), chosen c=%d (%d windows)", name, g2, table, tableWin, c, nwin)
		all := (255 + c - 1) / c
		ok := true
		switch name {
		case "dense":
			ok = c == table && nwin == tableWin
		case "ones": // one digit a scalar whatever c: the fewest buckets
			ok = nwin == 1 && c < table
		case "witness": // 1% full-size: about as many points as the table's 2^16
			ok = c < table && nwin == all
		case "small": // 64 bits: windows up to the one holding bit 64's carry
			ok = nwin == 64/c+1 && nwin < all
		case "zero":
			ok = nwin == 0
		case "one": // a single full-size scalar: the narrowest window taken, every window
			ok = c == 8 && nwin == all
		}
		if !ok || c < 8 || c > table {
			t.Errorf("%s g2=%d: c=%d with %d windows (table c=%d)", name, g2, c, nwin, table)
		}
	}
	if seen != 12 {
		t.Fatalf("%d choices printed, want 12", seen)
	}
}

// TestDensityOverCopies compiles windows.cuh as TestWindowChoice does and checks
// msm_density_over_copies, the choice between a precomputed set's copies and its first
// copy at the density window, on the bit-length histograms of solved witnesses (the
// scalars as the digits take them) over sets shaped as --gpu-precompute shapes them
// for that many points. Measured on an H100 (docs/performance.md, "MSMs over a
// witness"): porep-k22's copies 3.76 ms against the density window's 4.04, so copies;
// sha256-preimage-b8192's density window 2.64 ms against the copies' 6.34. Dense
// scalars keep the copies; all-zero scalars run no window.
func TestDensityOverCopies(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed: windows.cuh is checked with the system's C++ compiler")
	}
	cases := []struct {
		name    string
		hist    string // bit length:count
		density bool   // want the density window
	}{
		{"porep-k22", "0:539062 1:424527 11:2 12:3 13:10 14:9 15:16 16:24 238:1 239:1 240:9 241:11 242:95 243:42 " +
			"244:100 245:203 246:353 247:874 248:1727 249:3293 250:6849 251:14037 252:27686 253:56462 254:92292", false},
		{"sha256-preimage-b8192", "0:1920930 1:1521090 2:62 3:123 4:243 5:492 6:1024 7:2038 8:4151 32:5 33:197 " +
			"34:5980 35:2006 126:1 127:1", true},
		{"dense", "252:1048576 253:1048576 254:2097152", false},
		{"zero", "0:4194304", true},
	}
	var b strings.Builder
	b.WriteString(`#include "windows.cuh"
#include <cstdio>
int main() {
`)
	for _, k := range cases {
		fmt.Fprintf(&b, "    { uint64_t h[256] = {}; uint64_t n = 0;\n")
		for _, f := range strings.Fields(k.hist) {
			var bits int
			var count uint64
			if _, err := fmt.Sscanf(f, "%d:%d", &bits, &count); err != nil {
				t.Fatalf("%s: %q: %v", k.name, f, err)
			}
			fmt.Fprintf(&b, "      h[%d] = %d; n += %d;\n", bits, count, count)
		}
		fmt.Fprintf(&b, `      for (int g2 = 0; g2 < 2; g2++) {
        int pc = 0, pf = 0, c = -1, nwin = -1;
        msm_precompute_shape(n, g2 != 0, 16, &pc, &pf);
        bool d = msm_density_over_copies(h, g2 != 0, pc, pf, &c, &nwin);
        printf("%s %%d %%d %%d %%d %%d %%d\n", g2, pc, pf, (int)d, c, nwin);
      }
    }
`, k.name)
	}
	b.WriteString("}\n")
	out := runWindowsHarness(t, cxx, b.String(), "-O2")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2*len(cases) {
		t.Fatalf("%d choices printed, want %d:\n%s", len(lines), 2*len(cases), out)
	}
	for i, line := range lines {
		k := cases[i/2]
		var name string
		var g2, pc, pf, d, c, nwin int
		if _, err := fmt.Sscan(line, &name, &g2, &pc, &pf, &d, &c, &nwin); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		t.Logf("%-22s g2=%d: copies c=%d ×%d, density chosen=%v (c=%d, %d windows)", name, g2, pc, pf, d == 1, c, nwin)
		if (d == 1) != k.density {
			t.Errorf("%s g2=%d: density chosen = %v, want %v", name, g2, d == 1, k.density)
		}
		switch {
		case name == "zero" && nwin != 0:
			t.Errorf("zero g2=%d: %d windows, want none", g2, nwin)
		case d == 1 && name != "zero" && (c < 8 || nwin < 1 || nwin > (255+c-1)/c):
			t.Errorf("%s g2=%d: density window c=%d with %d windows", name, g2, c, nwin)
		}
	}
}

// runWindowsHarness compiles the C++ program src against gpu/cuda/msm/windows.cuh with
// the system's compiler cxx at optimization opt, under the address and undefined-
// behaviour sanitizers, runs it and returns what it printed.
func runWindowsHarness(t *testing.T, cxx, src, opt string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h.cc"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("cuda/msm")
	if err != nil {
		t.Fatal(err)
	}
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
	return string(out)
}
