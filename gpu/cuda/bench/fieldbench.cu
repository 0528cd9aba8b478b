// fieldbench.cu: throughput of the field product, of the bucket accumulation's mixed
// addition and of the NTT's butterflies, alone, on the device. It separates the
// arithmetic from the MSM's and the NTT's memory traffic and scheduling: if a kernel
// here runs much faster per operation than the MSM's accumulation or an NTT pass, that
// kernel loses time outside the arithmetic.
//
//   nvcc -O3 -std=c++17 --expt-relaxed-constexpr -arch=sm_90a -I.. fieldbench.cu -o fb
// It prints one line per kernel and a checksum of every output: a change to the field
// arithmetic must keep the checksums (the library's product is checked against
// gnark-crypto by its tests).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CUZK_POINT_FN __forceinline__
#include "ff/bls12_381.cuh"
#include "ec/xyzz.cuh"

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

// ILP independent chains per thread: x_k <- x_k * y, or x_k <- x_k^2 (SQR).
template <class F, int ILP, bool SQR = false>
__global__ void k_mul(F* out, const F* in, int iters) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    F x[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) x[k] = in[(t * ILP + k) % 4096];
    F y = in[(t + 17) % 4096];
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < ILP; k++) {
            if (SQR) {
                fe_sqr(x[k], x[k]);
            } else {
                fe_mul(x[k], x[k], y);
            }
        }
    }
#pragma unroll
    for (int k = 0; k < ILP; k++) out[t * ILP + k] = x[k];
}

// x_k <- x_k * y by Shoup's product (field.cuh's fe_mul_shoup) with the multiplicand
// y*R^-1 (made from y here), so every product equals the Montgomery product x_k * y
// and the checksum must equal fr_mul's.
template <int ILP>
__global__ void k_mul_shoup(fr_t* out, const fr_t* in, int iters) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    fr_t x[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) x[k] = in[(t * ILP + k) % 4096];
    fe_shoup<fr_params> y;
    fe_shoup_from_mont(y, in[(t + 17) % 4096]);  // w = y*R^-1, whose Montgomery form is y
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < ILP; k++) fe_mul_shoup(x[k], x[k], y);
    }
#pragma unroll
    for (int k = 0; k < ILP; k++) out[t * ILP + k] = x[k];
}

// The radix-2 DIF butterfly (x, y) -> (x + y, (x - y) * w) repeated on ILP independent
// pairs with w in a register: the pass's arithmetic at full occupancy.
template <int ILP>
__global__ void k_bfly(fr_t* out, const fr_t* in, int iters) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    fr_t x[ILP], y[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) {
        x[k] = in[(t * 2 * ILP + 2 * k) % 4096];
        y[k] = in[(t * 2 * ILP + 2 * k + 1) % 4096];
    }
    const fr_t w = in[(t + 1001) % 4096];
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < ILP; k++) {
            fr_t d;
            fe_sub(d, x[k], y[k]);
            fe_add(x[k], x[k], y[k]);
            fe_mul(y[k], d, w);
        }
    }
#pragma unroll
    for (int k = 0; k < ILP; k++) {
        out[t * 2 * ILP + 2 * k] = x[k];
        out[t * 2 * ILP + 2 * k + 1] = y[k];
    }
}

