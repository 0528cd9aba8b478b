// msm.cu: the MSM entry points of the C ABI (kernels in msm.cuh).
#include <algorithm>
#include "ff/bls12_381.cuh"
#include "runtime.cuh"
#include "windows.cuh"

// Instantiated in msm_g1.cu and msm_g2.cu.
int msm_g1(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c);
int msm_g2(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c);

int precompute_g1(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes);
int precompute_g2(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes);

namespace {

int msm_dispatch(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
                 size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    if (base_offset > bases->count || n > bases->count - base_offset) return fail(CUZK_ERR_ARG, "MSM range exceeds base set");
    RET(fault_point(s->s));
    if (bases->group == 1) return msm_g1(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
    return msm_g2(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}

}  // namespace

extern "C" int cuzk_msm_batch(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                              const cuzk_buf* scalars, size_t scalar_offset, size_t scalar_stride, int nbatch,
                              const cuzk_buf* index, void* out, int* nwin, int* c) {
    if (!s || !bases || !scalars || !out || !nwin || !c) return fail(CUZK_ERR_ARG, "NULL argument");
    if (nbatch < 1 || nbatch > CUZK_MAX_BATCH) return fail(CUZK_ERR_ARG, "nbatch out of range");
    if (nbatch > 1 && scalar_stride == 0) return fail(CUZK_ERR_ARG, "zero scalar_stride for a batch");
    if (index && n * 4 > index->bytes) return fail(CUZK_ERR_ARG, "index out of range");
    // Without an index the last vector's n scalars must lie inside the buffer (index
    // values are the caller's to keep in range, as for a single MSM).
    size_t last = scalar_offset + (size_t)(nbatch - 1) * scalar_stride;
    if (!index && (last + n) * 32 > scalars->bytes) return fail(CUZK_ERR_ARG, "scalars out of range");
    RET(set_device(s->ctx));
    return msm_dispatch(s, bases, base_offset, n, (const fr_t*)scalars->d + scalar_offset, scalar_stride,
                        (uint32_t)nbatch, index ? (const uint32_t*)index->d : nullptr, out, nwin, c);
}

extern "C" int cuzk_msm(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                        const cuzk_buf* scalars, size_t scalar_offset, const cuzk_buf* index, void* out,
                        int* nwin, int* c) {
    return cuzk_msm_batch(s, bases, base_offset, n, scalars, scalar_offset, 0, 1, index, out, nwin, c);
}

extern "C" int cuzk_msm_host(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                             const void* host_scalars, void* out, int* nwin, int* c) {
    if (!s || !bases || (!host_scalars && n) || !out || !nwin || !c) return fail(CUZK_ERR_ARG, "NULL argument");
    RET(set_device(s->ctx));
    RET(s->scalars.ensure(n * 32 + 32));
    RET(stream_upload(s, s->scalars.p, host_scalars, n * 32));
    return msm_dispatch(s, bases, base_offset, n, s->scalars.as<fr_t>(), 0, 1, nullptr, out, nwin, c);
}

extern "C" int cuzk_bases_precompute(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes, int* c,
                                     int* copies) {
    if (!s || !b || !c || !copies) return fail(CUZK_ERR_ARG, "NULL argument");
    if (b->ctx != s->ctx) return fail(CUZK_ERR_ARG, "base set and stream on different devices");
    RET(set_device(s->ctx));
    int r = b->group == 1 ? precompute_g1(s, b, max_copies, reserve_bytes) : precompute_g2(s, b, max_copies, reserve_bytes);
    *c = b->pc_c;
    *copies = b->pc_f;
    return r;
}
