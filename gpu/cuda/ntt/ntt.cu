// ntt.cu: radix-2 NTT over Fr with several stages fused per pass in shared memory,
// and Groth16's H = (a*b - c)/(x^n - 1) on the coset, as gnark's computeH does it:
//   a, b, c: inverse DIF (natural -> bit-reversed coefficients), scale by
//   coset^rev(i)/n, DIT (bit-reversed -> natural evaluations on the coset);
//   a = (a*b - c)*den; inverse DIF; scale by coset^-rev(i)/n. h is left bit-reversed.
#include <algorithm>
#include <type_traits>
#include "ff/bls12_381.cuh"
#include "runtime.cuh"

namespace {

constexpr int kMaxFused = 10;  // 2^10 elements * 32 B = 32 KiB of shared memory per block

// Options of a pass (ntt_pass's opt; the plan sets both): warp barriers between
// warp-local stages (ntt_r2_stages, ntt_r4_steps), and the unit twiddle of the
// half-size-2 stage skipped (ntt_r4_steps).
constexpr uint32_t kNttOptWarpSync = 1, kNttOptUnit2 = 2;
// opt >> kNttOptGroupShift: log2 of the groups a radix-4 block takes in turn (ntt_pass).
constexpr int kNttOptGroupShift = 8;
// A mixed pass (ntt_pass's MIXED) takes Shoup's pairs for the twiddles of its stages of
// half-size 2^kNttLowLog and less: the 2^(kNttLowLog+1) - 1 staged entries below kNttLow.
constexpr int kNttLowLog = 5;
constexpr uint32_t kNttLow = (2u << kNttLowLog) - 1;

inline uint32_t blocks(size_t n, uint32_t tpb) { return (uint32_t)((n + tpb - 1) / tpb); }

__device__ __forceinline__ uint32_t bitrev(uint32_t i, int log_n) { return log_n ? __brev(i) >> (32 - log_n) : 0; }

// A twiddle for Shoup's product: omega^i as a plain integer and its quotient
// (ff/field.cuh's fe_shoup), for the passes the plan gives Shoup's product.
typedef fe_shoup<fr_params> fr_tw;

// The twiddle product of a pass: Montgomery's with a Montgomery-form twiddle, Shoup's
// with a pair.
__device__ __forceinline__ void tw_mul(fr_t& r, const fr_t& a, const fr_t& w) { fe_mul(r, a, w); }
__device__ __forceinline__ void tw_mul(fr_t& r, const fr_t& a, const fr_tw& w) { fe_mul_shoup(r, a, w); }

// A 16-byte global load asking L2 to fetch the 128 bytes around it (PTX's prefetch
// size): for the mixed pass's loads through registers (ntt_pass's PF). Its first pass
// at 2^24 loads elements and twiddles 2^16 offsets apart, each 32 bytes a lone sector
// whose neighbours the blocks of the neighbouring offsets read. H100: 2^24 DIF
// 3.45-3.47 -> 3.41-3.42 ms, DIT 3.51-3.54 -> 3.46-3.48; 256 bytes measured no better
// (docs/lab/BENCHMARKS.md).
__device__ __forceinline__ uint4 ld_l2_128(const uint4* p) {
    uint4 v;
    asm("ld.global.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// Global -> shared copies without registers use 16-byte cp.async.cg (L1 bypassed:
// each element is read once a pass). Elements are 16-byte aligned (field.cuh).
__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// A pass's array of T (elements or twiddles) in shared memory, M entries, as 16-byte
// pieces, piece k of entry j at k*M + j: a warp reading one piece of 32
// consecutive entries reads 512 contiguous bytes, free of bank conflicts, where entries
// side by side put the pieces of consecutive entries sizeof(T) apart (2-way conflicts
// for an element, 4-way for a Shoup twiddle, whose loads then saturated the pass's
// shared memory pipe: L1 87% busy with the multiply pipe at 60%; H200, ncu).
// SWZ swizzles the entries within each group of 8: entry j at
// j ^ ((j >> 3) & 3) ^ ((j >> 2) & 4), so that the radix-4 steps' strided entries
// (4 apart at the quarter-size 1, pairs 16 apart at 4) fall in 8 different bank groups
// for each 8 threads of a 128-bit access, as consecutive entries do.
template <class T, bool SWZ = false>
struct sh_array {
    static constexpr int P = sizeof(T) / 16;
    uint4* p;
    uint32_t M;
    __device__ __forceinline__ static uint32_t swz(uint32_t j) {
        return SWZ ? j ^ ((j >> 3) & 3) ^ ((j >> 2) & 4) : j;
    }
    __device__ __forceinline__ uint4* piece(uint32_t j, int k) const {
        return p + k * M + swz(j);
    }
    __device__ __forceinline__ T load(uint32_t j) const {
        T v;
        uint4* d = reinterpret_cast<uint4*>(&v);
#pragma unroll
        for (int k = 0; k < P; k++) d[k] = *piece(j, k);
        return v;
    }
    __device__ __forceinline__ void store(uint32_t j, const T& v) const {
        const uint4* s = reinterpret_cast<const uint4*>(&v);
#pragma unroll
        for (int k = 0; k < P; k++) *piece(j, k) = s[k];
    }
    // Entry j from global memory through registers, each piece's load asking L2 for
    // its 128 bytes (ld_l2_128).
    __device__ __forceinline__ void store_l2_128(uint32_t j, const T* src) const {
        const uint4* s = reinterpret_cast<const uint4*>(src);
#pragma unroll
        for (int k = 0; k < P; k++) *piece(j, k) = ld_l2_128(s + k);
    }
    // Entry j from global memory by cp.async (ASYNC; copy_async_wait, then a barrier),
    // else through registers, with L2's 128 bytes asked for where PF.
    template <bool ASYNC, bool PF>
    __device__ __forceinline__ void fetch(uint32_t j, const T* src) const {
        if constexpr (ASYNC)
            copy_async(j, src);
        else if constexpr (PF)
            store_l2_128(j, src);
        else
            store(j, *src);
    }
    // Entry j from global memory by cp.async (copy_async_wait, then a barrier).
    __device__ __forceinline__ void copy_async(uint32_t j, const T* src) const {
        const char* s = reinterpret_cast<const char*>(src);
#pragma unroll
        for (int k = 0; k < P; k++) {
            const uint32_t d = (uint32_t)__cvta_generic_to_shared(piece(j, k));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(s + 16 * k) : "memory");
        }
    }
};

// One pass of K stages on groups of 2^K elements spaced hs = 2^hs_log apart. DIF runs the
// group's stages from the largest half-size down, DIT from the smallest up.
// blockIdx.y selects one of several vectors vstride elements apart (a batch).
// The block first copies the 2^K - 1 twiddles its stages use into shared memory
// (stage with half-size hl at [hl - 1, 2hl - 1)), together with its elements, so no
// stage waits on a global load after a barrier (2^24 forward NTT 8.80 -> 7.74 ms, 2^22
// 2.03 -> 1.85 ms against the twiddles read from device memory; H200).
// DIT and DIF are separate kernels: one path's registers each (56 instead of 60 for
// both: 9 blocks an SM instead of 8).
// ASYNC: the block's elements and twiddles arrive by cp.async, all issued before one
// wait, instead of a load and a shared store each: the plain loop waits for each load
// in turn (2 elements and 2 twiddles a thread), the pass's largest stall (long
// scoreboard at the stores, 12% of its samples). The plan picks it per pass.
// TW: fr_t for Montgomery-form twiddles, fr_tw for Shoup's pairs.

// The butterfly's operations: fully reduced (values below r), or lazily (LAZY, the
// radix-4 passes of 8 stages, k_ntt_pass_r4b: values below 2r inside the pass, so the
// product skips its final subtraction, field.cuh's lz_*: 17 instructions of about 300 a
// butterfly; the pass reduces each element once before it stores it).
template <bool LAZY>
struct bfly_ops {
    template <class TW>
    __device__ __forceinline__ static void mul(fr_t& r, const fr_t& a, const TW& w) {
        tw_mul(r, a, w);
    }
    __device__ __forceinline__ static void add(fr_t& r, const fr_t& a, const fr_t& b) { fe_add(r, a, b); }
    __device__ __forceinline__ static void sub(fr_t& r, const fr_t& a, const fr_t& b) { fe_sub(r, a, b); }
};

template <>
struct bfly_ops<true> {
    __device__ __forceinline__ static void mul(fr_t& r, const fr_t& a, const fr_t& w) { lz_mul(r, a, w); }
    __device__ __forceinline__ static void mul(fr_t& r, const fr_t& a, const fr_tw& w) { lz_mul_shoup(r, a, w); }
    __device__ __forceinline__ static void add(fr_t& r, const fr_t& a, const fr_t& b) { lz_add(r, a, b); }
    __device__ __forceinline__ static void sub(fr_t& r, const fr_t& a, const fr_t& b) { lz_sub(r, a, b); }
};

// One butterfly: DIT (x, y) -> (x + y*w, x - y*w), DIF (x, y) -> (x + y, (x - y)*w);
// unit: w = 1, no product.
template <bool DIT, class TW, bool LAZY = false>
__device__ __forceinline__ void ntt_bfly(fr_t& x, fr_t& y, const TW& w, bool unit) {
    using op = bfly_ops<LAZY>;
    fr_t d;
    if (DIT) {
        if (!unit) op::mul(y, y, w);
        op::sub(d, x, y);
        op::add(x, x, y);
        y = d;
    } else {
        op::sub(d, x, y);
        op::add(x, x, y);
        if (unit) y = d;
        else op::mul(y, d, w);
    }
}

// One radix-4 unit of ntt_pass's R4 steps: the elements b + {0, h, 2h, 3h} through the
// stages of half-size 2h and h. U1: the half-size-h stage's twiddle is 1; U02: so is
// the half-size-2h stage's for x0 and x2 (both only where h = 1 in the transform's
// last DIF or first DIT step, jo = 0). Flags fixed at compile time: as runtime flags
// they cost the general step 6 registers and made the 96-register bound spill.
template <bool DIT, bool U1, bool U02, class TW, bool LAZY, class SH, class TWS>
__device__ __forceinline__ void ntt_r4_unit(const SH& sh, const TWS& tws, uint32_t b, uint32_t h, uint32_t jo) {
    fr_t x0 = sh.load(b), x1 = sh.load(b + h), x2 = sh.load(b + 2 * h), x3 = sh.load(b + 3 * h);
    TW w;
    if (DIT) {
        if (!U1) w = tws.load(h - 1 + jo);
        ntt_bfly<DIT, TW, LAZY>(x0, x1, w, U1);
        ntt_bfly<DIT, TW, LAZY>(x2, x3, w, U1);
        if (!U02) w = tws.load(2 * h - 1 + jo);
        ntt_bfly<DIT, TW, LAZY>(x0, x2, w, U02);
        w = tws.load(3 * h - 1 + jo);
        ntt_bfly<DIT, TW, LAZY>(x1, x3, w, false);
    } else {
        if (!U02) w = tws.load(2 * h - 1 + jo);
        ntt_bfly<DIT, TW, LAZY>(x0, x2, w, U02);
        w = tws.load(3 * h - 1 + jo);
        ntt_bfly<DIT, TW, LAZY>(x1, x3, w, false);
        if (!U1) w = tws.load(h - 1 + jo);
        ntt_bfly<DIT, TW, LAZY>(x0, x1, w, U1);
        ntt_bfly<DIT, TW, LAZY>(x2, x3, w, U1);
    }
    sh.store(b, x0);
    sh.store(b + h, x1);
    sh.store(b + 2 * h, x2);
    sh.store(b + 3 * h, x3);
}

// The radix-4 steps of a pass on its staged elements sh and twiddles tws, nthr threads.
// The steps stay a loop: unrolled for K = 8 at compile time (every size a constant) the
// pass took 2,288 -> 5,720 SASS instructions and 2^24 3.89 -> 4.39 ms (H200, one run).
// MIXED: the steps whose stages have half-sizes up to 2^kNttLowLog take their twiddles
// from twl, Shoup's pairs (ntt_pass's MIXED).
template <bool DIT, class TW, bool LAZY, bool MIXED = false, class SH, class TWS, class TWL>
__device__ __forceinline__ void ntt_r4_steps(const SH& sh, const TWS& tws, const TWL& twl, int K, uint32_t nthr,
                                             int hs_log, bool wsync, bool unit2) {
    const uint32_t quarter = 1u << (K - 2);
    // steps as (log2 h, radix-4?): the lone stage of half-size 1 when K is odd
    const bool lone = K & 1;
    const int steps = K / 2 + lone;
    for (int st = 0; st < steps; st++) {
        const bool single = lone && (DIT ? st == 0 : st == steps - 1);
        // DIF: h from 2^(K-2) down (the pair of half-sizes 2h, h); DIT: up
        const int h_log = single ? 0 : DIT ? 2 * st - (lone ? 1 : 0) : K - 2 - 2 * st;
        const uint32_t h = 1u << h_log;
        const bool unit = hs_log == 0 && h_log == 0;
        // With h = 1 every unit's jo is 0, so the half-size-2 stage's butterfly of
        // x0 and x2 takes omega^0 too: one product of the step's two skipped.
        const bool unit02 = unit && unit2;
        if (single) {
            for (uint32_t t = threadIdx.x; t < 2 * quarter; t += nthr) {
                const uint32_t j0 = 2 * t;
                fr_t x = sh.load(j0), y = sh.load(j0 + 1);
                TW w;
                if (!unit) w = tws.load(0);
                ntt_bfly<DIT, TW, LAZY>(x, y, w, unit);
                sh.store(j0, x);
                sh.store(j0 + 1, y);
            }
        } else if (MIXED && !unit && h_log + 1 <= kNttLowLog) {
            for (uint32_t u = threadIdx.x; u < quarter; u += nthr) {
                const uint32_t jo = u & (h - 1);
                ntt_r4_unit<DIT, false, false, fr_tw, LAZY>(sh, twl, ((u >> h_log) << (h_log + 2)) + jo, h, jo);
            }
        } else {
            for (uint32_t u = threadIdx.x; u < quarter; u += nthr) {
                const uint32_t jo = u & (h - 1);
                const uint32_t b = ((u >> h_log) << (h_log + 2)) + jo;
                if (unit02) ntt_r4_unit<DIT, true, true, TW, LAZY>(sh, tws, b, h, jo);
                else if (unit) ntt_r4_unit<DIT, true, false, TW, LAZY>(sh, tws, b, h, jo);
                else ntt_r4_unit<DIT, false, false, TW, LAZY>(sh, tws, b, h, jo);
            }
        }
        // Warp w's units of a step with h <= 32 touch elements 128w.. only; the lone
        // stage maps threads to elements otherwise.
        const bool next_single = lone && !DIT && st + 1 == steps - 1;
        const int next_log = DIT ? 2 * (st + 1) - (lone ? 1 : 0) : K - 2 - 2 * (st + 1);
        if (wsync && st + 1 < steps && !single && !next_single && h_log <= 5 && next_log <= 5 && nthr >= 32)
            __syncwarp();
        else
            __syncthreads();
    }
}

// The radix-2 stages of a pass (ntt_pass without R4) on its staged elements sh and
// twiddles tws.
template <bool DIT, class TW, class SH, class TWS>
__device__ __forceinline__ void ntt_r2_stages(const SH& sh, const TWS& tws, int K, int hs_log, bool wsync) {
    const uint32_t half = 1u << (K - 1);
    for (int s = 0; s < K; s++) {
        int hl_log = DIT ? s : K - 1 - s;
        uint32_t hl = 1u << hl_log;
        // The transform's stage of half-size 1 multiplies by omega^0 = 1 only: no
        // product (1/log_n of the transform's products; the branch is uniform).
        const bool unit = hs_log == 0 && hl_log == 0;
        for (uint32_t t = threadIdx.x; t < half; t += blockDim.x) {
            uint32_t jo = t & (hl - 1);
            uint32_t j0 = ((t >> hl_log) << (hl_log + 1)) + jo, j1 = j0 + hl;
            TW w = tws.load(hl - 1 + jo);
            // Each result is stored as soon as it is made: the sum of DIF is not held
            // across the product (8 registers).
            fr_t x = sh.load(j0), y = sh.load(j1), u, v;
            if (DIT) {
                if (!unit) tw_mul(y, y, w);
                fe_add(u, x, y);
                sh.store(j0, u);
                fe_sub(v, x, y);
            } else {
                fe_sub(v, x, y);
                fe_add(u, x, y);
                sh.store(j0, u);
                if (!unit) tw_mul(v, v, w);
            }
            sh.store(j1, v);
        }
        // In a stage of half-size hl <= 32 the butterflies of warp w (threads t and
        // t + blockDim.x) read and write elements 64w.. only, so between two such
        // stages the warp waits for itself alone (wsync): 5 of a pass's 8 block
        // barriers at K = 8.
        const int next_log = DIT ? s + 1 : K - 2 - s;
        if (wsync && s + 1 < K && hl_log <= 5 && next_log <= 5 && blockDim.x >= 32)
            __syncwarp();
        else
            __syncthreads();
    }
}

// R4: stages two at a time, each thread taking the 4 elements b + {0, h, 2h, 3h} of
// one radix-4 unit through the stages of half-size 2h and h (b = unit's group start
// + offset jo < h) between one shared load and one store of each: half the shared
// element traffic and half the barriers of one stage at a time, and 3 twiddles for
// its 4 products (both of the half-size-h stage's are twiddle jo). With K odd the
// half-size-1 stage goes alone (DIF last, DIT first). Elements swizzled (sh_array).
// LAZY: the radix-4 pass with lazily reduced butterflies (ntt_bfly), its elements
// reduced below r as they are stored.
// G = 2^(opt >> kNttOptGroupShift) groups a block (radix-4 only): groups blk*G .. blk*G
// + G-1 of one offset r take the same twiddles, staged once. log_n: the twiddle table's
// (a table of every 2^s-th twiddle passes log_n - s).
// MIXED (radix-4, K even, Montgomery's twiddles tw): the twiddles of the stages of
// half-size 2^kNttLowLog and less come as Shoup's pairs from twl (a table of every
// 2^(log_n - twl_log_n)-th twiddle) into a third shared array, and the steps of those
// stages take Shoup's product; the pass's other stages keep Montgomery's. Made for
// the pass of the largest half-sizes, whose twiddles are one per element and read
// from device memory: three quarters of its products become Shoup's for a quarter
// more twiddle bytes.
// PF (without ASYNC): the loads through registers ask L2 for the 128 bytes around each
// (ld_l2_128).
template <bool DIT, bool ASYNC, class TW, bool R4, bool LAZY = false, bool MIXED = false, bool PF = false>
__device__ __forceinline__ void ntt_pass(fr_t* __restrict__ a, size_t vstride, int log_n, int hs_log, int K,
                                         const TW* __restrict__ tw, uint32_t opt,
                                         const fr_tw* __restrict__ twl = nullptr, int twl_log_n = 0) {
    static_assert(!LAZY || R4, "lazy butterflies only in the radix-4 pass");
    static_assert(!MIXED || (R4 && std::is_same<TW, fr_t>::value), "mixed: radix-4 Montgomery pass");
    extern __shared__ uint4 sh16[];
    const uint32_t nthr = blockDim.x;
    const bool wsync = opt & kNttOptWarpSync, unit2 = opt & kNttOptUnit2;
    const int g_log = R4 ? (int)(opt >> kNttOptGroupShift) : 0;
    a += blockIdx.y * vstride;
    const uint32_t hs = 1u << hs_log;
    const uint32_t bb = blockIdx.x >> hs_log, r = blockIdx.x & (hs - 1);
    const sh_array<fr_t, R4> sh{sh16, 1u << K};
    const sh_array<TW> tws{sh16 + (sizeof(fr_t) / 16 << K), 1u << K};
    const sh_array<fr_tw> twls{sh16 + ((sizeof(fr_t) + sizeof(TW)) / 16 << K), kNttLow + 1};
    for (uint32_t gi = 0; gi < (1u << g_log); gi++) {
        const uint32_t blk = (bb << g_log) + gi;
        const size_t base = ((size_t)blk << (hs_log + K)) + r;
        if (gi) __syncthreads();  // the previous group's elements are stored
        for (uint32_t j = threadIdx.x; j < (1u << K); j += nthr)
            sh.template fetch<ASYNC, PF>(j, &a[base + ((size_t)j << hs_log)]);
        if (gi == 0) {
            for (uint32_t x = threadIdx.x; x < (1u << K) - 1; x += nthr) {
                const int hl_log = 31 - __clz(x + 1);
                const uint32_t jo = x + 1 - (1u << hl_log);
                if (MIXED && x < kNttLow) {
                    twls.template fetch<ASYNC, PF>(
                        x, &twl[(r + (jo << hs_log)) << (twl_log_n - 1 - hl_log - hs_log)]);
                    continue;
                }
                tws.template fetch<ASYNC, PF>(x, &tw[(r + (jo << hs_log)) << (log_n - 1 - hl_log - hs_log)]);
            }
        }
        if (ASYNC) copy_async_wait();
        __syncthreads();
        if constexpr (R4) {
            ntt_r4_steps<DIT, TW, LAZY, MIXED>(sh, tws, twls, K, nthr, hs_log, wsync, unit2);
            for (uint32_t j = threadIdx.x; j < (1u << K); j += nthr) {
                fr_t x = sh.load(j);
                if constexpr (LAZY) lz_norm(x);
                a[base + ((size_t)j << hs_log)] = x;
            }
        } else {
            ntt_r2_stages<DIT, TW>(sh, tws, K, hs_log, wsync);
            for (uint32_t j = threadIdx.x; j < (1u << K); j += nthr) a[base + ((size_t)j << hs_log)] = sh.load(j);
        }
    }
}

// The pass as a kernel: the radix-2 pass (fewer than 8 stages) and the radix-4 pass of
// 9 and 10 stages, Montgomery's twiddles, values fully reduced.
template <bool DIT, bool ASYNC, bool R4>
__global__ void k_ntt_pass(fr_t* __restrict__ a, size_t vstride, int log_n, int hs_log, int K,
                           const fr_t* __restrict__ tw, uint32_t opt) {
    ntt_pass<DIT, ASYNC, fr_t, R4>(a, vstride, log_n, hs_log, K, tw, opt);
}

template <class TW>
using ntt_pass_fn = void (*)(fr_t*, size_t, int, int, int, const TW*, uint32_t);

// The radix-4 pass of 8 stages (64 threads), lazily reduced butterflies (ntt_bfly's
// LAZY: 2^24 4.02 -> 3.91 ms, the passes' instructions 4% fewer; H200), held to fewer
// registers so that more blocks fit an SM. Montgomery's twiddles at MINB 10: unbounded
// it takes 100-102 registers, 8 blocks; at 10, 96 registers and 10 blocks (80 registers
// at 12 spilled; all within 0.5% at 2^24). Shoup's at 8: its 64-byte twiddles make a
// block's shared arrays 24 KiB, so 9 blocks fit an SM at most, which leaves 96
// registers, where it spills 36-92 bytes; at 8 blocks it has 128 and spills none (2^24
// 3.90 ms at 9, 3.68 at 8). Shared memory is carved out to its maximum for both: the
// default share held the pass to 9 blocks.
template <int MINB, bool DIT, bool ASYNC, class TW>
__global__ void __launch_bounds__(64, MINB) k_ntt_pass_r4b(fr_t* __restrict__ a, size_t vstride, int log_n,
                                                           int hs_log, int K, const TW* __restrict__ tw,
                                                           uint32_t opt) {
    ntt_pass<DIT, ASYNC, TW, true, true>(a, vstride, log_n, hs_log, K, tw, opt);
}

// The mixed radix-4 Montgomery pass (ntt_pass's MIXED), lazy, 64 threads, held to 128
// registers (8 blocks an SM, Shoup's pass's bound: 3.46 against 3.50 ms DIF at 96).
// Its loads through registers ask L2 for 128 bytes (PF; a kernel of its own: as a
// run-time flag in every pass the branches cost more than it saved).
template <bool DIT, bool ASYNC>
__global__ void __launch_bounds__(64, 8)
    k_ntt_pass_mixed(fr_t* __restrict__ a, size_t vstride, int log_n, int hs_log, int K, const fr_t* __restrict__ tw,
                     uint32_t opt, const fr_tw* __restrict__ twl, int twl_log_n) {
    ntt_pass<DIT, ASYNC, fr_t, true, true, true, !ASYNC>(a, vstride, log_n, hs_log, K, tw, opt, twl, twl_log_n);
}

using ntt_mixed_fn = void (*)(fr_t*, size_t, int, int, int, const fr_t*, uint32_t, const fr_tw*, int);

// The element-wise kernels also take blockIdx.y as the vector of a batch.
__global__ void k_scale(fr_t* a, size_t n, fr_t k) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) fe_mul(a[i], a[i], k);
}