// The NTT's radix-4 DIF unit (ntt.cu's ntt_r4_unit: stages of half-size 2h then h,
// twiddles w2, w3, then w1 twice) on four elements, repeated, to separate the pass's
// arithmetic from its memory and barriers. MODE 0: elements and twiddles stay in
// registers; 1: the elements go through shared memory each round (each thread its own
// four entries, piece by piece as the pass lays them out); 2: as 1 with the block's
// barrier each round (64 threads, as the pass); 3: as 2 with the twiddles read from
// shared memory each round. OPS 0: fully reduced butterflies (fe_*); 1: lazily reduced
// ones (lz_*, values below 2r, reduced once at the end); 2: as 1 with Shoup's product
// (lz_mul_shoup, 64-byte twiddles made from the same Montgomery-form ones). Every mode
// and form computes the same outputs (equal checksums).
template <int OPS>
struct r4_ops {
    typedef fr_t tw;
    static __device__ __forceinline__ void mk(tw& w, const fr_t& m) { w = m; }
    static __device__ __forceinline__ void mul(fr_t& r, const fr_t& a, const tw& w) { fe_mul(r, a, w); }
    static __device__ __forceinline__ void add(fr_t& r, const fr_t& a, const fr_t& b) { fe_add(r, a, b); }
    static __device__ __forceinline__ void sub(fr_t& r, const fr_t& a, const fr_t& b) { fe_sub(r, a, b); }
    static __device__ __forceinline__ void norm(fr_t&) {}
};
template <>
struct r4_ops<1> : r4_ops<0> {
    static __device__ __forceinline__ void mul(fr_t& r, const fr_t& a, const fr_t& w) { lz_mul(r, a, w); }
    static __device__ __forceinline__ void add(fr_t& r, const fr_t& a, const fr_t& b) { lz_add(r, a, b); }
    static __device__ __forceinline__ void sub(fr_t& r, const fr_t& a, const fr_t& b) { lz_sub(r, a, b); }
    static __device__ __forceinline__ void norm(fr_t& a) { lz_norm(a); }
};
template <>
struct r4_ops<2> : r4_ops<1> {
    typedef fe_shoup<fr_params> tw;
    static __device__ __forceinline__ void mk(tw& w, const fr_t& m) { fe_shoup_from_mont(w, m); }
    static __device__ __forceinline__ void mul(fr_t& r, const fr_t& a, const tw& w) { lz_mul_shoup(r, a, w); }
};

template <int MODE, int MINB, int OPS = 0>
__global__ void __launch_bounds__(64, MINB) k_r4(fr_t* out, const fr_t* in, int iters) {
    using op = r4_ops<OPS>;
    using TW = typename op::tw;
    constexpr int TP = sizeof(TW) / 16;  // 16-byte pieces of a twiddle
    __shared__ uint4 sh[(MODE >= 1 ? 256 * 2 : 1) + (MODE >= 3 ? 4 * 64 * TP : 0)];
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    fr_t x[4];
    TW w[3];
#pragma unroll
    for (int k = 0; k < 4; k++) x[k] = in[(t * 4 + k) % 4096];
#pragma unroll
    for (int k = 0; k < 3; k++) op::mk(w[k], in[(t * 3 + k + 1001) % 4096]);
    const uint32_t M = 256, j = threadIdx.x;
    auto ld = [&](int k) {
        fr_t v;
        uint4* d = reinterpret_cast<uint4*>(&v);
        d[0] = sh[k * 64 + j];
        d[1] = sh[M + k * 64 + j];
        return v;
    };
    auto st = [&](int k, const fr_t& v) {
        const uint4* s = reinterpret_cast<const uint4*>(&v);
        sh[k * 64 + j] = s[0];
        sh[M + k * 64 + j] = s[1];
    };
    uint4* twp = sh + 2 * M;
    if (MODE >= 3) {
#pragma unroll
        for (int k = 0; k < 3; k++) {
            const uint4* s = reinterpret_cast<const uint4*>(&w[k]);
#pragma unroll
            for (int p = 0; p < TP; p++) twp[p * 256 + k * 64 + j] = s[p];
        }
    }
    if (MODE >= 1) {
#pragma unroll
        for (int k = 0; k < 4; k++) st(k, x[k]);
    }
    for (int i = 0; i < iters; i++) {
        if (MODE >= 1) {
#pragma unroll
            for (int k = 0; k < 4; k++) x[k] = ld(k);
        }
        fr_t d;
        TW v;
        auto tw = [&](int k) -> TW {
            if (MODE >= 3) {
                TW r;
                uint4* q = reinterpret_cast<uint4*>(&r);
#pragma unroll
                for (int p = 0; p < TP; p++) q[p] = twp[p * 256 + k * 64 + j];
                return r;
            }
            return w[k];
        };
        op::sub(d, x[0], x[2]);
        op::add(x[0], x[0], x[2]);
        v = tw(1);
        op::mul(x[2], d, v);
        op::sub(d, x[1], x[3]);
        op::add(x[1], x[1], x[3]);
        v = tw(2);
        op::mul(x[3], d, v);
        v = tw(0);
        op::sub(d, x[0], x[1]);
        op::add(x[0], x[0], x[1]);
        op::mul(x[1], d, v);
        op::sub(d, x[2], x[3]);
        op::add(x[2], x[2], x[3]);
        op::mul(x[3], d, v);
        if (MODE >= 1) {
#pragma unroll
            for (int k = 0; k < 4; k++) st(k, x[k]);
        }
        if (MODE >= 2) __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < 4; k++) {
        op::norm(x[k]);
        out[t * 4 + k] = x[k];
    }
}

