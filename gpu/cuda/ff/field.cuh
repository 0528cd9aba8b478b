// field.cuh: Montgomery arithmetic over a prime field with N 32-bit limbs.
// A field is a parameter struct P (modulus, -p^-1 mod 2^32, R mod p); values are
// kept fully reduced (< p) so equality and zero tests are limb comparisons.
#pragma once
#include <stdint.h>

// Elements are 16-byte aligned, so whole elements load and store as 128-bit accesses
// (every element size here is a multiple of 16 bytes, so layouts do not change).
// Measured on the H200 against 4-byte alignment, same run: NTT 2^24 7.75 -> 5.67 ms,
// G2 MSM 2^24 899 -> 740 ms, G1 2^24 151 -> 142 ms (docs/lab/BENCHMARKS.md).
// -DCUZK_ALIGN4 restores 4-byte alignment for A/B runs.
#if defined(CUZK_ALIGN4)
#define CUZK_FE_ALIGN
#else
#define CUZK_FE_ALIGN alignas(16)
#endif

template <class P>
struct CUZK_FE_ALIGN fe {
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

// r = t - p if t >= p (t given with an extra top word hi), else t.
template <class P>
__device__ __forceinline__ void fe_reduce_once_cxx(fe<P>& r, const uint32_t* t, uint32_t hi) {
    uint32_t s[P::N];
    uint64_t borrow = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        uint64_t d = (uint64_t)t[i] - P::mod(i) - borrow;
        s[i] = (uint32_t)d;
        borrow = (d >> 63);
    }
    bool ge = hi != 0 || borrow == 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) r.v[i] = ge ? s[i] : t[i];
}

template <class P>
__device__ __forceinline__ void fe_add_cxx(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    uint32_t t[P::N];
    uint64_t c = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        c += (uint64_t)a.v[i] + b.v[i];
        t[i] = (uint32_t)c;
        c >>= 32;
    }
    fe_reduce_once_cxx(r, t, (uint32_t)c);
}

template <class P>
__device__ __forceinline__ void fe_sub_cxx(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    uint32_t t[P::N];
    uint64_t borrow = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        uint64_t d = (uint64_t)a.v[i] - b.v[i] - borrow;
        t[i] = (uint32_t)d;
        borrow = d >> 63;
    }
    uint32_t mask = 0u - (uint32_t)borrow;  // add p back on underflow
    uint64_t c = 0;
#pragma unroll
    for (int i = 0; i < P::N; i++) {
        c += (uint64_t)t[i] + (P::mod(i) & mask);
        r.v[i] = (uint32_t)c;
        c >>= 32;
    }
}

#include "mont_chain.cuh"

// The C++ forms above extract every carry and borrow with a shift of a 64-bit
// intermediate; the carry chains (mont_chain.cuh) use the carry flag instead, about half
// the instructions (SASS of an Fr butterfly, nvcc 11.8: docs/lab/BENCHMARKS.md). Fields of
// other limb counts, and -DCUZK_ADDSUB_CXX (A/B runs), take the C++ forms.
#if defined(CUZK_ADDSUB_CXX)
constexpr bool kAddSubChains = false;
#else
constexpr bool kAddSubChains = true;
#endif

template <class P>
__device__ __forceinline__ void fe_reduce_once(fe<P>& r, const uint32_t* t, uint32_t hi) {
    if constexpr (kAddSubChains && P::N == 12) {
        reduce_once_chain_12<P>(r.v, t, hi);
    } else if constexpr (kAddSubChains && P::N == 8) {
        reduce_once_chain_8<P>(r.v, t, hi);
    } else {
        fe_reduce_once_cxx(r, t, hi);
    }
}

template <class P>
__device__ __forceinline__ void fe_add(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    if constexpr (kAddSubChains && P::N == 12) {
        add_mod_chain_12<P>(r.v, a.v, b.v);
    } else if constexpr (kAddSubChains && P::N == 8) {
        add_mod_chain_8<P>(r.v, a.v, b.v);
    } else {
        fe_add_cxx(r, a, b);
    }
}