__global__ void k_mul_table(fr_t* a, size_t vstride, size_t n, const fr_t* __restrict__ t) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    a += blockIdx.y * vstride;
    if (i < n) fe_mul(a[i], a[i], t[i]);
}

// Zeroes elements [from, n) of each vector.
__global__ void k_zero_tail(fr_t* a, size_t vstride, size_t from, size_t n) {
    size_t i = from + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    a += blockIdx.y * vstride;
    if (i < n) fe_zero(a[i]);
}

// c = a∘b on the constraints: a satisfied R1CS has a_i·b_i = c_i, so c is never uploaded.
__global__ void k_c_from_ab(const fr_t* __restrict__ a, size_t astride, const fr_t* __restrict__ b, fr_t* c,
                            size_t bcstride, size_t m) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    a += blockIdx.y * astride;
    b += blockIdx.y * bcstride;
    c += blockIdx.y * bcstride;
    fe_mul(c[i], a[i], b[i]);
}

__global__ void k_abc(fr_t* a, size_t astride, const fr_t* __restrict__ b, const fr_t* __restrict__ c,
                      size_t bcstride, size_t n, fr_t den) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a += blockIdx.y * astride;
    b += blockIdx.y * bcstride;
    c += blockIdx.y * bcstride;
    fr_t x;
    fe_mul(x, a[i], b[i]);
    fe_sub(x, x, c[i]);
    fe_mul(a[i], x, den);
}

