// msm_g2.cu: the G2 (Fp2) instantiation of the MSM (see msm.cuh).
// The point operations stay calls (xyzz.cuh: inlined, this unit did not build in 9
// minutes on 16 cores), and so do the Fp products inside them (ff/bls12_381.cuh). With
// the carry-chain product they once read out of bounds when given references into
// global memory (compute-sanitizer on the H200); the kernels now pass them copies, and
// the chains give G2 2^24 1,332 -> 899 ms against the C++ product
// (docs/lab/BENCHMARKS.md).
#include "msm.cuh"

int msm_g2(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    return msm::run_msm<g2_curve>(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}

int precompute_g2(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes) {
    return msm::run_precompute<g2_curve>(s, b, max_copies, reserve_bytes);
}
