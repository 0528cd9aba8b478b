// msm.cuh: Pippenger multi-scalar multiplication over G1 (Fp) and G2 (Fp2).
//
// Per chunk of points: signed c-bit digits -> (bucket key, point) pairs -> CUB radix
// sort by key -> each bucket's run is split into units of at most L points (about
// twice the mean bucket load) -> units sorted by length, so the threads of a warp run
// loops of nearly equal length -> units summed with mixed additions, one thread each
// -> each bucket's unit sums added in a pairwise tree (log rounds, so a bucket that
// holds a large share of the points, as the digit 1 of boolean-heavy witnesses or the
// carry window does, costs rounds, not a long serial chain) -> merged into persistent
// XYZZ buckets. After the last chunk, each window's buckets are reduced in parallel
// segments (running sums) and a pairwise tree; the host folds the window sums.
//
// Templated on the curve C (ec/bls12_381.cuh's g1_curve, g2_curve); each is
// instantiated in its own translation unit (msm_g1.cu, msm_g2.cu) so the two compile
// in parallel.
#pragma once
#include <cub/cub.cuh>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include "ec/bls12_381.cuh"
#include "runtime.cuh"
#include "windows.cuh"  // window sizes: msm_choose_c, msm_precompute_shape

namespace msm {
namespace {  // internal linkage: each instantiation unit gets its own kernels

struct unit_desc {
    uint32_t start, len, bucket;
};

constexpr uint32_t kNegBit = 0x80000000u;

// r - k for k < r (the scalar's canonical limbs, in place).
__device__ __forceinline__ void fr_negate_limbs(uint32_t* limbs) {
    uint64_t borrow = 0;
#pragma unroll
    for (int l = 0; l < 8; l++) {
        uint64_t d = (uint64_t)fr_params::mod(l) - limbs[l] - borrow;
        limbs[l] = (uint32_t)d;
        borrow = d >> 63;
    }
}

// Signed c-bit digits of each scalar. blockIdx.y selects the scalar vector of a batch
// (vector j at scalars + j*stride); the bucket key of digit d of window w of vector j
// is (j*nwin + w)*nb + d, so each (vector, window) pair has its own buckets.
// With precomputed bases (pcf > 0 copies pcstride points apart), window w's digit
// goes to the buckets of window group w / pcf against copy w % pcf of the point, so
// ngroups = ceil(nwin / pcf) bucket sets serve all windows.
struct digit_params {
    int c, nwin, pcf;
    uint32_t nb, pcstride;
};

// Digit w (carry in and out through carry) and its (key, value) pair for point i of
// vector j; returns the digit's magnitude (0: the digit adds nothing).
__device__ __forceinline__ uint32_t digit_at(const uint32_t* limbs, int w, uint32_t& carry, const digit_params& p,
                                             uint32_t i, uint32_t j, uint32_t flip, uint32_t& key, uint32_t& val) {
    const uint32_t mask = (1u << p.c) - 1, half = 1u << (p.c - 1);
    int o = w * p.c, li = o >> 5, sh = o & 31;
    uint64_t two = li < 8 ? ((uint64_t)limbs[li] | ((uint64_t)limbs[li + 1] << 32)) : 0;
    uint32_t d = ((uint32_t)(two >> sh) & mask) + carry;
    uint32_t neg = 0;
    if (d > half) {
        d = (1u << p.c) - d;
        neg = kNegBit;
        carry = 1;
    } else {
        carry = 0;
    }
    neg ^= flip;
    if (p.pcf) {
        const uint32_t ng = (p.nwin + p.pcf - 1) / p.pcf;
        key = (j * ng + w / p.pcf) * p.nb + d;
        val = ((w % p.pcf) * p.pcstride + i) | neg;
    } else {
        key = (j * p.nwin + w) * p.nb + d;
        val = i | neg;
    }
    return d;
}

// The scalar's canonical limbs (limbs[8] = 0), below 2^254: returns kNegBit when the
// scalar was replaced by r - k, whose every digit then goes against the negated point
// (msm_windows counts on it).
__device__ __forceinline__ uint32_t scalar_limbs(const fr_t& m, uint32_t* limbs) {
    fr_t s;
    fe_from_mont(s, m);
#pragma unroll
    for (int l = 0; l < 8; l++) limbs[l] = s.v[l];
    limbs[8] = 0;
    if ((limbs[7] >> 30) == 0) return 0;  // below 2^254
    fr_negate_limbs(limbs);
    return kNegBit;
}

// Only the nonzero digits are written, packed from keys[0]: a zero digit adds nothing
// (bucket 0 is skipped), and the witnesses Groth16 proves are mostly 0 and 1, whose
// digits are all zero but one at most, so the sort and everything after it handle a
// few entries per such scalar instead of nwin. Within a block, each warp's digits of
// window w are consecutive in lane order (the stores stay coalesced); one atomicAdd
// per block on *count (zero before the launch) places the block's run, so *count ends
// as the number of entries. Each scalar's digits are computed twice (count, then
// write) from its limbs, which stay in registers.
__global__ void k_digits(const fr_t* __restrict__ scalars, const uint32_t* __restrict__ index, uint32_t n,
                         size_t stride, digit_params p, uint32_t* __restrict__ keys, uint32_t* __restrict__ vals,
                         uint32_t* __restrict__ count) {
    __shared__ uint32_t warp_run[32];
    __shared__ uint32_t block_base;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t j = blockIdx.y;
    const bool live = i < n;  // every lane stays for the ballots
    uint32_t limbs[9], flip = 0;
#pragma unroll
    for (int l = 0; l < 9; l++) limbs[l] = 0;
    if (live) flip = scalar_limbs(scalars[j * stride + (index ? index[i] : i)], limbs);
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t carry = 0, total = 0, key, val;
    for (int w = 0; w < p.nwin; w++) {
        uint32_t d = digit_at(limbs, w, carry, p, i, j, flip, key, val);
        total += __popc(__ballot_sync(0xffffffffu, live && d != 0));
    }
    if (lane == 0) warp_run[warp] = total;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t run = 0;
        for (uint32_t k = 0; k < (blockDim.x + 31) / 32; k++) {
            uint32_t t = warp_run[k];
            warp_run[k] = run;
            run += t;
        }
        block_base = run ? atomicAdd(count, run) : 0;
    }
    __syncthreads();
    uint32_t pos = block_base + warp_run[warp];
    const uint32_t below = (1u << lane) - 1;
    carry = 0;
    for (int w = 0; w < p.nwin; w++) {
        uint32_t d = digit_at(limbs, w, carry, p, i, j, flip, key, val);
        const bool put = live && d != 0;
        const uint32_t b = __ballot_sync(0xffffffffu, put);
        if (put) {
            const uint32_t o = pos + __popc(b & below);
            keys[o] = key;
            vals[o] = val;
        }
        pos += __popc(b);
    }
}

// Histogram of the scalars' bit lengths as the digits see them (scalar_limbs: k, or
// r - k when k is not below 2^254), for msm_density_c. Lanes of a warp with the same
// length add once (witnesses put most of a warp in bin 0 or 1).
__global__ void k_bitlen(const fr_t* __restrict__ scalars, const uint32_t* __restrict__ index, uint32_t n,
                         unsigned long long* __restrict__ hist) {
    __shared__ uint32_t h[256];
    for (uint32_t k = threadIdx.x; k < 256; k += blockDim.x) h[k] = 0;
    __syncthreads();
    const uint32_t lane = threadIdx.x & 31;
    for (uint32_t base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
        const uint32_t i = base + threadIdx.x;
        uint32_t len = 256;  // past the end: no bin
        if (i < n) {
            uint32_t limbs[9];
            scalar_limbs(scalars[index ? index[i] : i], limbs);
            len = 0;
            for (int l = 7; l >= 0; l--) {
                if (limbs[l]) {
                    len = 32 * l + 32 - __clz(limbs[l]);
                    break;
                }
            }
        }
        const uint32_t same = __match_any_sync(0xffffffffu, len);
        if (len < 256 && lane == __ffs(same) - 1) atomicAdd(&h[len], __popc(same));
    }
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < 256; k += blockDim.x)
        if (h[k]) atomicAdd(&hist[k], (unsigned long long)h[k]);
}

