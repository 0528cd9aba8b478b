// bls12_381.cuh: the BLS12-381 base field Fp, scalar field Fr and Fp2 = Fp[u]/(u^2+1).
#pragma once
#include "field.cuh"

struct fp_params {
    static constexpr int N = 12;
    static constexpr uint32_t inv = 0xfffcfffdu;
    __host__ __device__ static constexpr uint32_t mod(int i) {
        switch (i) { case 0: return 0xffffaaabu; case 1: return 0xb9feffffu; case 2: return 0xb153ffffu; case 3: return 0x1eabfffeu; case 4: return 0xf6b0f624u; case 5: return 0x6730d2a0u; case 6: return 0xf38512bfu; case 7: return 0x64774b84u; case 8: return 0x434bacd7u; case 9: return 0x4b1ba7b6u; case 10: return 0x397fe69au; case 11: return 0x1a0111eau; default: return 0; }
    }
    __host__ __device__ static constexpr uint32_t one(int i) {
        switch (i) { case 0: return 0x0002fffdu; case 1: return 0x76090000u; case 2: return 0xc40c0002u; case 3: return 0xebf4000bu; case 4: return 0x53c758bau; case 5: return 0x5f489857u; case 6: return 0x70525745u; case 7: return 0x77ce5853u; case 8: return 0xa256ec6du; case 9: return 0x5c071a97u; case 10: return 0xfa80e493u; case 11: return 0x15f65ec3u; default: return 0; }
    }
};

struct fr_params {
    static constexpr int N = 8;
    static constexpr uint32_t inv = 0xffffffffu;
    __host__ __device__ static constexpr uint32_t mod(int i) {
        switch (i) { case 0: return 0x00000001u; case 1: return 0xffffffffu; case 2: return 0xfffe5bfeu; case 3: return 0x53bda402u; case 4: return 0x09a1d805u; case 5: return 0x3339d808u; case 6: return 0x299d7d48u; case 7: return 0x73eda753u; default: return 0; }
    }
    __host__ __device__ static constexpr uint32_t one(int i) {
        switch (i) { case 0: return 0xfffffffeu; case 1: return 0x00000001u; case 2: return 0x00034802u; case 3: return 0x5884b7fau; case 4: return 0xecbc4ff5u; case 5: return 0x998c4fefu; case 6: return 0xacc5056fu; case 7: return 0x1824b159u; default: return 0; }
    }
};

typedef fe<fp_params> fp_t;
typedef fe<fr_params> fr_t;

struct fp2_t {
    fp_t c0, c1;
};

__device__ __forceinline__ bool fe_is_zero(const fp2_t& a) { return fe_is_zero(a.c0) && fe_is_zero(a.c1); }
__device__ __forceinline__ bool fe_eq(const fp2_t& a, const fp2_t& b) { return fe_eq(a.c0, b.c0) && fe_eq(a.c1, b.c1); }
__device__ __forceinline__ void fe_zero(fp2_t& a) { fe_zero(a.c0); fe_zero(a.c1); }
__device__ __forceinline__ void fe_one(fp2_t& a) { fe_one(a.c0); fe_zero(a.c1); }
__device__ __forceinline__ void fe_add(fp2_t& r, const fp2_t& a, const fp2_t& b) {
    fe_add(r.c0, a.c0, b.c0);
    fe_add(r.c1, a.c1, b.c1);
}
__device__ __forceinline__ void fe_sub(fp2_t& r, const fp2_t& a, const fp2_t& b) {
    fe_sub(r.c0, a.c0, b.c0);
    fe_sub(r.c1, a.c1, b.c1);
}
__device__ __forceinline__ void fe_neg(fp2_t& r, const fp2_t& a) { fe_neg(r.c0, a.c0); fe_neg(r.c1, a.c1); }
__device__ __forceinline__ void fe_dbl(fp2_t& r, const fp2_t& a) { fe_add(r, a, a); }
// The Fp products inside Fp2 arithmetic are calls of one function: every Fp product
// inlined, G2's mixed addition is tens of thousands of instructions, and Nsight Compute
// on the H200 found its accumulation kernel stalled half the time on instruction fetch.
// As calls, G2 MSM 2^22 247.5 -> 120.3 ms, 2^24 850.6 -> 431.3, one 2^22 proof 417.6 ->
// 312.2 (same compiler, one run; making the Fp2 product and square the calls instead
// measured 9% slower; docs/lab/BENCHMARKS.md). Operands pass by value, so they stay in
// registers.
static __device__ __noinline__ fp_t fp_mul_call(fp_t a, fp_t b) {
    fp_t r;
    fe_mul(r, a, b);
    return r;
}
__device__ __forceinline__ void fp2_fp_mul(fp_t& r, const fp_t& a, const fp_t& b) { r = fp_mul_call(a, b); }

// Karatsuba: 3 Fp products. (With lazy reduction, 3 wide products and 2 reductions,
// the product alone was 4% faster but G2's addition spilled: G2 MSM 2^24 +15%.)
__device__ __forceinline__ void fe_mul(fp2_t& r, const fp2_t& a, const fp2_t& b) {
    fp_t v0, v1, s, t;
    fp2_fp_mul(v0, a.c0, b.c0);
    fp2_fp_mul(v1, a.c1, b.c1);
    fe_add(s, a.c0, a.c1);
    fe_add(t, b.c0, b.c1);
    fp2_fp_mul(s, s, t);
    fe_sub(r.c0, v0, v1);
    fe_sub(s, s, v0);
    fe_sub(r.c1, s, v1);
}
// (a0 + a1 u)^2 = (a0+a1)(a0-a1) + 2 a0 a1 u: 2 Fp products.
__device__ __forceinline__ void fe_sqr(fp2_t& r, const fp2_t& a) {
    fp_t s, d, m;
    fe_add(s, a.c0, a.c1);
    fe_sub(d, a.c0, a.c1);
    fp2_fp_mul(m, a.c0, a.c1);
    fp2_fp_mul(r.c0, s, d);
    fe_add(r.c1, m, m);
}

__device__ __forceinline__ void fe_mul_sub(fp2_t& r, const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d) {
    fp2_t x, y;
    fe_mul(x, a, b);
    fe_mul(y, c, d);
    fe_sub(r, x, y);
}

// (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2): one Fp inversion.
__device__ __forceinline__ void fe_inv(fp2_t& r, const fp2_t& a) {
    fp_t t0, t1, n;
    fe_sqr(t0, a.c0);
    fe_sqr(t1, a.c1);
    fe_add(n, t0, t1);
    fe_inv(n, n);
    fe_mul(r.c0, a.c0, n);
    fe_mul(t1, a.c1, n);
    fe_neg(r.c1, t1);
}
