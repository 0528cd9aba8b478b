// windows.cuh: the MSM's window sizes, host code only and plain C++ (no CUDA), so
// gpu/windows_test.go compiles it with the system's C++ compiler and checks the choices
// on machines without nvcc. msm.cu uses it; msm_windows is also device code.
#pragma once
#include <stddef.h>
#include <algorithm>
#include <stdint.h>

#if defined(__CUDACC__)
#define CUZK_HOST_DEVICE __host__ __device__
#else
#define CUZK_HOST_DEVICE
#endif

// Signed c-bit windows of an MSM scalar: ceil(255/c). The digits are taken of k or of
// r - k, whichever is below 2^254 (r < 2^255; msm.cuh's scalar_limbs), so the top
// window's digit stays within 2^(c-1) and never carries out into one more window.
CUZK_HOST_DEVICE constexpr int msm_windows(int c) { return (255 + c - 1) / c; }

// The cost of one bucket's reduction over one mixed addition (G1 about 12.5, G2 about
// 5.6 when fitted on the H200; G2's additions cost more). Used for precomputed sets and
// for MSMs below the measured table.
inline double reduce_ratio(bool g2) { return g2 ? 5.6 : 12.5; }

// Window size by measurement: the fastest c at 2^k points (H200, 2026-12-03, c swept
// with CUZK_MSM_C, windows of ceil(255/c); docs/lab/BENCHMARKS.md) for k = 12, 14, ..., 24;
// the odd k between, not measured, take a c between their neighbours'. n picks the
// entry of log2(n) rounded; past 2^24 the last entry holds (swept to 2^26 over
// distinct bases: G1's c = 17 within 1% of the fastest, G2's c = 20 the fastest). The times are flat near the optimum (G1 2^20: 12.73 ms at
// c = 17, 12.86 at 16, 13.01 at 15), and the fitted cost model below picked windows
// measured up to 8% slower (G2 2^20: c = 15, 36.9 ms, against 34.3 at c = 16). G2 2^16
// takes c = 12: the sweep (stage profile on) had 13 ahead by 4%, an A/B without the
// profile had 12 ahead by 5% (6.17 vs 6.48 ms).
constexpr int kWindowG1[13] = {8, 9, 10, 10, 10, 12, 13, 15, 17, 17, 17, 17, 17};
constexpr int kWindowG2[13] = {8, 9, 10, 12, 12, 13, 13, 15, 16, 16, 17, 19, 20};

