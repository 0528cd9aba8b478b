// field.cuh: Montgomery arithmetic over a prime field with N 32-bit limbs.
// A field is a parameter struct P (modulus, -p^-1 mod 2^32, R mod p); values are
// kept fully reduced (< p) so equality and zero tests are limb comparisons.
#pragma once
#include <stdint.h>

// Elements are 16-byte aligned, so whole elements load and store as 128-bit accesses
// (every element size here is a multiple of 16 bytes, so layouts do not change).
// Measured on the H200 against 4-byte alignment, same run: NTT 2^24 7.75 -> 5.67 ms,
// G2 MSM 2^24 899 -> 740 ms, G1 2^24 151 -> 142 ms (docs/lab/BENCHMARKS.md).
// The fields are BLS12-381's Fp (N = 12) and Fr (N = 8): the carry chains of
// mont_chain.cuh are generated for those limb counts only.
template <class P>
struct alignas(16) fe {
    static constexpr int N = P::N;
    uint32_t v[P::N];
};

template <class P>
__device__ __forceinline__ bool fe_is_zero(const fe<P>& a) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) acc |= a.v[i];
    return acc == 0;
}

template <class P>
__device__ __forceinline__ bool fe_eq(const fe<P>& a, const fe<P>& b) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) acc |= a.v[i] ^ b.v[i];
    return acc == 0;
}

template <class P>
__device__ __forceinline__ void fe_zero(fe<P>& a) {
#pragma unroll
    for (int i = 0; i < P::N; i++) a.v[i] = 0;
}

template <class P>
__device__ __forceinline__ void fe_one(fe<P>& a) {
#pragma unroll
    for (int i = 0; i < P::N; i++) a.v[i] = P::one(i);
}

#include "mont_chain.cuh"

// Addition, subtraction and the product's final subtraction are carry chains too:
// the C++ forms (a 64-bit intermediate and a shift per carry) took about twice the
// instructions (SASS of an Fr butterfly, nvcc 11.8: docs/lab/BENCHMARKS.md).
//
// r = t - p if t >= p (t given with an extra top word hi), else t.
template <class P>
__device__ __forceinline__ void fe_reduce_once(fe<P>& r, const uint32_t* t, uint32_t hi) {
    static_assert(P::N == 12 || P::N == 8, "carry chains are generated for 12 and 8 limbs");
    if constexpr (P::N == 12) reduce_once_chain_12<P>(r.v, t, hi);
    else reduce_once_chain_8<P>(r.v, t, hi);
}

template <class P>
__device__ __forceinline__ void fe_add(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    static_assert(P::N == 12 || P::N == 8, "carry chains are generated for 12 and 8 limbs");
    if constexpr (P::N == 12) add_mod_chain_12<P>(r.v, a.v, b.v);
    else add_mod_chain_8<P>(r.v, a.v, b.v);
}

template <class P>
__device__ __forceinline__ void fe_sub(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    static_assert(P::N == 12 || P::N == 8, "carry chains are generated for 12 and 8 limbs");
    if constexpr (P::N == 12) sub_mod_chain_12<P>(r.v, a.v, b.v);
    else sub_mod_chain_8<P>(r.v, a.v, b.v);
}

template <class P>
__device__ __forceinline__ void fe_neg(fe<P>& r, const fe<P>& a) {
    fe<P> z;
    fe_zero(z);
    fe_sub(r, z, a);
}

template <class P>
__device__ __forceinline__ void fe_dbl(fe<P>& r, const fe<P>& a) { fe_add(r, a, a); }