// t[i] = base^(bitrev ? rev(i) : i) * scale
__global__ void k_pow_table(fr_t* t, size_t n, fr_t base, int rev_log, fr_t scale) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t e = rev_log ? bitrev((uint32_t)i, rev_log) : (uint32_t)i;
    fr_t x;
    fe_pow(x, base, e);
    fe_mul(t[i], x, scale);
}

// t[i] = Shoup's pair for base^(i * 2^shift)
__global__ void k_shoup_table(fr_tw* t, size_t n, fr_t base, int shift) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t x;
    fe_pow(x, base, (uint32_t)i << shift);
    fe_shoup_from_mont(t[i], x);
}

fr_t to_fr(const uint64_t v[4]) {
    fr_t r;
    for (int i = 0; i < 4; i++) {
        r.v[2 * i] = (uint32_t)v[i];
        r.v[2 * i + 1] = (uint32_t)(v[i] >> 32);
    }
    return r;
}

fr_t fr_one_host() {
    fr_t r;
    for (int i = 0; i < 8; i++) r.v[i] = fr_params::one(i);
    return r;
}

// The shape of pass p of a transform of 2^log_n: K stages on groups 2^hs_log apart.
struct ntt_pass_shape {
    int K, hs_log, index;  // index: position from the largest half-sizes
};

