// msm_g1.cu: the G1 (Fp) instantiation of the MSM (see msm.cuh).
// The G1 point operations are inlined into the kernels (measured on the H200: G1 MSM
// 2^22 100.5 -> 80.7 ms; docs/lab/BENCHMARKS.md); define CUZK_NOINLINE_G1 to make them
// calls, as the G2 ones are.
#if !defined(CUZK_NOINLINE_G1)
#define CUZK_POINT_FN __forceinline__
#endif
#include "ff/bls12_381.cuh"
#if defined(CUZK_G1_FP_CALL)
// A/B: G1's Fp products as calls of one function, as G2's are (msm_g2.cu). These
// overloads are exact matches, so the point operations' templates pick them.
static __device__ __noinline__ fp_t g1_mul_call(fp_t a, fp_t b) {
    fp_t r;
    fe_mul<fp_params>(r, a, b);
    return r;
}
__device__ __forceinline__ void fe_mul(fp_t& r, const fp_t& a, const fp_t& b) { r = g1_mul_call(a, b); }
__device__ __forceinline__ void fe_sqr(fp_t& r, const fp_t& a) { r = g1_mul_call(a, a); }
#endif
#include "msm.cuh"

int msm_g1(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    return msm::run_msm<fp_t>(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}

int precompute_g1(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes) {
    return msm::run_precompute<fp_t>(s, b, max_copies, reserve_bytes);
}
