// xyzz.cuh: short-Weierstrass (a = 0) points over a field F in affine and XYZZ
// coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2; ZZ = 0 is infinity). Formulas
// from the Explicit-Formulas Database (add-2008-s, madd-2008-s, dbl-2008-s-1).
#pragma once

// The point operations are calls (__noinline__) unless the translation unit defines
// CUZK_POINT_FN before the first include: inlined into every kernel, the G2 (Fp2)
// variants made cicc/ptxas take over ten minutes; as calls the whole library builds in
// about 3 minutes. msm/msm_g1.cu inlines them, which pays for G1.
#ifndef CUZK_POINT_FN
#define CUZK_POINT_FN __noinline__
#endif

template <class F>
struct affine_t {
    F x, y;  // gnark layout; (0,0) is the point at infinity
};

template <class F>
struct xyzz_t {
    F x, y, zz, zzz;
};

template <class F>
__device__ __forceinline__ bool aff_is_inf(const affine_t<F>& p) { return fe_is_zero(p.x) && fe_is_zero(p.y); }

template <class F>
__device__ __forceinline__ void xyzz_set_inf(xyzz_t<F>& p) {
    fe_zero(p.x); fe_zero(p.y); fe_zero(p.zz); fe_zero(p.zzz);
}

template <class F>
__device__ __forceinline__ bool xyzz_is_inf(const xyzz_t<F>& p) { return fe_is_zero(p.zz); }

template <class F>
__device__ CUZK_POINT_FN void xyzz_dbl(xyzz_t<F>& r, const xyzz_t<F>& p) {
    if (xyzz_is_inf(p)) { r = p; return; }
    F u, v, w, s, m, t;
    fe_dbl(u, p.y);
    fe_sqr(v, u);
    fe_mul(w, u, v);
    fe_mul(s, p.x, v);
    fe_sqr(m, p.x);
    fe_add(t, m, m);
    fe_add(m, t, m);  // 3 x^2
    fe_sqr(t, m);
    fe_sub(t, t, s);
    fe_sub(r.x, t, s);
    fe_sub(s, s, r.x);
    fe_mul_sub(r.y, m, s, w, p.y);
    fe_mul(r.zz, v, p.zz);
    fe_mul(r.zzz, w, p.zzz);
}

// Doubling of an affine point given as XYZZ with ZZ = ZZZ = 1 (mdbl-2008-s-1).
template <class F>
__device__ CUZK_POINT_FN void xyzz_dbl_affine(xyzz_t<F>& r, const F& x, const F& y) {
    F u, v, w, s, m, t;
    fe_dbl(u, y);
    fe_sqr(v, u);
    fe_mul(w, u, v);
    fe_mul(s, x, v);
    fe_sqr(m, x);
    fe_add(t, m, m);
    fe_add(m, t, m);
    fe_sqr(t, m);
    fe_sub(t, t, s);
    fe_sub(r.x, t, s);
    fe_sub(s, s, r.x);
    fe_mul_sub(r.y, m, s, w, y);
    r.zz = v;
    r.zzz = w;
}

// The field operations of the mixed addition: reduced (every value below p), or lazily
// reduced (fe_lazy: the sum's coordinates below 2p, see lz_mul in field.cuh; Fp only).
struct fe_reduced {
    template <class F>
    static __device__ __forceinline__ void mul(F& r, const F& a, const F& b) { fe_mul(r, a, b); }
    template <class F>
    static __device__ __forceinline__ void sqr(F& r, const F& a) { fe_sqr(r, a); }
    template <class F>
    static __device__ __forceinline__ void sub(F& r, const F& a, const F& b) { fe_sub(r, a, b); }
    template <class F>
    static __device__ __forceinline__ void mul_sub(F& r, const F& a, const F& b, const F& c, const F& d) {
        fe_mul_sub(r, a, b, c, d);
    }
    template <class F>
    static __device__ __forceinline__ bool is_zero(const F& a) { return fe_is_zero(a); }
};