__global__ void k_bounds(const uint32_t* __restrict__ keys, uint32_t m, uint32_t* bstart, uint32_t* bend) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    uint32_t k = keys[i];
    if (i == 0 || keys[i - 1] != k) bstart[k] = i;
    if (i == m - 1 || keys[i + 1] != k) bend[k] = i + 1;
}

// Units per bucket (bucket 0 of each window is skipped); umax gets the largest count.
__global__ void k_units(const uint32_t* bstart, const uint32_t* bend, uint32_t K, uint32_t nb, uint32_t L,
                        uint32_t* units, uint32_t* umax) {
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k > K) return;
    if (k == K) {
        units[K] = 0;
        return;
    }
    uint32_t cnt = bend[k] - bstart[k];
    uint32_t nu = (k % nb == 0 || cnt == 0) ? 0 : (cnt + L - 1) / L;
    units[k] = nu;
    if (nu > 1) atomicMax(umax, nu);
}

// Unit descriptors, and (length, unit) pairs for sorting units by length: one thread
// per unit, which finds its bucket in uoff (the buckets' first units, nondecreasing;
// uoff[K] = U). A thread per bucket would write a heavy bucket's units in one serial
// loop, and a witness's bucket of ones is split into hundreds of thousands of them.
__global__ void k_fill(const uint32_t* __restrict__ bstart, const uint32_t* __restrict__ bend,
                       const uint32_t* __restrict__ uoff, uint32_t K, uint32_t U, uint32_t L,
                       unit_desc* desc, uint32_t* ulen, uint32_t* uorder) {
    uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= U) return;
    uint32_t lo = 0, hi = K;  // the last k with uoff[k] <= u: uoff[lo] <= u < uoff[hi]
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (uoff[mid] <= u) lo = mid;
        else hi = mid;
    }
    const uint32_t k = lo, j = u - uoff[k];
    const uint32_t st = bstart[k] + j * L, cnt = bend[k] - st;
    const uint32_t len = cnt < L ? cnt : L;
    desc[u] = unit_desc{st, len, k};
    ulen[u] = L - len;  // ascending sort = longest first
    uorder[u] = u;
}

