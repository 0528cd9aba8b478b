// msm_g1.cu: the G1 (Fp) instantiation of the MSM (see msm.cuh).
// The G1 point operations are inlined into the kernels (measured on the H200: G1 MSM
// 2^22 100.5 -> 80.7 ms against calls; docs/lab/BENCHMARKS.md).
#define CUZK_POINT_FN __forceinline__
#include "msm.cuh"

int msm_g1(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    return msm::run_msm<g1_curve>(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}

int precompute_g1(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes) {
    return msm::run_precompute<g1_curve>(s, b, max_copies, reserve_bytes);
}