// Stages of the pass of the largest half-sizes, or 0 for the even split. At 2^22 and
// 2^23, log_n - 16, so that the other two passes are Shoup's 8-stage passes: 2^22 takes
// 6, 8, 8 instead of 7, 7, 8, whose 7-stage passes take Montgomery's product (H100:
// 0.95-1.01 -> 0.88-0.89 ms, both directions); 2^23's even split is 7, 8, 8 already.
// Not at 2^24: that first pass, 2^16 offsets apart, is bound by its strided loads rather
// than its products (6 stages 1.68 ms, 8 stages 1.70), and 9- and 10-stage Shoup passes
// are slower than two of 8 (7, 8, 9: 3.73 ms against 3.56). Nor at 2^20 and 2^21, where
// the rule's first passes (4 stages at 2^20: 0.38 ms, 5 at 2^21: 0.57; H100) lose to the
// even split's 0.27, 0.49.
int ntt_first_stages(int log_n) { return log_n >= 22 && log_n <= 23 ? log_n - 16 : 0; }

// The passes of a transform in launch order. The pass of the largest half-sizes takes
// ntt_first_stages (when set) and the others the rest, split evenly with the larger
// counts at the smaller half-sizes; else all are split evenly, at most kMaxFused each.
// DIT runs the passes from the smallest half-sizes up, DIF from the largest down.
template <class F>
void ntt_shapes(int log_n, bool dit, F f) {
    if (const int first = ntt_first_stages(log_n)) {
        // Stage counts from the largest half-sizes: first, then the rest.
        int Ks[32], passes = 1;
        Ks[0] = first;
        const int rest = log_n - first, rp = (rest + kMaxFused - 1) / kMaxFused;
        for (int p = 0, done = 0; p < rp; p++, passes++) {
            Ks[passes] = (rest - done) / (rp - p);
            done += Ks[passes];
        }
        int done = 0;  // stages done so far
        for (int i = 0; i < passes; i++) {
            const int p = dit ? passes - 1 - i : i, K = Ks[p];
            f(ntt_pass_shape{K, dit ? done : log_n - done - K, p});
            done += K;
        }
        return;
    }
    const int passes = (log_n + kMaxFused - 1) / kMaxFused;
    int done = 0;  // stages done so far
    for (int p = 0; p < passes; p++) {
        const int K = (log_n - done) / (passes - p);
        // DIT: smallest half-sizes first (hs = 2^done); DIF: largest first.
        f(ntt_pass_shape{K, dit ? done : log_n - done - K, dit ? passes - 1 - p : p});
        done += K;
    }
}