// Montgomery product a*b*R^-1 mod p (CIOS) as PTX carry chains: one 64-bit
// multiply-add per limb pair and no separate carry additions (mont_chain.cuh, generated
// by gen/mont_chain.py). The moduli used here leave spare top bits, so the running value
// stays below 2p and fits N+1 words. Measured on the H200 against the C++ form (64-bit
// products, the compiler's carries): Fp product 24.9 vs 16.4 Gmul/s, Fr 47.5 vs 37.0, G1
// mixed addition in the MSM's gather pattern 1,791 vs 1,227 M/s (docs/lab/BENCHMARKS.md).
// Karatsuba products and 64-bit limbs measured slower and are gone.
//
// Fr (r = 2^64 - 2^32 + 1 mod 2^64): the reduction rows' two lowest pairs become two
// additions and m needs no multiply (mont_mul_fold_chain_8): 16 of the product's 128
// wide multiply-adds and its 8 narrow ones fewer.
template <class P>
constexpr bool fr_fold_shape() {
    return P::N == 8 && P::mod(0) == 1u && P::mod(1) == 0xffffffffu;
}

// The 24-word product a*b of Fp (no reduction).
template <class P>
__device__ __forceinline__ void fe_wide(uint32_t* t, const fe<P>& a, const fe<P>& b) {
    static_assert(P::N == 12, "the wide product is Fp's");
    mont_wide_chain_12<P>(t, a.v, b.v);
}

// Montgomery reduction of a 24-word t < p*2^384, fully reduced.
template <class P>
__device__ __forceinline__ void fe_redc(fe<P>& r, const uint32_t* t) {
    static_assert(P::N == 12, "the separate reduction is Fp's");
    uint32_t u[P::N + 1];
    mont_redc_chain_12<P>(u, t);
    fe_reduce_once(r, u, u[P::N]);
}

template <class P>
__device__ __forceinline__ void fe_mul(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    uint32_t t[P::N + 1];
    if constexpr (P::N == 12) {
        mont_mul_chain_12<P>(t, a.v, b.v);
    } else {
        static_assert(fr_fold_shape<P>(), "the 8-limb product is Fr's folded one");
        mont_mul_fold_chain_8<P>(t, a.v, b.v);
    }
    fe_reduce_once(r, t, t[P::N]);
}

// A fixed multiplicand for Shoup's product: w < p as a plain integer (not Montgomery
// form) and ws = floor(w*2^(32N)/p). a*w mod p keeps a's form, so multiplying a
// Montgomery-form a by w gives the same words as the Montgomery product of a and
// w*R mod p. About 180 instead of the Montgomery product's 224 multiply-adds for Fr
// (mont_chain.cuh's shoup chains); ws doubles the multiplicand's storage, so it pays
// where the multiplicands are a table used many times, like the twiddles of the NTT's
// passes that several groups share (ntt/ntt.cu's NTT plan).
template <class P>
struct alignas(16) fe_shoup {
    fe<P> w, ws;
};

// a*w mod p, fully reduced, for a < p.
template <class P>
__device__ __forceinline__ void fe_mul_shoup(fe<P>& r, const fe<P>& a, const fe_shoup<P>& k) {
    static_assert(P::N == 8, "Shoup's product is generated for Fr");
    uint32_t q[P::N], t[P::N];
    shoup_q_chain_8<P>(q, a.v, k.ws.v);
    shoup_lo_chain_8<P>(t, a.v, k.w.v, q);
    fe_reduce_once(r, t, 0);
}

// k for the multiplicand whose Montgomery form is wm (wm = w*R mod p, R = 2^(32N)):
// w = wm*R^-1 mod p, and since w*R = ws*p + wm, ws = (w*R - wm)/p exactly, which is
// -wm*p^-1 mod R (an exact quotient below R is its product by the odd divisor's
// inverse). Built once per table, so plain loops.
template <class P>
__device__ void fe_shoup_from_mont(fe_shoup<P>& k, const fe<P>& wm) {
    static_assert(P::N == 8, "Shoup's product is generated for Fr");
    fe<P> one;
#pragma unroll
    for (int i = 0; i < P::N; i++) one.v[i] = i == 0;
    fe_mul(k.w, wm, one);
    uint32_t t[P::N] = {};
    for (int i = 0; i < P::N; i++) {
        uint64_t c = 0;
        for (int j = 0; i + j < P::N; j++) {
            c += (uint64_t)wm.v[i] * shoup_npinv_8(j) + t[i + j];
            t[i + j] = (uint32_t)c;
            c >>= 32;
        }
    }
#pragma unroll
    for (int i = 0; i < P::N; i++) k.ws.v[i] = t[i];
}