// The accumulation's inner loop: acc += P_j with P_j gathered from pts by idx (the
// MSM's access pattern when idx is random) or read from a small shared table.
// MINB > 0: __launch_bounds__(128, MINB) caps the registers so MINB blocks of 128 fit
// on one SM (occupancy against spills).
// LAZY: the accumulation's lazily reduced addition (fe_lazy), reduced at
// the end, so its checksum must equal the reduced addition's.
template <class F, bool SHARED, int MINB = 0, bool LAZY = false>
__global__ void __launch_bounds__(128, MINB) k_madd(xyzz_t<F>* out, const affine_t<F>* __restrict__ pts,
                                                     const uint32_t* __restrict__ idx, int per_thread) {
    __shared__ affine_t<F> tab[SHARED ? 64 : 1];
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (SHARED) {
        for (int j = threadIdx.x; j < 64; j += blockDim.x) tab[j] = pts[j];
        __syncthreads();
    }
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    const uint32_t* ix = idx + t * per_thread;
    for (int j = 0; j < per_thread; j++) {
        affine_t<F> p = SHARED ? tab[(threadIdx.x + j) & 63] : pts[ix[j]];
        if constexpr (LAZY) {
            xyzz_add_affine<F, fe_lazy>(acc, p.x, p.y);
        } else {
            xyzz_add_affine(acc, p.x, p.y);
        }
    }
    if constexpr (LAZY) {
        lz_norm(acc.x);
        lz_norm(acc.y);
        lz_norm(acc.zz);
        lz_norm(acc.zzz);
    }
    out[t] = acc;
}

template <class T>
uint64_t checksum(const std::vector<T>& v) {
    const uint32_t* w = (const uint32_t*)v.data();
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < v.size() * sizeof(T) / 4; i++) h = (h ^ w[i]) * 1099511628211ull;
    return h;
}

struct timer {
    cudaEvent_t a, b;
    timer() {
        cudaEventCreate(&a);
        cudaEventCreate(&b);
    }
    void start() { cudaEventRecord(a); }
    float stop() {
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        return ms;
    }
};

template <class K>
void report_attrs(const char* name, K kernel, int tpb) {
    cudaFuncAttributes at;
    CHECK(cudaFuncGetAttributes(&at, kernel));
    int bps = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kernel, tpb, 0));
    printf("%-22s regs=%d local=%zuB blocks/SM=%d warps/SM=%d\n", name, at.numRegs, at.localSizeBytes, bps,
           bps * tpb / 32);
}

// Random field elements below the modulus (top limb masked well below p's).
template <class F>
std::vector<F> random_fe(size_t n, uint64_t seed);

template <>
std::vector<fp2_t> random_fe<fp2_t>(size_t n, uint64_t seed) {
    auto a = random_fe<fp_t>(n, seed), b = random_fe<fp_t>(n, seed + 1);
    std::vector<fp2_t> v(n);
    for (size_t i = 0; i < n; i++) v[i] = fp2_t{a[i], b[i]};
    return v;
}

template <class F>
std::vector<F> random_fe(size_t n, uint64_t seed) {
    std::vector<F> v(n);
    uint64_t s = seed;
    for (auto& x : v) {
        for (int i = 0; i < F::N; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x.v[i] = (uint32_t)(s >> 32);
        }
        x.v[F::N - 1] &= 0x0fffffffu;
    }
    return v;
}

// Runs kernel(out, in, iters) on threads threads, tpb a block, over 4096 random inputs:
// one short warm-up, then the best of 3 runs in ms; out (sized by the caller) receives
// the outputs.
template <class F, class K>
float time_kernel(K kernel, size_t threads, int tpb, int iters, std::vector<F>& out) {
    auto in = random_fe<F>(4096, 7);
    F *din, *dout;
    CHECK(cudaMalloc(&din, 4096 * sizeof(F)));
    CHECK(cudaMalloc(&dout, out.size() * sizeof(F)));
    CHECK(cudaMemcpy(din, in.data(), 4096 * sizeof(F), cudaMemcpyHostToDevice));
    kernel<<<threads / tpb, tpb>>>(dout, din, 16);  // warm-up
    CHECK(cudaDeviceSynchronize());
    timer tm;
    float best = 1e30f;
    for (int r = 0; r < 3; r++) {
        tm.start();
        kernel<<<threads / tpb, tpb>>>(dout, din, iters);
        float ms = tm.stop();
        best = ms < best ? ms : best;
    }
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(F), cudaMemcpyDeviceToHost));
    cudaFree(din);
    cudaFree(dout);
    return best;
}

