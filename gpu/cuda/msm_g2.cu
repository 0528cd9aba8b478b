// msm_g2.cu: the G2 (Fp2) instantiation of the MSM (see msm.cuh).
#include "msm.cuh"

int msm_g2(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    return msm::run_msm<fp2_t>(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}