// Which passes take Shoup's twiddle product (fr_tw pairs: a*w - q*r, q from the high
// half of a*floor(w*2^256/r); about a quarter fewer multiply-pipe cycles than
// Montgomery's folded product, twiddles of 64 bytes instead of 32): the radix-4 passes
// of 8 stages whose twiddles several groups share (2 or more groups of each offset: all
// but the pass of the largest half-sizes); their blocks take 4 groups each and stage
// the twiddles once. The pass of the largest half-sizes, a distinct twiddle per element
// read from device memory, keeps Montgomery's, and so do the radix-2 passes of 7 stages
// (2^22's DIT took 0.95 -> 1.30 ms with them). H200, 2^24: 3.88 -> 3.57 ms DIF and DIT
// (docs/lab/BENCHMARKS.md).
bool ntt_shoup_pass(int log_n, int K, int hs_log) { return K == 8 && log_n - K - hs_log >= 1; }

// Which Montgomery passes are mixed (ntt_pass's MIXED): from 2^24 the radix-4 passes of
// 8 stages other than the transform's smallest half-sizes (whose unit twiddles the
// mixed steps do not skip), that is the pass of the largest half-sizes, whose stages of
// half-size 2^16..2^21 then take Shoup's pairs of every 4th twiddle (the domain's Shoup
// tables grow from 4 MiB to 256 MiB, a sixth more than its other tables). H100, 2^24:
// 3.56 -> 3.46 ms DIF, 3.56-3.59 -> 3.51-3.52 DIT (docs/lab/BENCHMARKS.md). Below 2^24
// (2^16 and 2^17 have such a pass) unmeasured, so off.
bool ntt_mixed_pass(int log_n, int K, int hs_log) { return log_n >= 24 && K == 8 && hs_log > 0; }

// Shoup's tables hold every 2^s-th twiddle: the passes that take them index only
// multiples of 2^(log_n - hs_log - K) (mixed passes: of 2^(log_n - 1 - kNttLowLog -
// hs_log)). -1: no pass takes them.
int ntt_shoup_shift(int log_n) {
    int s = -1;
    for (bool dit : {false, true})
        ntt_shapes(log_n, dit, [&](ntt_pass_shape ps) {
            int need = -1;
            if (ntt_shoup_pass(log_n, ps.K, ps.hs_log))
                need = log_n - ps.hs_log - ps.K;
            else if (ntt_mixed_pass(log_n, ps.K, ps.hs_log))
                need = log_n - 1 - kNttLowLog - ps.hs_log;
            if (need >= 0) s = s < 0 ? need : std::min(s, need);
        });
    return s;
}