// The accumulation per curve: its blocks of 128 per SM (the register bound) and its
// field operations. G1 takes at least 3: over 170 registers would leave 2 blocks (8
// warps) instead of 3 on an SM; the forms measured needed 158-174 (4 and 5 spilled and
// ran slower, 2026-12-03). Its sums are lazily reduced inside the loop (fe_lazy) and
// reduced once at the end (reducing every product: G1 2^24 119.9 -> 124.5 ms).
template <class C>
struct acc_traits;
template <>
struct acc_traits<g1_curve> {
    static constexpr int min_blocks = 3;
    typedef fe_lazy ops;
};
template <>
struct acc_traits<g2_curve> {
    static constexpr int min_blocks = 1;
    typedef fe_reduced ops;
};

// One thread per unit, taken in order of decreasing length (order), so a warp's
// threads loop about equally long; the sum goes to partials[unit].
template <class F, int MINB, class OPS>
__global__ void __launch_bounds__(128, MINB)
    k_accumulate(const unit_desc* __restrict__ desc, const uint32_t* __restrict__ order, uint32_t U,
                 const uint32_t* __restrict__ vals, const affine_t<F>* __restrict__ bases,
                 xyzz_t<F>* __restrict__ partials) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= U) return;
    uint32_t u = order[i];
    unit_desc d = desc[u];
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (uint32_t j = 0; j < d.len; j++) {
        uint32_t v = vals[d.start + j];
        affine_t<F> p = bases[v & ~kNegBit];
        if (aff_is_inf(p)) continue;
        if (v & kNegBit) fe_neg(p.y, p.y);
        xyzz_add_affine<F, OPS>(acc, p.x, p.y);
    }
    if constexpr (std::is_same<OPS, fe_lazy>::value) {
        lz_norm(acc.x);
        lz_norm(acc.y);
        lz_norm(acc.zz);
        lz_norm(acc.zzz);
    }
    partials[u] = acc;
}

// The point operations take their operands from registers or the thread's own stack,
// never as references into global memory: G2's operations are calls, and with the
// carry-chain product a call given a global reference read out of bounds (H200,
// compute-sanitizer: "Invalid __local__ read" in k_merge's xyzz_add).
//
// Round r of the per-bucket tree over unit sums: a bucket's len units stand as
// cur = ceil(len / 2^r) sums, and unit j < cur - nxt (nxt = ceil(len / 2^(r+1))) adds
// in unit j + nxt. The units that add are the first of their bucket, so a heavy
// bucket's warps are either all busy or all done: pairing units j and j + 2^r instead
// left every warp of the bucket of ones busy in each of the first five rounds for one
// addition in 2^(r+1) lanes. After the rounds, a bucket's first unit holds its sum.
template <class F>
__global__ void k_tree(const unit_desc* __restrict__ desc, const uint32_t* __restrict__ uoff, uint32_t U,
                       uint32_t r, xyzz_t<F>* partials) {
    uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= U) return;
    const uint32_t k = desc[u].bucket, u0 = uoff[k], j = u - u0, len = uoff[k + 1] - u0;
    const uint32_t cur = (uint32_t)(((uint64_t)len + (1ull << r) - 1) >> r);
    const uint32_t nxt = (cur + 1) / 2;  // ceil(ceil(len / 2^r) / 2) = ceil(len / 2^(r+1))
    if (j >= cur - nxt) return;
    xyzz_t<F> a = partials[u];
    const xyzz_t<F> b = partials[u + nxt];
    xyzz_add(a, b);
    partials[u] = a;
}