// r = a*b - c*d (Fp). The two products are subtracted unreduced (p*2^384 added on a
// borrow; sub_wide_mod_chain_12) and reduced once: one reduction, one final
// subtraction and one modular subtraction fewer than two products and a difference
// (G1 MSM 2^24 126.9 -> 124.6 ms). The point formulas' Y3 takes this form.
template <class P>
__device__ __forceinline__ void fe_mul_sub(fe<P>& r, const fe<P>& a, const fe<P>& b, const fe<P>& c,
                                           const fe<P>& d) {
    uint32_t x[2 * P::N], y[2 * P::N];
    fe_wide(x, a, b);
    fe_wide(y, c, d);
    sub_wide_mod_chain_12<P>(x, x, y);
    fe_redc(r, x);
}

// Lazily reduced values in [0, 2p), for a hot loop's intermediate values (G1's
// accumulation; msm.cuh). BLS12-381's p < 2^381 leaves the room: a Montgomery product
// of operands below 2p is below 2p without its final subtraction (4p < 2^384), a
// difference is taken modulo 2p, and a*b - c*d stays below p*2^384 before its
// reduction (4p^2 < p*2^384). Each product saves the
// final subtraction (about 25 instructions); zero becomes 0 or p.
// gen/check_mont_chain.py checks these bounds on integers.
template <class P>
struct twice_p {  // 2p as a modulus for the chains' subtraction
    static constexpr int N = P::N;
    __host__ __device__ static constexpr uint32_t mod(int i) {
        return (P::mod(i) << 1) | (i ? P::mod(i - 1) >> 31 : 0u);
    }
};

// Fr (the NTT's butterflies) has one spare bit only: 2r < 2^256 < 4r. Its folded
// product maps a < 2r and a twiddle b < r to t < 2r (checked by check_mont_chain.py),
// so the product drops its final subtraction; a sum of two values below 2r can pass
// 2^256 and keeps its carry (lz_add), and a difference is taken modulo 2r as for Fp.
template <class P>
__device__ __forceinline__ void lz_mul(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    uint32_t t[P::N + 1];
    if constexpr (P::N == 12) {
        mont_mul_chain_12<P>(t, a.v, b.v);  // t[12] = 0: the product is below 2p
    } else {
        static_assert(fr_fold_shape<P>(), "Fr's lazy product is the folded one (b below r)");
        mont_mul_fold_chain_8<P>(t, a.v, b.v);  // t[8] = 0: below 2r for a < 2r, b < r
    }
#pragma unroll
    for (int i = 0; i < P::N; i++) r.v[i] = t[i];
}

// a + b modulo 2r for Fr's a, b < 2r: the 257-bit sum, less 2r where it reaches 2r.
template <class P>
__device__ __forceinline__ void lz_add(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    static_assert(P::N == 8, "lz_add is Fr's (Fp's sums of values below 2p need no carry word)");
    uint32_t t[9];
    add_carry_chain_8(t, a.v, b.v);
    reduce_once_chain_8<twice_p<P>>(r.v, t, t[8]);
}

// Shoup's product of a < 2r by a fixed w < r: q stays within one of floor(a*w/r)
// (a*f/2^256 < 2r/2^256 < 0.91 for the fraction f left out of ws, plus the dropped
// columns' < 2^-26), so a*w - q*r is in [0, 2r) without a final subtraction, as the
// lazy butterflies need (check_mont_chain.py checks it for a < 2r).
template <class P>
__device__ __forceinline__ void lz_mul_shoup(fe<P>& r, const fe<P>& a, const fe_shoup<P>& k) {
    static_assert(P::N == 8, "Shoup's product is generated for Fr");
    uint32_t q[P::N];
    shoup_q_chain_8<P>(q, a.v, k.ws.v);
    shoup_lo_chain_8<P>(r.v, a.v, k.w.v, q);
}

