// msm_g2.cu: the G2 (Fp2) instantiation of the MSM (see msm.cuh).
// It keeps the C++ Montgomery product: built with the carry chains, the streamed and
// indexed G2 test stopped on an illegal address on the H200 (2026-12-01), as an earlier
// PTX product did, while every G1, Fr and field-level check passed; until that is
// understood, G2 uses the form it was validated with. -DCUZK_G2_MUL_CHAIN overrides.
#if !defined(CUZK_G2_MUL_CHAIN) && !defined(CUZK_MUL_CIOS)
#define CUZK_MUL_CIOS
#endif
#include "msm.cuh"

int msm_g2(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    return msm::run_msm<fp2_t>(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}