template <class F>
__global__ void k_merge(const uint32_t* __restrict__ uoff, uint32_t K, const xyzz_t<F>* __restrict__ partials,
                        xyzz_t<F>* buckets) {
    uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    uint32_t u0 = uoff[k];
    if (u0 == uoff[k + 1]) return;
    xyzz_t<F> acc = buckets[k];
    const xyzz_t<F> p = partials[u0];
    xyzz_add(acc, p);
    buckets[k] = acc;
}

// Segment j of window w covers buckets [lo, lo+S): sum_b b*B_b = sum_b (b-lo+1)*B_b + (lo-1)*sum_b B_b.
template <class F>
__global__ void k_segments(const xyzz_t<F>* __restrict__ buckets, int nwin, uint32_t nb, uint32_t S, uint32_t P,
                           xyzz_t<F>* __restrict__ segs) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (uint32_t)nwin * P) return;
    uint32_t w = t / P, j = t % P;
    uint32_t lo = 1 + j * S, hi = lo + S;
    const xyzz_t<F>* B = buckets + (size_t)w * nb;
    xyzz_t<F> run, acc;
    xyzz_set_inf(run);
    xyzz_set_inf(acc);
    for (uint32_t b = hi; b-- > lo;) {
        const xyzz_t<F> p = B[b];
        xyzz_add(run, p);
        xyzz_add(acc, run);
    }
    if (lo > 1 && !xyzz_is_inf(run)) {
        xyzz_t<F> m;
        xyzz_mul_small(m, run, lo - 1);
        xyzz_add(acc, m);
    }
    segs[t] = acc;
}

template <class F>
__global__ void k_pairsum(const xyzz_t<F>* __restrict__ in, xyzz_t<F>* __restrict__ out, int nwin, uint32_t P) {
    uint32_t h = P / 2;
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (uint32_t)nwin * h) return;
    uint32_t w = t / h, i = t % h;
    xyzz_t<F> a = in[(size_t)w * P + 2 * i];
    const xyzz_t<F> b = in[(size_t)w * P + 2 * i + 1];
    xyzz_add(a, b);
    out[(size_t)w * h + i] = a;
}

inline uint32_t blocks(size_t n, uint32_t tpb) { return (uint32_t)((n + tpb - 1) / tpb); }

// MSMs of at least this many points (one vector) take their window from the scalars'
// bit lengths; smaller ones keep the table's.
constexpr size_t kDensityMin = (size_t)1 << 16;

constexpr int kMaxCopies = 16;

// Fixed-base precomputation: copy k of point i (at tbl[k*count + i]) becomes
// 2^(c*k) * P_i, k = 1..f-1, from copy 0. Each thread doubles its point c times per
// copy in XYZZ and normalises all its copies with one inversion (Montgomery's trick
// over the f-1 values ZZ*ZZZ), so an inversion costs a few products per copy.
template <class F>
__global__ void k_precompute(affine_t<F>* tbl, uint32_t count, int c, int f) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const affine_t<F> p = tbl[i];
    if (aff_is_inf(p)) {
        for (int k = 1; k < f; k++) tbl[(size_t)k * count + i] = p;
        return;
    }
    F zz[kMaxCopies], zzz[kMaxCopies], pre[kMaxCopies];
    xyzz_t<F> q;
    q.x = p.x;
    q.y = p.y;
    fe_one(q.zz);
    fe_one(q.zzz);
    fe_one(pre[0]);
    for (int k = 1; k < f; k++) {
        for (int s = 0; s < c; s++) xyzz_dbl(q, q);
        // X and Y wait in the copy's slot until the inversion below.
        tbl[(size_t)k * count + i] = affine_t<F>{q.x, q.y};
        zz[k] = q.zz;
        zzz[k] = q.zzz;
        F z;
        fe_mul(z, q.zz, q.zzz);
        fe_mul(pre[k], pre[k - 1], z);
    }
    F inv;
    fe_inv(inv, pre[f - 1]);  // 1 / (z_1 ... z_{f-1})
    for (int k = f - 1; k >= 1; k--) {
        F zi, t;
        fe_mul(zi, inv, pre[k - 1]);  // 1 / z_k
        fe_mul(t, zz[k], zzz[k]);
        fe_mul(inv, inv, t);          // 1 / (z_1 ... z_{k-1})
        affine_t<F> a = tbl[(size_t)k * count + i];
        fe_mul(t, zi, zzz[k]);        // 1 / ZZ
        fe_mul(a.x, a.x, t);
        fe_mul(t, zi, zz[k]);         // 1 / ZZZ
        fe_mul(a.y, a.y, t);
        tbl[(size_t)k * count + i] = a;
    }
}