template <class P>
__device__ __forceinline__ void fe_sub(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    if constexpr (kAddSubChains && P::N == 12) {
        sub_mod_chain_12<P>(r.v, a.v, b.v);
    } else if constexpr (kAddSubChains && P::N == 8) {
        sub_mod_chain_8<P>(r.v, a.v, b.v);
    } else {
        fe_sub_cxx(r, a, b);
    }
}

template <class P>
__device__ __forceinline__ void fe_neg(fe<P>& r, const fe<P>& a) {
    fe<P> z;
    fe_zero(z);
    fe_sub(r, z, a);
}

template <class P>
__device__ __forceinline__ void fe_dbl(fe<P>& r, const fe<P>& a) { fe_add(r, a, a); }

// Montgomery product a*b*R^-1 mod p (CIOS). The moduli used here leave spare top
// bits, so the running value stays below 2p and fits N+1 words.
#if defined(CUZK_MUL64)
// 64-bit limbs (opt-in, -DCUZK_MUL64): the same CIOS over N/2 64-bit words with
// 128-bit products, for measuring the limb width (gpu/cuda/bench/fieldbench.cu). The
// values stay in 32-bit limbs outside the product.
template <class P>
struct mont64 {
    static constexpr int M = P::N / 2;
    __host__ __device__ static constexpr uint64_t mod(int j) {
        return (uint64_t)P::mod(2 * j) | ((uint64_t)P::mod(2 * j + 1) << 32);
    }
    // -p^-1 mod 2^64 by Newton's iteration (each step doubles the correct low bits).
    __host__ __device__ static constexpr uint64_t inv() {
        uint64_t p0 = mod(0), x = 1;
        for (int i = 0; i < 7; i++) x *= 2 - p0 * x;
        return 0 - x;
    }
};