// Cost model for fewer than 2^12 points: minimise n*w mixed additions plus
// R*w*2^(c-1) bucket-reduction work, w = msm_windows(c), R = reduce_ratio.
inline int msm_model_c(size_t n, bool g2) {
    const double R = reduce_ratio(g2);
    double best_cost = 1e300;
    int best = 4;
    for (int c = 4; c <= 20; c++) {
        int w = msm_windows(c);
        double cost = (double)n * w + R * w * (double)(1u << (c - 1));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

// A batch of nbatch > 1 vectors fills the device with their accumulations together,
// so a vector of n points takes narrower windows than a lone MSM of n points, which
// leaves most SMs idle and trades them for fewer windows. Measured on the H200 for
// batches of 16 (G1:G2 window sizes forced, ms per proof; docs/lab/BENCHMARKS.md): 2^12
// 9:9 0.91 against the single table's 10:12 1.15; 2^14 10:10 2.14 against 2.26; 2^16
// 10:11 6.72 against 6.77. Batches are of at most 2^20 points, so n < 2^17 here.
constexpr int kBatchWindowG1[5] = {9, 9, 10, 10, 10};
constexpr int kBatchWindowG2[5] = {9, 10, 10, 10, 11};

// log2(n) rounded: n >= 2^k * sqrt(2) rounds up (3/2 as the cut, close enough).
inline int round_log2(size_t n) {
    int k = 0;
    while (k < 40 && ((size_t)3 << k) <= 2 * n) k++;  // smallest k with 3*2^k > 2n
    return k;
}

inline int msm_choose_c(size_t n, bool g2, uint32_t nbatch, int* nwin) {
    int c;
    const int k = round_log2(n);
    if (nbatch > 1 && k >= 12 && k <= 16) {
        c = g2 ? kBatchWindowG2[k - 12] : kBatchWindowG1[k - 12];
    } else if (n < ((size_t)3 << 10)) {  // nearer 2^11 than 2^12
        c = msm_model_c(n, g2);
    } else {
        // One index, clamped first: the same lookup written as
        // (g2 ? kWindowG2 : kWindowG1)[std::min(std::max(k, 12), 24) - 12] chose c = 12
        // for every lone G1 MSM in a gcc 12 host build (G1 2^24 took 180 ms, not 127).
        const int i = k < 12 ? 0 : (k > 24 ? 12 : k - 12);
        c = g2 ? kWindowG2[i] : kWindowG1[i];
    }
    *nwin = msm_windows(c);
    return c;
}

// The windows that can hold a nonzero digit when no scalar is longer than maxlen bits
// (as the digits see it, msm.cuh's scalar_limbs): bits 0..maxlen-1 lie in windows
// 0..floor((maxlen-1)/c), and the top one carries out only when it is full, into
// window maxlen/c; so floor(maxlen/c) + 1 of them.
inline int msm_live_windows(int c, int maxlen) {
    return maxlen <= 0 ? 0 : std::min(msm_windows(c), maxlen / c + 1);
}

// The window for one MSM over scalars with the bit-length histogram hist[0..255]
// (hist[k]: scalars of k bits): the table's window for the dense MSM of equal work.
// The table was measured on full-size scalars, which have a digit in every window; a
// scalar of k bits has at most min(w, floor(k/c) + 1) of w, so it counts as that
// fraction of a full one, and a witness (mostly 0, 1 and -1, a few full-size values)
// counts as far fewer points than it has. A narrower window changes the fractions, so
// the choice repeats until it settles (two or three rounds). Sweeps of forced windows
// over solved witnesses put this choice near the fastest, and the table's far from it
// (docs/lab/BENCHMARKS.md). *nwin gets the live windows of the c chosen: none when
// every scalar is zero.
inline int msm_density_c(const uint64_t* hist, bool g2, int* nwin) {
    uint64_t n = 0;
    int maxlen = 0;
    for (int k = 0; k < 256; k++) {
        n += hist[k];
        if (hist[k]) maxlen = k;
    }
    int w = 0;
    int c = msm_choose_c((size_t)std::max<uint64_t>(n, 1), g2, 1, &w);
    for (int round = 0; round < 4; round++) {
        double eq = 0;
        for (int k = 1; k < 256; k++)
            if (hist[k]) eq += (double)hist[k] * std::min(w, k / c + 1) / w;
        int w2 = 0;
        const int c2 = msm_choose_c((size_t)std::max(1.0, eq + 0.5), g2, 1, &w2);
        if (c2 == c) break;
        c = c2;
        w = w2;
    }
    // The digit pass reads every scalar once a window whether or not it has a digit
    // there: below 8 bits the windows pass 32 for little saved in buckets.
    c = std::max(c, 8);
    *nwin = msm_live_windows(c, maxlen);
    return c;
}

// The modelled cost of an MSM over scalars with the bit-length histogram hist at window
// c, in mixed additions: each scalar's digits (at most min(w, floor(k/c) + 1) for k
// bits) plus R for each bucket of the sets reduced.
inline double msm_hist_cost(const uint64_t* hist, int c, int sets, bool g2) {
    const int w = msm_windows(c);
    double adds = 0;
    for (int k = 1; k < 256; k++)
        if (hist[k]) adds += (double)hist[k] * std::min(w, k / c + 1);
    return adds + reduce_ratio(g2) * sets * (double)(1u << (c - 1));
}

// Over a precomputed set (pc_f copies for pc_c-bit windows) an MSM of sparse scalars
// can do better on the set's first copy, the original points, at msm_density_c's
// window: the copies' wide window reduces 2^(pc_c-1) buckets a group however few
// digits fill them, which over a witness of mostly 0 and 1 costs more than the
// windows saved. True when the density window models cheaper; *c and *nwin are then
// its window and live windows (none when every scalar is zero).
inline bool msm_density_over_copies(const uint64_t* hist, bool g2, int pc_c, int pc_f, int* c, int* nwin) {
    int dn = 0;
    const int dc = msm_density_c(hist, g2, &dn);
    const int pw = msm_windows(pc_c);
    const double copies = msm_hist_cost(hist, pc_c, (pw + pc_f - 1) / pc_f, g2);
    if (dn > 0 && msm_hist_cost(hist, dc, dn, g2) >= copies) return false;
    *c = dc;
    *nwin = dn;
    return true;
}

// Precomputed sets: minimise n*nwin additions plus R*groups*2^(c-1) bucket reduction,
// where groups of windows share a bucket set, so with all windows in one group c grows
// until the buckets cost more than the windows they save.
inline void msm_precompute_shape(size_t n, bool g2, int maxf, int* c_out, int* f_out) {
    const double R = reduce_ratio(g2);
    double best = 1e300;
    for (int c = 8; c <= 21; c++) {
        int nwin = msm_windows(c);
        int f = std::min(maxf, nwin);
        int groups = (nwin + f - 1) / f;
        f = (nwin + groups - 1) / groups;  // fewest copies for that many groups
        double cost = (double)n * nwin + R * groups * (double)(1u << (c - 1));
        if (cost < best) {
            best = cost;
            *c_out = c;
            *f_out = f;
        }
    }
}

