// ntt.cu: radix-2 NTT over Fr with several stages fused per pass in shared memory,
// and Groth16's H = (a*b - c)/(x^n - 1) on the coset, as gnark's computeH does it:
//   a, b, c: inverse DIF (natural -> bit-reversed coefficients), scale by
//   coset^rev(i)/n, DIT (bit-reversed -> natural evaluations on the coset);
//   a = (a*b - c)*den; inverse DIF; scale by coset^-rev(i)/n. h is left bit-reversed.
#include <algorithm>
#include <cstdlib>
#include "bls12_381.cuh"
#include "runtime.cuh"

namespace {

constexpr int kMaxFused = 10;  // 2^10 elements * 32 B = 32 KiB of shared memory per block
// Twiddles staged in shared memory: 2^24 forward NTT 8.80 -> 7.74 ms, 2^22 2.03 -> 1.85 ms
// (H200, same run; docs/BENCHMARKS.md).
constexpr bool kNttSharedTwiddles = true;

// The products of the stage of half-size 1 skipped (its twiddles are all 1);
// -DCUZK_NTT_MUL_UNIT multiplies them as before (A/B runs).
#if defined(CUZK_NTT_MUL_UNIT)
constexpr bool kNttSkipUnit = false;
#else
constexpr bool kNttSkipUnit = true;
#endif

inline uint32_t blocks(size_t n, uint32_t tpb) { return (uint32_t)((n + tpb - 1) / tpb); }

__device__ __forceinline__ uint32_t bitrev(uint32_t i, int log_n) { return log_n ? __brev(i) >> (32 - log_n) : 0; }

// One element global -> shared without registers (two 16-byte cp.async, L1 bypassed:
// each element is read once a pass). Elements are 16-byte aligned (field.cuh).
__device__ __forceinline__ void copy_async(fr_t* dst, const fr_t* src) {
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile(
        "cp.async.cg.shared.global [%0], [%1], 16;\n\t"
        "cp.async.cg.shared.global [%2], [%3], 16;\n" ::"r"(d),
        "l"(src), "r"(d + 16), "l"(reinterpret_cast<const char*>(src) + 16)
        : "memory");
}

__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// One pass of K stages on groups of 2^K elements spaced hs = 2^hs_log apart. DIF runs the
// group's stages from the largest half-size down, DIT from the smallest up.
// blockIdx.y selects one of several vectors vstride elements apart (a batch).
// SHTW: the block first copies the 2^K - 1 twiddles its stages use into shared memory
// (stage with half-size hl at [hl - 1, 2hl - 1)), together with its elements, so no
// stage waits on a global load after a barrier.
// DIT and DIF are separate kernels: one path's registers each (56 instead of 60 for
// both: 9 blocks an SM instead of 8).
// ASYNC: the block's elements and twiddles arrive by cp.async, all issued before one
// wait, instead of a load and a shared store each: the plain loop waits for each load
// in turn (2 elements and 2 twiddles a thread), the pass's largest stall (long
// scoreboard at the stores, 12% of its samples). ntt_core picks it per pass.
template <bool SHTW, bool DIT, bool ASYNC>
__global__ void k_ntt_pass(fr_t* __restrict__ a, size_t vstride, int log_n, int hs_log, int K,
                           const fr_t* __restrict__ tw, bool wsync) {
    extern __shared__ fr_t sh[];
    a += blockIdx.y * vstride;
    const uint32_t hs = 1u << hs_log;
    const uint32_t g = blockIdx.x;
    const uint32_t blk = g >> hs_log, r = g & (hs - 1);
    const size_t base = ((size_t)blk << (hs_log + K)) + r;
    const uint32_t half = 1u << (K - 1);
    fr_t* tws = sh + (1u << K);
    for (uint32_t j = threadIdx.x; j < (1u << K); j += blockDim.x) {
        if (ASYNC)
            copy_async(&sh[j], &a[base + ((size_t)j << hs_log)]);
        else
            sh[j] = a[base + ((size_t)j << hs_log)];
    }
    if (SHTW) {
        for (uint32_t x = threadIdx.x; x < (1u << K) - 1; x += blockDim.x) {
            const int hl_log = 31 - __clz(x + 1);
            const uint32_t jo = x + 1 - (1u << hl_log);
            const fr_t* src = &tw[(r + (jo << hs_log)) << (log_n - 1 - hl_log - hs_log)];
            if (ASYNC)
                copy_async(&tws[x], src);
            else
                tws[x] = *src;
        }
    }
    if (ASYNC) copy_async_wait();
    __syncthreads();
    for (int s = 0; s < K; s++) {
        int hl_log = DIT ? s : K - 1 - s;
        uint32_t hl = 1u << hl_log;
        // The transform's stage of half-size 1 multiplies by omega^0 = 1 only: no
        // product (1/log_n of the transform's products; the branch is uniform).
        const bool unit = kNttSkipUnit && hs_log == 0 && hl_log == 0;
        for (uint32_t t = threadIdx.x; t < half; t += blockDim.x) {
            uint32_t jo = t & (hl - 1);
            uint32_t j0 = ((t >> hl_log) << (hl_log + 1)) + jo, j1 = j0 + hl;
            // twiddle exponent: (offset in the global 2h block) * n / (2h), h = hl*hs
            fr_t w;
            if (SHTW) {
                w = tws[hl - 1 + jo];
            } else {
                uint32_t e = (r + (jo << hs_log)) << (log_n - 1 - hl_log - hs_log);
                w = tw[e];
            }
            fr_t x = sh[j0], y = sh[j1];
            if (DIT) {
                if (!unit) fe_mul(y, y, w);
                fe_add(sh[j0], x, y);
                fe_sub(sh[j1], x, y);
            } else {
                fr_t d;
                fe_sub(d, x, y);
                fe_add(sh[j0], x, y);
                if (unit) sh[j1] = d;
                else fe_mul(sh[j1], d, w);
            }
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
    for (uint32_t j = threadIdx.x; j < (1u << K); j += blockDim.x) a[base + ((size_t)j << hs_log)] = sh[j];
}

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

// CUZK_NTT_SHTW=0 or 1 picks the twiddle source of k_ntt_pass (diagnostics: A/B in one
// run); the default is the measured faster one.
bool ntt_shared_twiddles() {
    const char* e = getenv("CUZK_NTT_SHTW");
    return e ? e[0] == '1' : kNttSharedTwiddles;
}

// Which passes load by cp.async (k_ntt_pass's ASYNC). Measured per pass at 2^24 (H200,
// ncu; docs/BENCHMARKS.md): the passes of half-size step 2^8 and 1 take 1.43 -> 1.38
// and 1.25 -> 1.22 ms with it, the pass of step 2^16 1.46 -> 1.65 ms (its twiddles and
// elements come from all over device memory, and cp.async's 16-byte requests are 19%
// more L2 requests than the loads'); at 2^22, with steps 2^15, 2^8 and 1, all three
// passes copying asynchronously was fastest (0.97 -> 0.93 ms). So by default passes of
// step below 2^16 copy asynchronously; CUZK_NTT_ASYNC=0 or 1 makes it none or all
// (A/B runs, tests).
bool ntt_async_pass(int hs_log) {
    const char* e = getenv("CUZK_NTT_ASYNC");
    if (e && (e[0] == '0' || e[0] == '1')) return e[0] == '1';
    return hs_log < 16;
}

// CUZK_NTT_WARPSYNC=0 keeps a block barrier between every two stages (A/B runs, tests).
bool ntt_warp_sync() {
    const char* e = getenv("CUZK_NTT_WARPSYNC");
    return !(e && e[0] == '0');
}

typedef void (*ntt_pass_fn)(fr_t*, size_t, int, int, int, const fr_t*, bool);

template <bool ASYNC>
ntt_pass_fn ntt_pass_kernel_of(bool dit, bool shtw) {
    if (dit) return shtw ? k_ntt_pass<true, true, ASYNC> : k_ntt_pass<false, true, ASYNC>;
    return shtw ? k_ntt_pass<true, false, ASYNC> : k_ntt_pass<false, false, ASYNC>;
}

ntt_pass_fn ntt_pass_kernel(bool dit, bool shtw, bool async) {
    return async ? ntt_pass_kernel_of<true>(dit, shtw) : ntt_pass_kernel_of<false>(dit, shtw);
}

// Room for a pass's elements and its twiddles, set once per device for every form of
// the pass that stage twiddles.
cudaError_t ntt_set_shared_limits() {
    const int bytes = (int)(sizeof(fr_t) << (kMaxFused + 1));
    for (bool dit : {false, true}) {
        for (bool async : {false, true}) {
            cudaError_t e = cudaFuncSetAttribute(ntt_pass_kernel(dit, true, async),
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
            if (e != cudaSuccess) return e;
        }
    }
    return cudaSuccess;
}

// NTT of count vectors, vector j at a + j*vstride, each pass launched once for all.
int ntt_core(cudaStream_t st, const cuzk_domain* d, fr_t* a, bool inverse, bool dit, int count = 1,
             size_t vstride = 0) {
    const int log_n = d->log_n;
    if (log_n == 0) return CUZK_OK;
    const fr_t* tw = (const fr_t*)(inverse ? d->tw_inv : d->tw);
    const bool shtw = ntt_shared_twiddles(), wsync = ntt_warp_sync();
    int passes = (log_n + kMaxFused - 1) / kMaxFused;
    int done = 0;  // stages done so far
    for (int p = 0; p < passes; p++) {
        int K = (log_n - done) / (passes - p);
        // DIT: smallest half-sizes first (hs = 2^done); DIF: largest first.
        int hs_log = dit ? done : log_n - done - K;
        const ntt_pass_fn pass = ntt_pass_kernel(dit, shtw, ntt_async_pass(hs_log));
        dim3 groups(1u << (log_n - K), count);
        uint32_t threads = std::min<uint32_t>(1u << (K - 1), 256);
        pass<<<groups, threads, sizeof(fr_t) << (shtw ? K + 1 : K), st>>>(a, vstride, log_n, hs_log, K, tw, wsync);
        CK(cudaGetLastError());
        done += K;
    }
    return CUZK_OK;
}

}  // namespace

extern "C" int cuzk_domain_create(cuzk_stream* s, int log_n, const cuzk_domain_consts_t* k, cuzk_domain** out) {
    if (!s || !k || !out) return fail(CUZK_ERR_ARG, "NULL argument");
    if (log_n < 0 || log_n > 31) return fail(CUZK_ERR_ARG, "log_n out of range");
    RET(set_device(s->ctx));
    cuzk_domain* d = new cuzk_domain();
    d->ctx = s->ctx;
    d->gen = s->ctx->gen;
    d->log_n = log_n;
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
    cudaError_t e = cudaMalloc(&d->tw, nh * sizeof(fr_t));
    if (e == cudaSuccess) e = cudaMalloc(&d->tw_inv, nh * sizeof(fr_t));
    if (e == cudaSuccess) e = cudaMalloc(&d->coset_br, n * sizeof(fr_t));
    if (e == cudaSuccess) e = cudaMalloc(&d->coset_inv_br, n * sizeof(fr_t));
    if (e != cudaSuccess) {
        cuzk_domain_destroy(d);
        return fail(CUZK_ERR_NOMEM, std::string("domain tables: ") + cudaGetErrorString(e));
    }
    k_pow_table<<<blocks(nh, 256), 256, 0, st>>>((fr_t*)d->tw, nh, to_fr(k->omega), 0, one);
    k_pow_table<<<blocks(nh, 256), 256, 0, st>>>((fr_t*)d->tw_inv, nh, to_fr(k->omega_inv), 0, one);
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