template <class C>
int run_precompute(cuzk_stream* s, cuzk_bases* b, int maxf, size_t reserve_bytes) {
    typedef typename C::field F;
    if (!b->d) return fail(CUZK_ERR_ARG, "precomputation needs a resident base set");
    if (b->pc_f) return CUZK_OK;
    if (maxf < 2 || b->count == 0) return CUZK_OK;
    maxf = std::min(maxf, kMaxCopies);
    int c = 0, f = 0;
    msm_precompute_shape(b->count, C::group == 2, maxf, &c, &f);
    if (f < 2) return CUZK_OK;
    if ((size_t)(f - 1) * b->count + b->count >= (1ull << 31)) return fail(CUZK_ERR_ARG, "base set too large to precompute");
    const size_t bytes = b->count * b->elem;
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot));
    // The new table is allocated before the old copy is freed.
    if (bytes * f + reserve_bytes > fr) return fail(CUZK_ERR_NOMEM, "precomputed bases do not fit in device memory");
    void* d = nullptr;
    if (cudaMalloc(&d, bytes * f) != cudaSuccess) {
        cudaGetLastError();
        return fail(CUZK_ERR_NOMEM, "precomputed bases: device allocation failed");
    }
    cudaStream_t st = s->s;
    cudaError_t e = cudaMemcpyAsync(d, b->d, bytes, cudaMemcpyDeviceToDevice, st);
    if (e == cudaSuccess) {
        k_precompute<F><<<blocks(b->count, 64), 64, 0, st>>>((affine_t<F>*)d, (uint32_t)b->count, c, f);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        cudaFree(d);
        return fail(CUZK_ERR_CUDA, std::string("precomputing bases: ") + cudaGetErrorString(e));
    }
    cudaFree(b->d);
    b->d = d;
    b->pc_c = c;
    b->pc_f = f;
    return CUZK_OK;
}


// With CUZK_MSM_PROFILE=1 in the environment each MSM prints one line to stderr with
// the device time of each stage (CUDA events, summed over chunks). Diagnostics only.
struct stage_timer {
    enum { kDigits, kSort, kUnits, kAccumulate, kMerge, kReduce, kStages };
    bool on = false;
    cudaStream_t st;
    cudaEvent_t ev[kStages + 1];
    float ms[kStages] = {};
    explicit stage_timer(cudaStream_t s) : st(s) {
        const char* e = getenv("CUZK_MSM_PROFILE");
        on = e && e[0] == '1';
        if (!on) return;
        for (auto& x : ev) cudaEventCreate(&x);
    }
    ~stage_timer() {
        if (on)
            for (auto& x : ev) cudaEventDestroy(x);
    }
    void start() {
        if (on) cudaEventRecord(ev[0], st);
    }
    void mark(int stage) {  // the stage that just ended
        if (!on) return;
        cudaEventRecord(ev[stage + 1], st);
        cudaEventSynchronize(ev[stage + 1]);
        float t = 0;
        cudaEventElapsedTime(&t, ev[0], ev[stage + 1]);
        ms[stage] += t;
        cudaEventRecord(ev[0], st);
    }
    void print(const char* group, size_t n, int c, int nwin) {
        if (!on) return;
        float tot = 0;
        for (float x : ms) tot += x;
        fprintf(stderr,
                "msm-profile %s n=%zu c=%d windows=%d digits=%.2fms sort=%.2fms units=%.2fms accumulate=%.2fms "
                "merge=%.2fms reduce=%.2fms sum=%.2fms\n",
                group, n, c, nwin, ms[kDigits], ms[kSort], ms[kUnits], ms[kAccumulate], ms[kMerge], ms[kReduce], tot);
    }
};

