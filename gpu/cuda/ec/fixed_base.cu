// fixed_base.cu: the C ABI of the fixed-base multiplication (kernels in fixed_base.cuh),
// G1 and G2. The point operations stay calls, as in msm/msm_g2.cu (inlined, G2 takes
// very long to build); the Fp products inside Fp2 arithmetic are calls too
// (ff/bls12_381.cuh).
#include <algorithm>
#include "ec/bls12_381.cuh"
#include "ec/fixed_base.cuh"
#include "runtime.cuh"

struct cuzk_fixed_base {
    cuzk_ctx* ctx;
    int gen;
    int group, c, nwin;
    void* table = nullptr;
    // Per pass: scalars, XYZZ results, affine results.
    dev_scratch scalars, xyzz, affine;
};

namespace {

// Points per pass: bounds the scratch (G2: 2^21 x (32 + 384 + 192) B = 1.2 GiB).
constexpr size_t fb_pass = (size_t)1 << 21;

template <class C>
int run(cuzk_stream* s, cuzk_fixed_base* fb, const uint8_t* host_scalars, size_t n, uint8_t* host_out) {
    typedef typename C::field F;
    const size_t pass = std::min(n, fb_pass);
    RET(fb->scalars.ensure(pass * sizeof(fr_t)));
    RET(fb->xyzz.ensure(pass * sizeof(xyzz_t<F>)));
    RET(fb->affine.ensure(pass * sizeof(affine_t<F>)));
    for (size_t off = 0; off < n; off += pass) {
        const size_t m = std::min(pass, n - off);
        RET(stream_upload(s, fb->scalars.p, host_scalars + off * sizeof(fr_t), m * sizeof(fr_t)));
        const int threads = 128;
        fixed_base::accumulate<F><<<(unsigned)((m + threads - 1) / threads), threads, 0, s->s>>>(
            (const affine_t<F>*)fb->table, fb->c, fb->nwin, fb->scalars.as<fr_t>(), m, fb->xyzz.as<xyzz_t<F>>());
        CK(cudaGetLastError());
        const size_t groups = (m + fixed_base::fb_affine_batch - 1) / fixed_base::fb_affine_batch;
        fixed_base::to_affine<F><<<(unsigned)((groups + threads - 1) / threads), threads, 0, s->s>>>(
            fb->xyzz.as<xyzz_t<F>>(), m, fb->affine.as<affine_t<F>>());
        CK(cudaGetLastError());
        RET(stream_download(s, host_out + off * sizeof(affine_t<F>), fb->affine.p, m * sizeof(affine_t<F>)));
    }
    return CUZK_OK;
}

size_t point_bytes(int group) {
    return group == g1_curve::group ? sizeof(affine_t<g1_curve::field>) : sizeof(affine_t<g2_curve::field>);
}

}  // namespace

extern "C" int cuzk_fixed_base_create(cuzk_stream* s, int group, const void* table, int c, int nwin,
                                      cuzk_fixed_base** out) {
    if (!s || !table || !out) return fail(CUZK_ERR_ARG, "NULL argument");
    if (group != 1 && group != 2) return fail(CUZK_ERR_ARG, "group must be 1 (G1) or 2 (G2)");
    if (c < 1 || c > 16 || nwin < 1 || (size_t)c * nwin < 255 || (size_t)c * (nwin - 1) >= 256)
        return fail(CUZK_ERR_ARG, "window width and count do not cover a 255-bit scalar");
    RET(set_device(s->ctx));
    const size_t bytes = (size_t)nwin * (((size_t)1 << c) - 1) * point_bytes(group);
    cuzk_fixed_base* fb = new cuzk_fixed_base{s->ctx, s->ctx->gen, group, c, nwin};
    cudaError_t e = cudaMalloc(&fb->table, bytes);
    if (e != cudaSuccess) {
        delete fb;
        return fail(e == cudaErrorMemoryAllocation ? CUZK_ERR_NOMEM : CUZK_ERR_CUDA,
                    std::string("fixed-base table: ") + cudaGetErrorString(e));
    }
    int r = stream_upload(s, fb->table, table, bytes);
    if (r != CUZK_OK) {
        cudaFree(fb->table);
        delete fb;
        return r;
    }
    *out = fb;
    return CUZK_OK;
}

extern "C" int cuzk_fixed_base_destroy(cuzk_fixed_base* fb) {
    if (!fb) return CUZK_OK;
    if (!stale(fb->ctx, fb->gen)) {
        RET(set_device(fb->ctx));
        cudaFree(fb->table);
        fb->scalars.release();
        fb->xyzz.release();
        fb->affine.release();
    }
    delete fb;
    return CUZK_OK;
}

extern "C" int cuzk_fixed_base_mul(cuzk_stream* s, cuzk_fixed_base* fb, const void* host_scalars, size_t n,
                                   void* host_out) {
    if (!s || !fb || ((!host_scalars || !host_out) && n)) return fail(CUZK_ERR_ARG, "NULL argument");
    if (fb->ctx != s->ctx) return fail(CUZK_ERR_ARG, "fixed-base table and stream on different devices");
    if (stale(fb->ctx, fb->gen)) return fail(CUZK_ERR_ARG, "fixed-base table made before a device reset");
    if (n == 0) return CUZK_OK;
    RET(set_device(s->ctx));
    RET(fault_point(s->s));
    if (fb->group == g1_curve::group) return run<g1_curve>(s, fb, (const uint8_t*)host_scalars, n, (uint8_t*)host_out);
    return run<g2_curve>(s, fb, (const uint8_t*)host_scalars, n, (uint8_t*)host_out);
}