// Shared memory of a pass of 2^K elements: the elements and the 2^K - 1 twiddles of its
// stages (TW: fr_t or Shoup's fr_tw).
template <class TW>
size_t ntt_pass_shared(int K) {
    return (sizeof(fr_t) << K) + (sizeof(TW) << K);
}

// The passes' room for their elements and twiddles, set once per device for every
// kernel a plan can launch; the radix-4 passes of 8 stages and the mixed pass also get
// the largest shared-memory carveout.
cudaError_t ntt_set_shared_limits() {
    cudaError_t e = cudaSuccess;
    auto limit = [&e](auto f, size_t bytes, bool carve) {
        if (e == cudaSuccess) e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
        if (e == cudaSuccess && carve)
            e = cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    };
    const size_t mont = ntt_pass_shared<fr_t>(kMaxFused), shoup = ntt_pass_shared<fr_tw>(kMaxFused);
    const size_t mixed = mont + (kNttLow + 1) * sizeof(fr_tw);
    for (ntt_pass_fn<fr_t> f : {k_ntt_pass<false, false, false>, k_ntt_pass<false, false, true>,
                                k_ntt_pass<false, true, false>, k_ntt_pass<false, true, true>,
                                k_ntt_pass<true, false, false>, k_ntt_pass<true, false, true>,
                                k_ntt_pass<true, true, false>, k_ntt_pass<true, true, true>})
        limit(f, mont, false);
    for (ntt_pass_fn<fr_t> f : {k_ntt_pass_r4b<10, false, false, fr_t>, k_ntt_pass_r4b<10, false, true, fr_t>,
                                k_ntt_pass_r4b<10, true, false, fr_t>, k_ntt_pass_r4b<10, true, true, fr_t>})
        limit(f, mont, true);
    for (ntt_pass_fn<fr_tw> f : {k_ntt_pass_r4b<8, false, false, fr_tw>, k_ntt_pass_r4b<8, false, true, fr_tw>,
                                 k_ntt_pass_r4b<8, true, false, fr_tw>, k_ntt_pass_r4b<8, true, true, fr_tw>})
        limit(f, shoup, true);
    for (ntt_mixed_fn f : {k_ntt_pass_mixed<false, false>, k_ntt_pass_mixed<false, true>,
                           k_ntt_pass_mixed<true, false>, k_ntt_pass_mixed<true, true>})
        limit(f, mixed, true);
    return e;
}

// One launch of a transform's plan.
struct ntt_step {
    enum kind_t { kMont, kShoup, kMixed } kind;
    int K, hs_log;
    uint32_t grid;     // blocks per vector
    uint32_t threads;  // per block
    size_t shared;     // dynamic shared memory
    uint32_t opt;      // ntt_pass's opt
    ntt_pass_fn<fr_t> mont;    // kMont
    ntt_pass_fn<fr_tw> shoup;  // kShoup
    ntt_mixed_fn mixed;        // kMixed
};

// The pass of shape ps in direction dit, given the domain's Shoup tables (every
// 2^tws_shift-th twiddle, none for -1).
ntt_step ntt_plan_step(int log_n, bool dit, ntt_pass_shape ps, int tws_shift) {
    const int K = ps.K, hs_log = ps.hs_log;
    ntt_step s{};
    s.K = K;
    s.hs_log = hs_log;
    s.opt = kNttOptWarpSync | kNttOptUnit2;
    // Passes of half-size step below 2^16 load by cp.async (ntt_pass's ASYNC). Measured
    // per pass at 2^24 (H200, ncu): the passes of step 2^8 and 1 take 1.43 -> 1.38 and
    // 1.25 -> 1.22 ms with it, the pass of step 2^16 1.46 -> 1.65 ms (its twiddles and
    // elements come from all over device memory, and cp.async's 16-byte requests are 19%
    // more L2 requests than the loads'); at 2^22, with steps 2^15, 2^8 and 1, all three
    // passes copying asynchronously was fastest (0.97 -> 0.93 ms).
    const bool async = hs_log < 16;
    const bool shoup = tws_shift >= 0 && log_n - hs_log - K >= tws_shift && ntt_shoup_pass(log_n, K, hs_log);
    if (!shoup && tws_shift >= 0 && ntt_mixed_pass(log_n, K, hs_log) && tws_shift <= log_n - 1 - kNttLowLog - hs_log) {
        s.kind = ntt_step::kMixed;
        s.grid = 1u << (log_n - K);
        s.threads = 1u << (K - 2);
        s.shared = ntt_pass_shared<fr_t>(K) + (kNttLow + 1) * sizeof(fr_tw);
        s.mixed = dit ? (async ? k_ntt_pass_mixed<true, true> : k_ntt_pass_mixed<true, false>)
                      : (async ? k_ntt_pass_mixed<false, true> : k_ntt_pass_mixed<false, false>);
        return s;
    }
    // Passes of 8 stages or more take their stages two at a time (ntt_pass's R4).
    const bool r4 = K >= 8;
    s.threads = std::min<uint32_t>(1u << (K - (r4 ? 2 : 1)), 256);
    // Groups a radix-4 block takes in turn, sharing one staging of their twiddles
    // (ntt_pass's G), at most the groups of each offset: 4 for Shoup's passes, 1 for
    // Montgomery's (whose 32-byte twiddles cost less to stage than the blocks' lost
    // overlap: 2^24 3.89 -> 4.01 ms at 4). H200, 2^24 with Shoup's passes: 3.90 ms at 16
    // (whole waves fewer), 3.58 at 4 (docs/lab/BENCHMARKS.md).
    const int g_log = r4 ? std::min(shoup ? 2 : 0, log_n - K - hs_log) : 0;
    s.grid = 1u << (log_n - K - g_log);
    s.opt |= (uint32_t)g_log << kNttOptGroupShift;
    if (shoup) {
        // Shoup's passes are the bounded radix-4 ones (8 stages, 64 threads).
        s.kind = ntt_step::kShoup;
        s.shared = ntt_pass_shared<fr_tw>(K);
        s.shoup = dit ? (async ? k_ntt_pass_r4b<8, true, true, fr_tw> : k_ntt_pass_r4b<8, true, false, fr_tw>)
                      : (async ? k_ntt_pass_r4b<8, false, true, fr_tw> : k_ntt_pass_r4b<8, false, false, fr_tw>);
        return s;
    }
    s.kind = ntt_step::kMont;
    s.shared = ntt_pass_shared<fr_t>(K);
    if (r4 && s.threads <= 64)
        s.mont = dit ? (async ? k_ntt_pass_r4b<10, true, true, fr_t> : k_ntt_pass_r4b<10, true, false, fr_t>)
                     : (async ? k_ntt_pass_r4b<10, false, true, fr_t> : k_ntt_pass_r4b<10, false, false, fr_t>);
    else if (r4)
        s.mont = dit ? (async ? k_ntt_pass<true, true, true> : k_ntt_pass<true, false, true>)
                     : (async ? k_ntt_pass<false, true, true> : k_ntt_pass<false, false, true>);
    else
        s.mont = dit ? (async ? k_ntt_pass<true, true, false> : k_ntt_pass<true, false, false>)
                     : (async ? k_ntt_pass<false, true, false> : k_ntt_pass<false, false, false>);
    return s;
}

}  // namespace

