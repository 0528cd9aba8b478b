// fixed_base.cuh: many scalars times one fixed point G (a key setup's generator),
// with a window table of G in device memory: table[w*(2^c-1) + d-1] = d*2^(c*w)*G
// (affine, gnark's layout) for the nwin windows of c bits of a 255-bit scalar. Each
// scalar costs one mixed addition per non-zero window digit and no doubling; the
// results go to affine by Montgomery's trick, one inversion per fb_affine_batch points.
// Templated on the coordinate field F (a curve's field: ec/bls12_381.cuh) over
// xyzz.cuh's point operations.
#pragma once
#include "ec/bls12_381.cuh"

namespace fixed_base {

// Points converted to affine per thread with one inversion.
constexpr int fb_affine_batch = 16;

// Digit w (c bits from bit w*c) of the canonical scalar s.
__device__ __forceinline__ uint32_t digit(const fr_t& s, int w, int c) {
    const int bit = w * c, limb = bit / 32, shift = bit % 32;
    uint64_t v = s.v[limb] >> shift;
    if (shift + c > 32 && limb + 1 < fr_t::N) v |= (uint64_t)s.v[limb + 1] << (32 - shift);
    return (uint32_t)v & ((1u << c) - 1);
}

// out[i] = scalars[i] * G as XYZZ (ZZ = 0: infinity). Scalars in Montgomery form.
template <class F>
__global__ void accumulate(const affine_t<F>* __restrict__ table, int c, int nwin, const fr_t* __restrict__ scalars,
                           size_t n, xyzz_t<F>* __restrict__ out) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t s, m = scalars[i];
    fe_from_mont(s, m);
    const size_t per = ((size_t)1 << c) - 1;
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (int w = 0; w < nwin; w++) {
        const uint32_t d = digit(s, w, c);
        if (d == 0) continue;
        // A copy, not a reference into global memory (see msm/msm_g2.cu).
        const affine_t<F> p = table[w * per + d - 1];
        xyzz_add_affine(acc, p.x, p.y);
    }
    out[i] = acc;
}

// out[i] = in[i] in affine coordinates ((0, 0) for infinity): each thread takes
// fb_affine_batch consecutive points and inverts the product of their ZZZ once.
// With ZZ = Z^2 and ZZZ = Z^3: 1/Z = ZZ/ZZZ, x = X/Z^2, y = Y/ZZZ.
template <class F>
__global__ void to_affine(const xyzz_t<F>* __restrict__ in, size_t n, affine_t<F>* __restrict__ out) {
    const size_t base = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * fb_affine_batch;
    if (base >= n) return;
    const int m = (int)(n - base < (size_t)fb_affine_batch ? n - base : fb_affine_batch);
    F pre[fb_affine_batch];
    F acc;
    fe_one(acc);
    for (int k = 0; k < m; k++) {
        pre[k] = acc;
        const F zzz = in[base + k].zzz;
        if (!fe_is_zero(zzz)) fe_mul(acc, acc, zzz);
    }
    F inv;
    fe_inv(inv, acc);
    for (int k = m - 1; k >= 0; k--) {
        const xyzz_t<F> p = in[base + k];
        affine_t<F> r;
        if (fe_is_zero(p.zzz)) {
            fe_zero(r.x);
            fe_zero(r.y);
        } else {
            F zzz_inv, z_inv, z2_inv;
            fe_mul(zzz_inv, inv, pre[k]);
            fe_mul(inv, inv, p.zzz);
            fe_mul(z_inv, p.zz, zzz_inv);
            fe_sqr(z2_inv, z_inv);
            fe_mul(r.x, p.x, z2_inv);
            fe_mul(r.y, p.y, zzz_inv);
        }
        out[base + k] = r;
    }
}

}  // namespace fixed_base