struct fe_lazy {
    template <class F>
    static __device__ __forceinline__ void mul(F& r, const F& a, const F& b) { lz_mul(r, a, b); }
    template <class F>
    static __device__ __forceinline__ void sqr(F& r, const F& a) { lz_mul(r, a, a); }
    template <class F>
    static __device__ __forceinline__ void sub(F& r, const F& a, const F& b) { lz_sub(r, a, b); }
    template <class F>
    static __device__ __forceinline__ void mul_sub(F& r, const F& a, const F& b, const F& c, const F& d) {
        lz_mul_sub(r, a, b, c, d);
    }
    template <class F>
    static __device__ __forceinline__ bool is_zero(const F& a) { return lz_is_zero(a); }
};

// r += (x, y) affine (not infinity; x, y below p). With fe_lazy, r's coordinates are
// below 2p before and after; the rare doubling takes the reduced path (its output is
// below p), and ZZ is exactly 0 only when set so (a product of two values nonzero mod p
// is neither 0 nor p), so the infinity test stays exact.
template <class F, class O = fe_reduced>
__device__ CUZK_POINT_FN void xyzz_add_affine(xyzz_t<F>& r, const F& x, const F& y) {
    if (xyzz_is_inf(r)) {
        r.x = x; r.y = y; fe_one(r.zz); fe_one(r.zzz);
        return;
    }
    F u2, s2, p, q, pp, ppp;
    O::mul(u2, x, r.zz);
    O::mul(s2, y, r.zzz);
    O::sub(p, u2, r.x);
    O::sub(q, s2, r.y);  // R
    if (O::is_zero(p)) {
        if (O::is_zero(q)) xyzz_dbl_affine(r, x, y);
        else xyzz_set_inf(r);
        return;
    }
    O::sqr(pp, p);
    O::mul(ppp, p, pp);
    F qq, t;
    O::mul(qq, r.x, pp);  // Q
    O::sqr(t, q);
    O::sub(t, t, ppp);
    O::sub(t, t, qq);
    O::sub(t, t, qq);  // X3
    O::sub(u2, qq, t);
    O::mul_sub(r.y, q, u2, r.y, ppp);
    r.x = t;
    O::mul(r.zz, r.zz, pp);
    O::mul(r.zzz, r.zzz, ppp);
}

// r += p (general XYZZ).
template <class F>
__device__ CUZK_POINT_FN void xyzz_add(xyzz_t<F>& r, const xyzz_t<F>& p) {
    if (xyzz_is_inf(p)) return;
    if (xyzz_is_inf(r)) { r = p; return; }
    F u1, u2, s1, s2, P, R;
    fe_mul(u1, r.x, p.zz);
    fe_mul(u2, p.x, r.zz);
    fe_mul(s1, r.y, p.zzz);
    fe_mul(s2, p.y, r.zzz);
    fe_sub(P, u2, u1);
    fe_sub(R, s2, s1);
    if (fe_is_zero(P)) {
        if (fe_is_zero(R)) xyzz_dbl(r, p);
        else xyzz_set_inf(r);
        return;
    }
    F pp, ppp, q, t;
    fe_sqr(pp, P);
    fe_mul(ppp, P, pp);
    fe_mul(q, u1, pp);
    fe_sqr(t, R);
    fe_sub(t, t, ppp);
    fe_sub(t, t, q);
    fe_sub(t, t, q);  // X3
    fe_sub(u2, q, t);
    fe_mul_sub(r.y, R, u2, s1, ppp);
    r.x = t;
    fe_mul(r.zz, r.zz, p.zz);
    fe_mul(r.zz, r.zz, pp);
    fe_mul(r.zzz, r.zzz, p.zzz);
    fe_mul(r.zzz, r.zzz, ppp);
}

// r = k * p for a small k (double-and-add, most significant bit first).
template <class F>
__device__ __forceinline__ void xyzz_mul_small(xyzz_t<F>& r, const xyzz_t<F>& p, uint32_t k) {
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (int b = 31; b >= 0; b--) {
        if (!xyzz_is_inf(acc)) xyzz_dbl(acc, acc);
        if ((k >> b) & 1) xyzz_add(acc, p);
    }
    r = acc;
}