// SHOUP: k_mul_shoup (F = fr_t) instead of k_mul.
template <class F, int ILP, bool SQR = false, bool SHOUP = false>
void bench_mul(const char* name, int sms, int iters) {
    auto kernel = [] {
        if constexpr (SHOUP) return k_mul_shoup<ILP>;
        else return k_mul<F, ILP, SQR>;
    }();
    const int tpb = 256;
    // A fixed grid (not sized by occupancy), so every product computes the same outputs.
    size_t threads = (size_t)sms * 2048;
    std::vector<F> out(threads * ILP);
    const float best = time_kernel(kernel, threads, tpb, iters, out);
    double muls = (double)threads * ILP * iters;
    char label[64];
    snprintf(label, sizeof label, "%s ilp=%d", name, ILP);
    report_attrs(label, kernel, tpb);
    printf("FIELDBENCH %s ilp=%d muls=%.3g ms=%.3f Gmul/s=%.2f checksum=%016llx\n", name, ILP, muls, best,
           muls / best / 1e6, (unsigned long long)checksum(out));
}

// A butterfly kernel (k_r4, k_bfly) on a fixed grid; EPT elements a thread, PPR
// products a thread a round.
// 420 blocks of 64 threads an SM: whole waves at 7, 10, 12 or 14 blocks an SM.
template <class K>
void bench_units(const char* name, K kernel, int tpb, int ept, int ppr, int sms, int iters) {
    size_t threads = (size_t)sms * 420 * 64;
    std::vector<fr_t> out(threads * ept);
    const float best = time_kernel(kernel, threads, tpb, iters, out);
    double muls = (double)threads * ppr * iters;
    report_attrs(name, kernel, tpb);
    printf("FIELDBENCH %s muls=%.3g ms=%.3f Gmul/s=%.2f checksum=%016llx\n", name, muls, best, muls / best / 1e6,
           (unsigned long long)checksum(out));
}