template <class P>
__device__ __forceinline__ void lz_mul_sub(fe<P>& r, const fe<P>& a, const fe<P>& b, const fe<P>& c, const fe<P>& d) {
    static_assert(P::N == 12, "lazy reduction needs Fp's spare bits");
    uint32_t x[2 * P::N], y[2 * P::N], t[P::N + 1];
    fe_wide(x, a, b);
    fe_wide(y, c, d);
    sub_wide_mod_chain_12<P>(x, x, y);
    mont_redc_chain_12<P>(t, x);
#pragma unroll
    for (int i = 0; i < P::N; i++) r.v[i] = t[i];
}

template <class P>
__device__ __forceinline__ void lz_sub(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    if constexpr (P::N == 12) sub_mod_chain_12<twice_p<P>>(r.v, a.v, b.v);
    else sub_mod_chain_8<twice_p<P>>(r.v, a.v, b.v);
}

// a = 0 mod p for a < 2p.
template <class P>
__device__ __forceinline__ bool lz_is_zero(const fe<P>& a) {
    uint32_t z = 0, e = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        z |= a.v[i];
        e |= a.v[i] ^ P::mod(i);
    }
    return z == 0 || e == 0;
}

// a < 2p to a < p.
template <class P>
__device__ __forceinline__ void lz_norm(fe<P>& a) {
    if constexpr (P::N == 12) reduce_once_chain_12<P>(a.v, a.v, 0);
    else reduce_once_chain_8<P>(a.v, a.v, 0);
}

// The square is the product a*a: the carry-chain square without the products below
// the diagonal measured slower on the H200 (Fp 24.8 -> 17.5 Gsqr/s, G1 MSM 2^24 142.8
// -> 161.4 ms: its serial 2N-word chains and separate reduction cost more than the
// products saved; docs/lab/BENCHMARKS.md).
template <class P>
__device__ __forceinline__ void fe_sqr(fe<P>& r, const fe<P>& a) { fe_mul(r, a, a); }

// Montgomery form -> canonical integer (a * R^-1).
template <class P>
__device__ __forceinline__ void fe_from_mont(fe<P>& r, const fe<P>& a) {
    fe<P> one;
#pragma unroll
    for (int i = 0; i < P::N; i++) one.v[i] = i == 0;
    fe_mul(r, a, one);
}

// a^(p-2) = a^-1 (0 for a = 0), fixed 4-bit windows over the modulus' limbs: about
// log2(p) squarings and log2(p)/4 products. Used at key load (base precomputation),
// never per MSM addition.
template <class P>
__device__ __noinline__ void fe_inv(fe<P>& r, const fe<P>& a) {
    static_assert(P::mod(0) >= 2, "p - 2 must not borrow from limb 1");
    fe<P> tbl[16];
    fe_one(tbl[0]);
    tbl[1] = a;
    for (int i = 2; i < 16; i++) fe_mul(tbl[i], tbl[i - 1], a);
    fe<P> acc;
    fe_one(acc);
    for (int i = P::N * 8 - 1; i >= 0; i--) {
        const uint32_t limb = P::mod(i / 8) - (i / 8 == 0 ? 2u : 0u);
        const uint32_t nib = (limb >> (4 * (i % 8))) & 15;
        for (int s = 0; s < 4; s++) fe_sqr(acc, acc);
        if (nib) fe_mul(acc, acc, tbl[nib]);
    }
    r = acc;
}

template <class P>
__device__ __forceinline__ void fe_pow(fe<P>& r, const fe<P>& base, uint32_t e) {
    fe<P> acc, b = base;
    fe_one(acc);
    while (e) {
        if (e & 1) fe_mul(acc, acc, b);
        e >>= 1;
        if (e) fe_sqr(b, b);
    }
    r = acc;
}