// nbatch scalar vectors over the same bases (vector j at scalars + j*stride): their
// digits share one sort, one accumulation and one reduction, so a batch of small MSMs
// fills the device as one large MSM does. out receives nbatch*nwin window sums.
template <class C>
int run_msm(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
            size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin_out, int* c_out) {
    typedef typename C::field F;
    typedef xyzz_t<F> X;
    typedef affine_t<F> A;
    cudaStream_t st = s->s;
    if (n == 0) {
        *nwin_out = 0;
        *c_out = 0;
        return CUZK_OK;
    }
    int nwin;
    int c = msm_choose_c(n, C::group == 2, nbatch, &nwin);
    int pcf = bases->d ? bases->pc_f : 0;
    // The stream's knob forces the window size (cuzk_stream_set_knobs; a precomputed
    // set keeps the width its copies were made for, unless its first copy at the
    // density window models cheaper).
    const int force = C::group == 2 ? s->knobs.msm_c_g2 : s->knobs.msm_c_g1;
    if (pcf) {
        c = bases->pc_c;
        nwin = msm_windows(c);
    } else if (force) {
        c = force;
        nwin = msm_windows(c);
    }
    if (nbatch == 1 && n >= kDensityMin && (pcf || !force)) {
        // The scalars' bit lengths choose the window and the windows run
        // (msm_density_c, msm_density_over_copies): one pass over them and 2 KiB
        // back, against an MSM of at least kDensityMin points.
        RET(s->bitlen.ensure(256 * 8));
        CK(cudaMemsetAsync(s->bitlen.p, 0, 256 * 8, st));
        const uint32_t g = (uint32_t)std::min<size_t>(blocks(n, 256), (size_t)std::max(s->sm_count, 1) * 8);
        k_bitlen<<<g, 256, 0, st>>>(scalars, index, (uint32_t)n, s->bitlen.as<unsigned long long>());
        CK(cudaGetLastError());
        uint64_t hist[256];
        CK(cudaMemcpyAsync(hist, s->bitlen.p, sizeof hist, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        if (!pcf) {
            c = msm_density_c(hist, C::group == 2, &nwin);
        } else if (msm_density_over_copies(hist, C::group == 2, c, pcf, &c, &nwin)) {
            pcf = 0;  // copy 0 of the set is its original points
        }
        if (nwin == 0) {  // every scalar is zero
            *nwin_out = 0;
            *c_out = 0;
            return CUZK_OK;
        }
    }
    const uint32_t nb = (1u << (c - 1)) + 1;  // buckets 0..2^(c-1) per window; 0 is skipped
    // Bucket sets: one per (vector, window), or per (vector, window group) when
    // precomputed copies let a group of windows share buckets.
    const int ngroups = pcf ? (nwin + pcf - 1) / pcf : nwin;
    const uint32_t nsets = (uint32_t)ngroups * nbatch;
    const uint32_t nentries = (uint32_t)nwin * nbatch;  // digits per point
    if ((uint64_t)nsets * nb >= (1ull << 31)) return fail(CUZK_ERR_ARG, "MSM batch too large");
    const uint32_t K = nsets * nb;
    int end_bit = 1;
    while ((1ull << end_bit) < K) end_bit++;

    // A chunk's digit pairs of all vectors together stay within 2^24 points' worth.
    size_t chunk = s->msm_chunk ? s->msm_chunk : std::max<size_t>(1, ((size_t)1 << 24) / nbatch);
    // Streamed bases come in chunks of at most 2^22 points' worth: each chunk's copy
    // runs beside the previous chunk's compute, so only the first one is exposed.
    const bool streamed = !bases->d;
    if (streamed && !s->msm_chunk) chunk = std::min(chunk, std::max<size_t>(1, ((size_t)1 << 22) / nbatch));
    if (chunk > n) chunk = n;
    const size_t m_max = chunk * nentries;
    if (m_max >= (1ull << 31)) return fail(CUZK_ERR_ARG, "MSM chunk too large");

    RET(s->keys.ensure(m_max * 4));
    RET(s->vals.ensure(m_max * 4));
    RET(s->keys_alt.ensure(m_max * 4));
    RET(s->vals_alt.ensure(m_max * 4));
    RET(s->bstart.ensure((size_t)K * 4));
    RET(s->bend.ensure((size_t)K * 4));
    RET(s->units.ensure((size_t)(K + 1) * 4));
    RET(s->uoff.ensure((size_t)(K + 1) * 4));
    RET(s->buckets.ensure((size_t)K * sizeof(X)));
    RET(s->counts.ensure(8));
    if (streamed) {
        RET(s->bases_chunk.ensure(chunk * sizeof(A)));
        RET(s->bases_chunk2.ensure(chunk * sizeof(A)));
        RET(stream_copy_engine(s));
    }
    // issue_copy starts chunk i's copy (points cs..) into buffer i%2 on the copy stream,
    // once the compute that last read that buffer is done.
    auto issue_copy = [&](size_t i, size_t cs) -> int {
        const int b = (int)(i & 1);
        const size_t cn = std::min(chunk, n - cs);
        CK(cudaStreamWaitEvent(s->copy, s->freed[b], 0));
        CK(cudaMemcpyAsync((b ? s->bases_chunk2 : s->bases_chunk).p,
                           (const uint8_t*)bases->host + (base_offset + cs) * sizeof(A), cn * sizeof(A),
                           cudaMemcpyHostToDevice, s->copy));
        CK(cudaEventRecord(s->copied[b], s->copy));
        return CUZK_OK;
    };

    size_t sort_bytes = 0, scan_bytes = 0;
    {
        cub::DoubleBuffer<uint32_t> dk(s->keys.as<uint32_t>(), s->keys_alt.as<uint32_t>());
        cub::DoubleBuffer<uint32_t> dv(s->vals.as<uint32_t>(), s->vals_alt.as<uint32_t>());
        CK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, dk, dv, (int)m_max, 0, end_bit, st));
        CK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, s->units.as<uint32_t>(), s->uoff.as<uint32_t>(),
                                         (int)(K + 1), st));
    }
    RET(s->sort_tmp.ensure(std::max(sort_bytes, scan_bytes)));
    CK(cudaMemsetAsync(s->buckets.p, 0, (size_t)K * sizeof(X), st));

    stage_timer prof(st);
    prof.start();
    const uint32_t T = 256;
    if (streamed && n > 0) RET(issue_copy(0, 0));
    for (size_t cs = 0, ci = 0; cs < n; cs += chunk, ci++) {
        uint32_t cn = (uint32_t)std::min(chunk, n - cs);
        const A* pts;
        if (!streamed) {
            pts = (const A*)bases->d + base_offset + cs;
        } else {
            CK(cudaStreamWaitEvent(st, s->copied[ci & 1], 0));
            pts = (ci & 1 ? s->bases_chunk2 : s->bases_chunk).as<A>();
            if (cs + chunk < n) RET(issue_copy(ci + 1, cs + chunk));
        }
        const fr_t* sc = index ? scalars : scalars + cs;
        const uint32_t* ix = index ? index + cs : nullptr;
        uint32_t* count = s->counts.as<uint32_t>() + 1;
        CK(cudaMemsetAsync(count, 0, 4, st));
        k_digits<<<dim3(blocks(cn, T), nbatch), T, 0, st>>>(sc, ix, cn, stride,
                                                             digit_params{c, nwin, pcf, nb, (uint32_t)bases->count},
                                                             s->keys.as<uint32_t>(), s->vals.as<uint32_t>(), count);
        CK(cudaGetLastError());
        uint32_t m = 0;  // entries written: at most cn * nentries
        CK(cudaMemcpyAsync(&m, count, 4, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        prof.mark(stage_timer::kDigits);
        if (m == 0) continue;  // every scalar of the chunk is zero

        cub::DoubleBuffer<uint32_t> dk(s->keys.as<uint32_t>(), s->keys_alt.as<uint32_t>());
        cub::DoubleBuffer<uint32_t> dv(s->vals.as<uint32_t>(), s->vals_alt.as<uint32_t>());
        size_t tb = s->sort_tmp.bytes;
        CK(cub::DeviceRadixSort::SortPairs(s->sort_tmp.p, tb, dk, dv, (int)m, 0, end_bit, st));
        prof.mark(stage_timer::kSort);

        CK(cudaMemsetAsync(s->bstart.p, 0, (size_t)K * 4, st));
        CK(cudaMemsetAsync(s->bend.p, 0, (size_t)K * 4, st));
        k_bounds<<<blocks(m, T), T, 0, st>>>(dk.Current(), m, s->bstart.as<uint32_t>(), s->bend.as<uint32_t>());
        CK(cudaGetLastError());

        // Unit length: about twice the mean bucket load over every digit, zero or not
        // (all), so a typical bucket is one unit and a heavy one becomes many (summed by
        // the tree below); shorter when the m digits written would leave fewer units
        // than the device runs threads at once, since then each thread's serial chain
        // of additions sets the time. A witness puts its ones into one bucket: split by
        // a length from all, that bucket's few long units left the device mostly idle.
        // docs/lab/BENCHMARKS.md has the measurements behind both counts.
        const size_t all = (size_t)cn * nentries;
        uint32_t L = std::max<uint32_t>(8, (uint32_t)(2 * all / ((size_t)nsets * (nb - 1))));
        const size_t busy = (size_t)std::max(s->sm_count, 1) * 1024;
        L = std::min<uint32_t>(L, (uint32_t)std::max<size_t>(4, (m + busy - 1) / busy));
        CK(cudaMemsetAsync(s->counts.p, 0, 4, st));
        k_units<<<blocks(K + 1, T), T, 0, st>>>(s->bstart.as<uint32_t>(), s->bend.as<uint32_t>(), K, nb, L,
                                                 s->units.as<uint32_t>(), s->counts.as<uint32_t>());
        CK(cudaGetLastError());
        tb = s->sort_tmp.bytes;
        CK(cub::DeviceScan::ExclusiveSum(s->sort_tmp.p, tb, s->units.as<uint32_t>(), s->uoff.as<uint32_t>(),
                                         (int)(K + 1), st));
        uint32_t U = 0, umax = 0;
        CK(cudaMemcpyAsync(&U, s->uoff.as<uint32_t>() + K, 4, cudaMemcpyDeviceToHost, st));
        CK(cudaMemcpyAsync(&umax, s->counts.p, 4, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        if (U == 0) continue;
        RET(s->desc.ensure((size_t)U * sizeof(unit_desc)));
        RET(s->partials.ensure((size_t)U * sizeof(X)));
        RET(s->ulen.ensure((size_t)U * 4));
        RET(s->uorder.ensure((size_t)U * 4));
        RET(s->ulen_alt.ensure((size_t)U * 4));
        RET(s->uorder_alt.ensure((size_t)U * 4));
        k_fill<<<blocks(U, T), T, 0, st>>>(s->bstart.as<uint32_t>(), s->bend.as<uint32_t>(), s->uoff.as<uint32_t>(),
                                           K, U, L, s->desc.as<unit_desc>(), s->ulen.as<uint32_t>(),
                                           s->uorder.as<uint32_t>());
        CK(cudaGetLastError());
        int len_bits = 1;
        while ((1u << len_bits) <= L) len_bits++;
        cub::DoubleBuffer<uint32_t> ul(s->ulen.as<uint32_t>(), s->ulen_alt.as<uint32_t>());
        cub::DoubleBuffer<uint32_t> uo(s->uorder.as<uint32_t>(), s->uorder_alt.as<uint32_t>());
        size_t ub = 0;
        CK(cub::DeviceRadixSort::SortPairs(nullptr, ub, ul, uo, (int)U, 0, len_bits, st));
        RET(s->sort_tmp.ensure(ub));
        tb = s->sort_tmp.bytes;
        CK(cub::DeviceRadixSort::SortPairs(s->sort_tmp.p, tb, ul, uo, (int)U, 0, len_bits, st));
        prof.mark(stage_timer::kUnits);
        k_accumulate<F, acc_traits<C>::min_blocks, typename acc_traits<C>::ops>
            <<<blocks(U, 128), 128, 0, st>>>(s->desc.as<unit_desc>(), uo.Current(), U, dv.Current(), pts,
                                             s->partials.as<X>());
        CK(cudaGetLastError());
        if (streamed) CK(cudaEventRecord(s->freed[ci & 1], st));
        prof.mark(stage_timer::kAccumulate);
        for (uint32_t r = 0; ((uint64_t)1 << r) < umax; r++) {
            k_tree<F><<<blocks(U, 128), 128, 0, st>>>(s->desc.as<unit_desc>(), s->uoff.as<uint32_t>(), U, r,
                                                      s->partials.as<X>());
            CK(cudaGetLastError());
        }
        k_merge<F><<<blocks(K, 128), 128, 0, st>>>(s->uoff.as<uint32_t>(), K, s->partials.as<X>(), s->buckets.as<X>());
        CK(cudaGetLastError());
        prof.mark(stage_timer::kMerge);
    }

    // Buckets per reduction segment: 32, or fewer (down to 4) when the windows hold too
    // few buckets to give every SM work (small MSMs): each segment is a serial chain.
    const uint32_t half = nb - 1;
    uint32_t S = 32;
    while (S > 4 && (size_t)nsets * half / S < (size_t)std::max(s->sm_count, 1) * 64) S /= 2;
    S = std::min(S, half);
    uint32_t P = half / S;
    RET(s->segs.ensure((size_t)nsets * P * sizeof(X)));
    RET(s->segs2.ensure((size_t)nsets * P * sizeof(X)));
    k_segments<F><<<blocks((size_t)nsets * P, 64), 64, 0, st>>>(s->buckets.as<X>(), (int)nsets, nb, S, P, s->segs.as<X>());
    CK(cudaGetLastError());
    X* a = s->segs.as<X>();
    X* b = s->segs2.as<X>();
    while (P > 1) {
        k_pairsum<F><<<blocks((size_t)nsets * (P / 2), 64), 64, 0, st>>>(a, b, (int)nsets, P);
        CK(cudaGetLastError());
        std::swap(a, b);
        P /= 2;
    }
    CK(cudaMemcpyAsync(out, a, (size_t)nsets * sizeof(X), cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    prof.mark(stage_timer::kReduce);
    prof.print(C::name, n, c, nwin);
    // The host folds sum_g 2^(c_out*g) * S_g: with precomputed copies a group spans
    // pcf windows.
    *nwin_out = ngroups;
    *c_out = pcf ? c * pcf : c;
    return CUZK_OK;
}


}  // namespace
}  // namespace msm