template <class F, bool SHARED, int MINB = 0, bool LAZY = false>
void bench_madd(const char* name, int sms, size_t npts, int per_thread) {
    const int tpb = 128;
    size_t threads = (size_t)sms * 1536;
    std::vector<affine_t<F>> pts(npts);
    auto xs = random_fe<F>(npts, 11), ys = random_fe<F>(npts, 13);
    for (size_t i = 0; i < npts; i++) pts[i] = affine_t<F>{xs[i], ys[i]};
    std::vector<uint32_t> idx(threads * per_thread);
    uint64_t s = 99;
    for (auto& i : idx) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        i = (uint32_t)((s >> 33) % npts);
    }
    affine_t<F>* dp;
    uint32_t* di;
    xyzz_t<F>* dout;
    CHECK(cudaMalloc(&dp, npts * sizeof(affine_t<F>)));
    CHECK(cudaMalloc(&di, idx.size() * 4));
    CHECK(cudaMalloc(&dout, threads * sizeof(xyzz_t<F>)));
    CHECK(cudaMemcpy(dp, pts.data(), npts * sizeof(affine_t<F>), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(di, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
    k_madd<F, SHARED, MINB, LAZY><<<threads / tpb, tpb>>>(dout, dp, di, 4);
    CHECK(cudaDeviceSynchronize());
    timer tm;
    float best = 1e30f;
    for (int r = 0; r < 3; r++) {
        tm.start();
        k_madd<F, SHARED, MINB, LAZY><<<threads / tpb, tpb>>>(dout, dp, di, per_thread);
        float ms = tm.stop();
        best = ms < best ? ms : best;
    }
    CHECK(cudaGetLastError());
    std::vector<xyzz_t<F>> out(threads);
    CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(xyzz_t<F>), cudaMemcpyDeviceToHost));
    double adds = (double)threads * per_thread;
    report_attrs(name, k_madd<F, SHARED, MINB, LAZY>, tpb);
    printf("FIELDBENCH %s madds=%.3g ms=%.3f Mmadd/s=%.1f checksum=%016llx\n", name, adds, best, adds / best / 1e3,
           (unsigned long long)checksum(out));
    cudaFree(dp);
    cudaFree(di);
    cudaFree(dout);
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    printf("device %s, %d SMs\n", prop.name, sms);
    bench_mul<fp_t, 1>("fp_mul", sms, 2048);
    bench_mul<fp_t, 2>("fp_mul", sms, 1024);
    bench_mul<fp_t, 4>("fp_mul", sms, 512);
    bench_mul<fr_t, 1>("fr_mul", sms, 2048);
    bench_mul<fr_t, 2>("fr_mul", sms, 1024);
    bench_mul<fr_t, 1, false, true>("fr_mul_shoup", sms, 2048);
    bench_mul<fr_t, 2, false, true>("fr_mul_shoup", sms, 1024);
    // the NTT's radix-4 unit: registers, + shared elements, + barrier, + shared twiddles
    bench_units("bfly ilp=1", k_bfly<1>, 256, 2, 1, sms, 512);
    bench_units("bfly ilp=2", k_bfly<2>, 256, 4, 2, sms, 256);
    bench_units("r4_regs minb=1", k_r4<0, 1>, 64, 4, 4, sms, 128);
    bench_units("r4_regs minb=10", k_r4<0, 10>, 64, 4, 4, sms, 128);
    bench_units("r4_regs minb=12", k_r4<0, 12>, 64, 4, 4, sms, 128);
    bench_units("r4_shared minb=10", k_r4<1, 10>, 64, 4, 4, sms, 128);
    bench_units("r4_shared_bar minb=10", k_r4<2, 10>, 64, 4, 4, sms, 128);
    bench_units("r4_shared_bar_tw minb=1", k_r4<3, 1>, 64, 4, 4, sms, 128);
    bench_units("r4_shared_bar_tw minb=10", k_r4<3, 10>, 64, 4, 4, sms, 128);
    bench_units("r4_shared_bar_tw minb=12", k_r4<3, 12>, 64, 4, 4, sms, 128);
    // lazily reduced (the pass's default), and with Shoup's twiddle product
    bench_units("r4_regs lazy minb=10", k_r4<0, 10, 1>, 64, 4, 4, sms, 128);
    bench_units("r4_regs shoup minb=10", k_r4<0, 10, 2>, 64, 4, 4, sms, 128);
    bench_units("r4_regs shoup minb=9", k_r4<0, 9, 2>, 64, 4, 4, sms, 128);
    bench_units("r4_regs shoup minb=1", k_r4<0, 1, 2>, 64, 4, 4, sms, 128);
    bench_units("r4_shared_bar_tw lazy minb=10", k_r4<3, 10, 1>, 64, 4, 4, sms, 128);
    bench_units("r4_shared_bar_tw shoup minb=10", k_r4<3, 10, 2>, 64, 4, 4, sms, 128);
    bench_units("r4_shared_bar_tw shoup minb=9", k_r4<3, 9, 2>, 64, 4, 4, sms, 128);
    bench_mul<fp_t, 4, true>("fp_sqr", sms, 512);
    bench_mul<fr_t, 2, true>("fr_sqr", sms, 1024);
    bench_madd<fp_t, true>("g1_madd_shared", sms, 64, 256);
    bench_madd<fp_t, false>("g1_madd_gather_2^22", sms, 1 << 22, 256);
    bench_madd<fp_t, false, 4>("g1_madd_gather_lb4", sms, 1 << 22, 256);
    bench_madd<fp_t, false, 5>("g1_madd_gather_lb5", sms, 1 << 22, 256);
    bench_madd<fp_t, true, 0, true>("g1_madd_shared_lazy", sms, 64, 256);
    bench_madd<fp_t, false, 0, true>("g1_madd_gather_lazy", sms, 1 << 22, 256);
    bench_madd<fp_t, false, 3, true>("g1_madd_gather_lazy_lb3", sms, 1 << 22, 256);
    bench_mul<fp2_t, 1>("fp2_mul", sms, 512);
    bench_madd<fp2_t, true>("g2_madd_shared", sms, 64, 64);
    bench_madd<fp2_t, false>("g2_madd_gather_2^22", sms, 1 << 22, 64);
    return 0;
}