template <class P>
__device__ __forceinline__ void fe_mul(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    typedef unsigned __int128 u128;
    constexpr int M = P::N / 2;
    constexpr uint64_t inv = mont64<P>::inv();
    uint64_t A[M], t[M + 1];
#pragma unroll
    for (int j = 0; j < M; j++) {
        A[j] = (uint64_t)a.v[2 * j] | ((uint64_t)a.v[2 * j + 1] << 32);
        t[j] = 0;
    }
    t[M] = 0;
#pragma unroll
    for (int i = 0; i < M; i++) {
        uint64_t bi = (uint64_t)b.v[2 * i] | ((uint64_t)b.v[2 * i + 1] << 32);
        u128 c = 0;
#pragma unroll
        for (int j = 0; j < M; j++) {
            c += (u128)A[j] * bi + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        u128 top = (u128)t[M] + c;
        uint64_t m = t[0] * inv;
        c = ((u128)m * mont64<P>::mod(0) + t[0]) >> 64;
#pragma unroll
        for (int j = 1; j < M; j++) {
            c += (u128)m * mont64<P>::mod(j) + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += top;
        t[M - 1] = (uint64_t)c;
        t[M] = (uint64_t)(c >> 64);
    }
    uint32_t w[P::N];
#pragma unroll
    for (int j = 0; j < M; j++) {
        w[2 * j] = (uint32_t)t[j];
        w[2 * j + 1] = (uint32_t)(t[j] >> 32);
    }
    fe_reduce_once(r, w, (uint32_t)t[M]);
}
#elif defined(CUZK_MUL_CIOS)
// C++ form (-DCUZK_MUL_CIOS): 64-bit products, the compiler's carry handling; the
// reference the carry chains are timed against.
template <class P>
__device__ __forceinline__ void fe_mul(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    constexpr int N = P::N;
    uint32_t t[N + 1];
#pragma unroll
    for (int i = 0; i <= N; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        uint64_t c = 0;
        uint32_t bi = b.v[i];
#pragma unroll
        for (int j = 0; j < N; j++) {
            c += (uint64_t)a.v[j] * bi + t[j];
            t[j] = (uint32_t)c;
            c >>= 32;
        }
        uint64_t top = (uint64_t)t[N] + c;  // < 2^33
        uint32_t m = t[0] * P::inv;
        c = ((uint64_t)m * P::mod(0) + t[0]) >> 32;
#pragma unroll
        for (int j = 1; j < N; j++) {
            c += (uint64_t)m * P::mod(j) + t[j];
            t[j - 1] = (uint32_t)c;
            c >>= 32;
        }
        c += top;
        t[N - 1] = (uint32_t)c;
        t[N] = (uint32_t)(c >> 32);
    }
    fe_reduce_once(r, t, t[N]);
}
#else
// Default: PTX carry chains, one 64-bit multiply-add per limb pair and no separate
// carry additions (mont_chain.cuh, generated by gen/mont_chain.py). Measured on the
// H200 against the C++ form above: Fp product 24.9 vs 16.4 Gmul/s, Fr 47.5 vs 37.0, G1
// mixed addition in the MSM's gather pattern 1,791 vs 1,227 M/s (docs/lab/BENCHMARKS.md).
//
// Karatsuba (mont_kara_wide_chain_N: three half-size products, 108 instead of 144 limb
// products for Fp, 48 instead of 64 for Fr) then the reduction rows apart
// (mont_redc_chain_N), instead of the rows interleaved: -DCUZK_KARA_FP / -DCUZK_KARA_FR.
#if defined(CUZK_KARA_FP)
constexpr bool kKaraFp = true;
#else
constexpr bool kKaraFp = false;
#endif
#if defined(CUZK_KARA_FR)
constexpr bool kKaraFr = true;
#else
constexpr bool kKaraFr = false;
#endif
// Fr (r = 2^64 - 2^32 + 1 mod 2^64): the reduction rows' two lowest pairs become two
// additions and m needs no multiply (mont_mul_fold_chain_8): 16 of the product's 128
// wide multiply-adds and its 8 narrow ones fewer. -DCUZK_FR_NOFOLD: the generic rows
// (A/B runs).
#if defined(CUZK_FR_NOFOLD)
constexpr bool kFoldFr = false;
#else
constexpr bool kFoldFr = true;
#endif
#define CUZK_FE_WIDE 1

template <class P>
constexpr bool kara_for() {
    return P::N == 12 ? kKaraFp : kKaraFr;
}

// The 2N-word product a*b (no reduction).
template <class P>
__device__ __forceinline__ void fe_wide(uint32_t* t, const fe<P>& a, const fe<P>& b) {
    static_assert(P::N == 12 || P::N == 8, "no carry-chain product for this limb count");
    if constexpr (P::N == 12) {
        if constexpr (kKaraFp) mont_kara_wide_chain_12<P>(t, a.v, b.v);
        else mont_wide_chain_12<P>(t, a.v, b.v);
    } else {
        if constexpr (kKaraFr) mont_kara_wide_chain_8<P>(t, a.v, b.v);
        else mont_wide_chain_8<P>(t, a.v, b.v);
    }
}

// Montgomery reduction of a 2N-word t < p*2^(32N), fully reduced.
template <class P>
__device__ __forceinline__ void fe_redc(fe<P>& r, const uint32_t* t) {
    uint32_t u[P::N + 1];
    if constexpr (P::N == 12) mont_redc_chain_12<P>(u, t);
    else mont_redc_chain_8<P>(u, t);
    fe_reduce_once(r, u, u[P::N]);
}

template <class P>
__device__ __forceinline__ void fe_mul(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    if constexpr (kara_for<P>()) {
        uint32_t t[2 * P::N];
        fe_wide(t, a, b);
        fe_redc(r, t);
        return;
    }
    uint32_t t[P::N + 1];
    if constexpr (P::N == 12) {
        mont_mul_chain_12<P>(t, a.v, b.v);
    } else {
        static_assert(P::N == 8, "no carry-chain product for this limb count");
        if constexpr (kFoldFr && P::mod(0) == 1u && P::mod(1) == 0xffffffffu) mont_mul_fold_chain_8<P>(t, a.v, b.v);
        else mont_mul_chain_8<P>(t, a.v, b.v);
    }
    fe_reduce_once(r, t, t[P::N]);
}
#endif

// A fixed multiplicand for Shoup's product: w < p as a plain integer (not Montgomery
// form) and ws = floor(w*2^(32N)/p). a*w mod p keeps a's form, so multiplying a
// Montgomery-form a by w gives the same words as the Montgomery product of a and
// w*R mod p. About 180 instead of the Montgomery product's 224 multiply-adds for Fr
// (mont_chain.cuh's shoup chains); ws doubles the multiplicand's storage, so it pays
// where the multiplicands are a table used many times, like the twiddles of the NTT's
// passes that several groups share (ntt.cu's ntt_shoup_pass).
template <class P>
struct CUZK_FE_ALIGN fe_shoup {
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

// r = a*b - c*d. With the carry chains the two products are subtracted unreduced
// (p*2^(32N) added on a borrow; sub_wide_mod_chain_N) and reduced once: one reduction,
// one final subtraction and one modular subtraction fewer than two products and a
// difference. The point formulas' Y3 takes this form. -DCUZK_MULSUB_SPLIT: two products
// and a difference (A/B runs).
template <class P>
__device__ __forceinline__ void fe_mul_sub(fe<P>& r, const fe<P>& a, const fe<P>& b, const fe<P>& c,
                                           const fe<P>& d) {
#if defined(CUZK_FE_WIDE) && !defined(CUZK_MULSUB_SPLIT)
    uint32_t x[2 * P::N], y[2 * P::N];
    fe_wide(x, a, b);
    fe_wide(y, c, d);
    if constexpr (P::N == 12) sub_wide_mod_chain_12<P>(x, x, y);
    else sub_wide_mod_chain_8<P>(x, x, y);
    fe_redc(r, x);
#else
    fe<P> x, y;
    fe_mul(x, a, b);
    fe_mul(y, c, d);
    fe_sub(r, x, y);
#endif
}

// Lazily reduced values in [0, 2p), for a hot loop's intermediate values (G1's
// accumulation; msm.cuh). BLS12-381's p < 2^381 leaves the room: a Montgomery product
// of operands below 2p is below 2p without its final subtraction (4p < 2^384), a
// difference is taken modulo 2p, and a*b - c*d stays below p*2^384 before its
// reduction (4p^2 < p*2^384). Each product saves the
// final subtraction (about 25 instructions); zero becomes 0 or p. Carry chains only.
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
#if defined(CUZK_FE_WIDE)
template <class P>
__device__ __forceinline__ void lz_mul(fe<P>& r, const fe<P>& a, const fe<P>& b) {
    uint32_t t[P::N + 1];
    if constexpr (P::N == 12) {
        mont_mul_chain_12<P>(t, a.v, b.v);  // t[12] = 0: the product is below 2p
    } else {
        static_assert(P::N == 8 && kFoldFr && P::mod(0) == 1u && P::mod(1) == 0xffffffffu,
                      "Fr's lazy product is the folded one (b below r)");
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
#endif

// The square is the product a*a. The carry-chain square without the products below
// the diagonal (mont_sqr_chain_N: 78 instead of 144 limb products for Fp) measured
// slower on the H200, same run: Fp 24.8 -> 17.5 Gsqr/s, Fr 46.4 -> 29.7, G1 MSM 2^24
// 142.8 -> 161.4 ms (its three serial 2N-word carry chains and the separate reduction
// cost more than the products saved; docs/lab/BENCHMARKS.md). -DCUZK_SQR_CHAIN selects it.
#if defined(CUZK_SQR_CHAIN) && !defined(CUZK_MUL64) && !defined(CUZK_MUL_CIOS)
template <class P>
__device__ __forceinline__ void fe_sqr(fe<P>& r, const fe<P>& a) {
    uint32_t t[P::N + 1];
    if constexpr (P::N == 12) {
        mont_sqr_chain_12<P>(t, a.v);
    } else {
        static_assert(P::N == 8, "no carry-chain square for this limb count");
        mont_sqr_chain_8<P>(t, a.v);
    }
    fe_reduce_once(r, t, t[P::N]);
}
#else
template <class P>
__device__ __forceinline__ void fe_sqr(fe<P>& r, const fe<P>& a) { fe_mul(r, a, a); }
#endif

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