// A domain's transform plan: its launches in order for each direction, chosen once when
// the domain is made, and the stride of its Shoup tables.
struct ntt_plan {
    static constexpr int kMaxPasses = 4;  // ceil(31 / kMaxFused)
    int tws_shift = -1;                   // Shoup's tables: every 2^tws_shift-th twiddle; -1: none
    int passes[2] = {0, 0};               // [dit]
    ntt_step step[2][kMaxPasses];

    explicit ntt_plan(int log_n) {
        tws_shift = ntt_shoup_shift(log_n);
        for (int dit = 0; dit < 2; dit++)
            ntt_shapes(log_n, dit, [&](ntt_pass_shape ps) {
                step[dit][passes[dit]++] = ntt_plan_step(log_n, dit, ps, tws_shift);
            });
    }
};

struct cuzk_domain {
    cuzk_ctx* ctx;
    int gen = 0;
    int log_n;
    cuzk_domain_consts_t k;
    ntt_plan plan;
    void* tw = nullptr;        // omega^i, i < n/2
    void* tw_inv = nullptr;    // omega^-i
    void* tws = nullptr;       // omega^(i*2^plan.tws_shift) as Shoup's pairs (fr_tw), or none
    void* tws_inv = nullptr;   // omega^-(i*2^plan.tws_shift), the same
    void* coset_br = nullptr;  // coset^rev(i) / n
    void* coset_inv_br = nullptr;  // coset^-rev(i) / n

    explicit cuzk_domain(int log_n) : log_n(log_n), plan(log_n) {}
};

namespace {

// NTT of count vectors, vector j at a + j*vstride, each pass launched once for all.
int ntt_core(cudaStream_t st, const cuzk_domain* d, fr_t* a, bool inverse, bool dit, int count = 1,
             size_t vstride = 0) {
    const int log_n = d->log_n;
    if (log_n == 0) return CUZK_OK;
    const fr_t* tw = (const fr_t*)(inverse ? d->tw_inv : d->tw);
    const fr_tw* tws = (const fr_tw*)(inverse ? d->tws_inv : d->tws);
    const ntt_plan& plan = d->plan;
    for (int i = 0; i < plan.passes[dit]; i++) {
        const ntt_step& s = plan.step[dit][i];
        const dim3 grid(s.grid, count);
        switch (s.kind) {
        case ntt_step::kMont:
            s.mont<<<grid, s.threads, s.shared, st>>>(a, vstride, log_n, s.hs_log, s.K, tw, s.opt);
            break;
        case ntt_step::kShoup:
            s.shoup<<<grid, s.threads, s.shared, st>>>(a, vstride, log_n - plan.tws_shift, s.hs_log, s.K, tws, s.opt);
            break;
        case ntt_step::kMixed:
            s.mixed<<<grid, s.threads, s.shared, st>>>(a, vstride, log_n, s.hs_log, s.K, tw, s.opt, tws,
                                                       log_n - plan.tws_shift);
            break;
        }
    }
    CK(cudaGetLastError());
    return CUZK_OK;
}

}  // namespace

extern "C" int cuzk_domain_create(cuzk_stream* s, int log_n, const cuzk_domain_consts_t* k, cuzk_domain** out) {
    if (!s || !k || !out) return fail(CUZK_ERR_ARG, "NULL argument");
    if (log_n < 0 || log_n > 31) return fail(CUZK_ERR_ARG, "log_n out of range");
    RET(set_device(s->ctx));
    cuzk_domain* d = new cuzk_domain(log_n);
    d->ctx = s->ctx;
    d->gen = s->ctx->gen;
    d->k = *k;
    size_t n = (size_t)1 << log_n, nh = std::max<size_t>(n / 2, 1);
    cudaStream_t st = s->s;
    fr_t one = fr_one_host(), ninv = to_fr(k->n_inv);
    // Set once per device here rather than at every transform.
    cudaError_t ae = ntt_set_shared_limits();
    if (ae != cudaSuccess) {
        delete d;
        return fail(CUZK_ERR_CUDA, std::string("NTT shared memory: ") + cudaGetErrorString(ae));
    }
    // Shoup's pairs of the twiddles its Shoup and mixed passes take (ntt_shoup_shift):
    // every 2^s-th.
    const int tws_shift = d->plan.tws_shift;
    const bool shoup_tw = tws_shift >= 0;
    const size_t nsh = shoup_tw ? std::max<size_t>(nh >> tws_shift, 1) : 0;
    cudaError_t e = cudaMalloc(&d->tw, nh * sizeof(fr_t));
    if (e == cudaSuccess) e = cudaMalloc(&d->tw_inv, nh * sizeof(fr_t));
    if (e == cudaSuccess && shoup_tw) e = cudaMalloc(&d->tws, nsh * sizeof(fr_tw));
    if (e == cudaSuccess && shoup_tw) e = cudaMalloc(&d->tws_inv, nsh * sizeof(fr_tw));
    if (e == cudaSuccess) e = cudaMalloc(&d->coset_br, n * sizeof(fr_t));
    if (e == cudaSuccess) e = cudaMalloc(&d->coset_inv_br, n * sizeof(fr_t));
    if (e != cudaSuccess) {
        cuzk_domain_destroy(d);
        return fail(CUZK_ERR_NOMEM, std::string("domain tables: ") + cudaGetErrorString(e));
    }
    k_pow_table<<<blocks(nh, 256), 256, 0, st>>>((fr_t*)d->tw, nh, to_fr(k->omega), 0, one);
    k_pow_table<<<blocks(nh, 256), 256, 0, st>>>((fr_t*)d->tw_inv, nh, to_fr(k->omega_inv), 0, one);
    if (shoup_tw) {
        k_shoup_table<<<blocks(nsh, 256), 256, 0, st>>>((fr_tw*)d->tws, nsh, to_fr(k->omega), tws_shift);
        k_shoup_table<<<blocks(nsh, 256), 256, 0, st>>>((fr_tw*)d->tws_inv, nsh, to_fr(k->omega_inv), tws_shift);
    }
    k_pow_table<<<blocks(n, 256), 256, 0, st>>>((fr_t*)d->coset_br, n, to_fr(k->coset), log_n, ninv);
    k_pow_table<<<blocks(n, 256), 256, 0, st>>>((fr_t*)d->coset_inv_br, n, to_fr(k->coset_inv), log_n, ninv);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        cuzk_domain_destroy(d);
        return fail(CUZK_ERR_CUDA, std::string("domain tables: ") + cudaGetErrorString(e));
    }
    *out = d;
    return CUZK_OK;
}

