// msm_g1.cu: the G1 (Fp) instantiation of the MSM (see msm.cuh).
#include "msm.cuh"

int msm_g1(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           const uint32_t* index, void* out, int* nwin, int* c) {
    return msm::run_msm<fp_t>(s, bases, base_offset, n, scalars, index, out, nwin, c);
}
