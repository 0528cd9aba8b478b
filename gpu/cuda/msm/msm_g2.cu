// msm_g2.cu: the G2 (Fp2) instantiation of the MSM (see msm.cuh).
// The point operations stay calls (xyzz.cuh: inlined, this unit did not build in 9
// minutes on 16 cores). With the carry-chain product they once read out of bounds when
// given references into global memory (compute-sanitizer on the H200); the kernels now
// pass them copies, and the chains give G2 2^24 1,332 -> 899 ms (docs/lab/BENCHMARKS.md).
// -DCUZK_G2_MUL_CIOS keeps the C++ product here for A/B runs; -DCUZK_G2_INLINE inlines
// the point operations.
#if defined(CUZK_G2_MUL_CIOS) && !defined(CUZK_MUL_CIOS)
#define CUZK_MUL_CIOS
#endif
#if defined(CUZK_G2_INLINE)
#define CUZK_POINT_FN __forceinline__
#endif
// The Fp products inside Fp2 arithmetic are calls of one function (bls12_381.cuh):
// inlined, G2's mixed addition was so much code that its accumulation stalled half the
// time on instruction fetch (Nsight Compute). Measured on the H200, same compiler, in
// one call: G2 MSM 2^22 247.5 -> 120.3 ms, 2^24 850.6 -> 431.3, one 2^22 proof 417.6 ->
// 312.2 (docs/lab/BENCHMARKS.md). -DCUZK_FP2_FP_INLINE inlines them again (A/B runs).
#if !defined(CUZK_FP2_FP_INLINE) && !defined(CUZK_FP2_FP_CALL)
#define CUZK_FP2_FP_CALL
#endif
#include "msm.cuh"

int msm_g2(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    return msm::run_msm<fp2_t>(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}

int precompute_g2(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes) {
    return msm::run_precompute<fp2_t>(s, b, max_copies, reserve_bytes);
}