extern "C" int cuzk_domain_destroy(cuzk_domain* d) {
    if (!d) return CUZK_OK;
    if (stale(d->ctx, d->gen)) {
        delete d;
        return CUZK_OK;
    }
    cudaSetDevice(d->ctx->dev);
    cudaFree(d->tws);
    cudaFree(d->tws_inv);
    cudaFree(d->tw);
    cudaFree(d->tw_inv);
    cudaFree(d->coset_br);
    cudaFree(d->coset_inv_br);
    delete d;
    return CUZK_OK;
}

extern "C" int cuzk_ntt(cuzk_stream* s, const cuzk_domain* d, cuzk_buf* buf, size_t offset, int flags) {
    if (!s || !d || !buf) return fail(CUZK_ERR_ARG, "NULL argument");
    size_t n = (size_t)1 << d->log_n;
    if (offset > buf->bytes / 32 || n > buf->bytes / 32 - offset) return fail(CUZK_ERR_ARG, "NTT out of range");
    RET(set_device(s->ctx));
    fr_t* a = (fr_t*)buf->d + offset;
    bool inverse = flags & CUZK_NTT_INVERSE;
    RET(ntt_core(s->s, d, a, inverse, flags & CUZK_NTT_DIT));
    if (inverse) {
        k_scale<<<blocks(n, 256), 256, 0, s->s>>>(a, n, to_fr(d->k.n_inv));
        CK(cudaGetLastError());
    }
    CK(cudaStreamSynchronize(s->s));
    return CUZK_OK;
}

namespace {

// gnark's computeH on count solutions (see cuzk_compute_h_batch); arguments checked.
int compute_h(cudaStream_t st, const cuzk_domain* d, fr_t* a, size_t astride, fr_t* b, fr_t* c, size_t bcstride,
              int count, size_t n_constraints, const uint64_t den[4]) {
    const size_t n = (size_t)1 << d->log_n;
    fr_t* v[3] = {a, b, c};
    const size_t vs[3] = {astride, bcstride, bcstride};
    if (n_constraints > 0) {
        k_c_from_ab<<<dim3(blocks(n_constraints, 256), count), 256, 0, st>>>(a, astride, b, c, bcstride, n_constraints);
        CK(cudaGetLastError());
    }
    for (int i = 0; i < 3; i++) {
        if (n > n_constraints) {
            k_zero_tail<<<dim3(blocks(n - n_constraints, 256), count), 256, 0, st>>>(v[i], vs[i], n_constraints, n);
            CK(cudaGetLastError());
        }
        RET(ntt_core(st, d, v[i], true, false, count, vs[i]));
        k_mul_table<<<dim3(blocks(n, 256), count), 256, 0, st>>>(v[i], vs[i], n, (const fr_t*)d->coset_br);
        CK(cudaGetLastError());
        RET(ntt_core(st, d, v[i], false, true, count, vs[i]));
    }
    k_abc<<<dim3(blocks(n, 256), count), 256, 0, st>>>(a, astride, b, c, bcstride, n, to_fr(den));
    CK(cudaGetLastError());
    RET(ntt_core(st, d, a, true, false, count, astride));
    k_mul_table<<<dim3(blocks(n, 256), count), 256, 0, st>>>(a, astride, n, (const fr_t*)d->coset_inv_br);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
    return CUZK_OK;
}

}  // namespace

extern "C" int cuzk_compute_h(cuzk_stream* s, const cuzk_domain* d, cuzk_buf* a, size_t a_offset, cuzk_buf* b,
                              cuzk_buf* c, size_t n_constraints, const uint64_t den[4]) {
    if (!s || !d || !a || !b || !c || !den) return fail(CUZK_ERR_ARG, "NULL argument");
    size_t n = (size_t)1 << d->log_n;
    if (n_constraints > n) return fail(CUZK_ERR_ARG, "more constraints than the domain");
    if (b->bytes < n * 32 || c->bytes < n * 32 || a->bytes / 32 < a_offset || a->bytes / 32 - a_offset < n)
        return fail(CUZK_ERR_ARG, "compute_h buffer smaller than the domain");
    RET(set_device(s->ctx));
    return compute_h(s->s, d, (fr_t*)a->d + a_offset, 0, (fr_t*)b->d, (fr_t*)c->d, 0, 1, n_constraints, den);
}

extern "C" int cuzk_compute_h_batch(cuzk_stream* s, const cuzk_domain* d, cuzk_buf* a, size_t a_offset,
                                    size_t a_stride, cuzk_buf* b, cuzk_buf* c, size_t bc_offset, size_t bc_stride,
                                    int count, size_t n_constraints, const uint64_t den[4]) {
    if (!s || !d || !a || !b || !c || !den) return fail(CUZK_ERR_ARG, "NULL argument");
    if (count < 1 || count > CUZK_MAX_BATCH) return fail(CUZK_ERR_ARG, "batch count out of range");
    size_t n = (size_t)1 << d->log_n;
    if (n_constraints > n) return fail(CUZK_ERR_ARG, "more constraints than the domain");
    if (count > 1 && (a_stride < n || bc_stride < n)) return fail(CUZK_ERR_ARG, "batch stride below the domain size");
    // The last vector's end, in elements, without overflow for any size_t input.
    const size_t last = (size_t)(count - 1);
    auto fits = [&](const cuzk_buf* buf, size_t off, size_t stride) {
        size_t elems = buf->bytes / 32;
        if (off > elems || (last && stride > (elems - off) / last)) return false;
        return elems - off - last * stride >= n;
    };
    if (!fits(a, a_offset, a_stride) || !fits(b, bc_offset, bc_stride) || !fits(c, bc_offset, bc_stride))
        return fail(CUZK_ERR_ARG, "compute_h batch buffer smaller than its vectors");
    RET(set_device(s->ctx));
    return compute_h(s->s, d, (fr_t*)a->d + a_offset, a_stride, (fr_t*)b->d + bc_offset, (fr_t*)c->d + bc_offset,
                     bc_stride, count, n_constraints, den);
}
