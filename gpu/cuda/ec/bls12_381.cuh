// ec/bls12_381.cuh: BLS12-381's groups as the curve parameter of the MSM and of the
// fixed-base multiplication. G1 is y^2 = x^3 + 4 over Fp, G2 the twist over Fp2; both
// are short Weierstrass with a = 0, so xyzz.cuh's formulas serve both, over the field
// the curve names. A translation unit that inlines the point operations defines
// CUZK_POINT_FN before including this (see xyzz.cuh).
#pragma once
#include "ff/bls12_381.cuh"
#include "ec/xyzz.cuh"

struct g1_curve {
    typedef fp_t field;
    static constexpr int group = 1;  // the C ABI's group number
    static constexpr const char* name = "g1";
};

struct g2_curve {
    typedef fp2_t field;
    static constexpr int group = 2;
    static constexpr const char* name = "g2";
};
