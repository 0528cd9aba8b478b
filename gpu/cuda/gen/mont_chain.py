#!/usr/bin/env python3
"""Writes ../mont_chain.cuh: the Montgomery product as PTX carry chains (see that file).

Run from this folder: python3 mont_chain.py > ../mont_chain.cuh
"""
import os
import sys

MODE = os.environ.get("MONT_MODE", "split")


def asm_block(instrs, outs, ins):
    """One asm statement: instrs use {o:name} / {i:name} placeholders."""
    onames = [o for o, _ in outs]
    inames = [i for i, _ in ins]
    idx = {}
    for k, n in enumerate(onames):
        idx["o:" + n] = k
    for k, n in enumerate(inames):
        idx["i:" + n] = len(onames) + k

    def sub(s):
        out, i = "", 0
        while i < len(s):
            if s[i] == "{":
                j = s.index("}", i)
                out += "%%%d" % idx[s[i + 1:j]]
                i = j + 1
            else:
                out += s[i]
                i += 1
        return out

    body = "".join('        "%s;\\n\\t"\n' % sub(l) for l in instrs)
    oc = ", ".join('"%s"(%s)' % ce for _, ce in outs)
    ic = ", ".join('"%s"(%s)' % ce for _, ce in ins)
    return "    asm(\n%s        : %s\n        : %s);\n" % (body, oc, ic)


def gen(N):
    o = []
    w = o.append
    w("template <class P>\n")
    w("__device__ __forceinline__ void mont_mul_chain_%d(uint32_t* r, const uint32_t* a, const uint32_t* b) {\n" % N)
    w("    static_assert(P::N == %d, \"limb count\");\n" % N)
    w("    uint32_t E[%d], O[%d], m, c0 = 0;\n" % (N + 1, N + 2))
    for i in range(N):
        # product row: E gets a[even] (lo at j, hi at j+1), O gets a[odd].
        outs_e, ins_e, ins_o, outs_o = [], [], [], []
        ie, io = [], []
        if i == 0:
            for j in range(0, N, 2):
                ie.append("mul.lo.u32 {o:E%d}, {i:a%d}, {i:b}" % (j, j))
                ie.append("mul.hi.u32 {o:E%d}, {i:a%d}, {i:b}" % (j + 1, j))
                io.append("mul.lo.u32 {o:O%d}, {i:a%d}, {i:b}" % (j + 1, j + 1))
                io.append("mul.hi.u32 {o:O%d}, {i:a%d}, {i:b}" % (j + 2, j + 1))
            w(asm_block(ie, [("E%d" % k, ("=r", "E[%d]" % k)) for k in range(N)],
                        [("a%d" % j, ("r", "a[%d]" % j)) for j in range(0, N, 2)] + [("b", ("r", "b[0]"))]))
            w(asm_block(io, [("O%d" % k, ("=r", "O[%d]" % k)) for k in range(1, N + 1)],
                        [("a%d" % j, ("r", "a[%d]" % j)) for j in range(1, N, 2)] + [("b", ("r", "b[0]"))]))
            w("    E[%d] = 0;\n    O[0] = 0;\n    O[%d] = 0;\n" % (N, N + 1))
        else:
            for j in range(0, N, 2):
                ie.append("mad%s.lo.cc.u32 {o:E%d}, {i:a%d}, {i:b}, {o:E%d}" % ("" if j == 0 else "c", j, j, j))
                ie.append("madc.hi.cc.u32 {o:E%d}, {i:a%d}, {i:b}, {o:E%d}" % (j + 1, j, j + 1))
            ie.append("addc.u32 {o:E%d}, 0, 0" % N)
            for j in range(1, N, 2):
                io.append("mad%s.lo.cc.u32 {o:O%d}, {i:a%d}, {i:b}, {o:O%d}" % ("" if j == 1 else "c", j, j, j))
                io.append("madc.hi.cc.u32 {o:O%d}, {i:a%d}, {i:b}, {o:O%d}" % (j + 1, j, j + 1))
            io.append("addc.u32 {o:O%d}, 0, 0" % (N + 1))
            oe = [("E%d" % k, ("+r" if k < N else "=r", "E[%d]" % k)) for k in range(N + 1)]
            oo = [("O%d" % k, ("+r" if k < N + 1 else "=r", "O[%d]" % k)) for k in range(1, N + 2)]
            ine = [("a%d" % j, ("r", "a[%d]" % j)) for j in range(0, N, 2)] + [("b", ("r", "b[%d]" % i))]
            ino = [("a%d" % j, ("r", "a[%d]" % j)) for j in range(1, N, 2)]
            if MODE == "row":
                w(asm_block(ie + io, oe + oo, ine + ino))
            else:
                w(asm_block(ie, oe, ine))
                w(asm_block(io, oo, ino + [("b", ("r", "b[%d]" % i))]))
        # reduction row: T += m*p with m chosen so that T's low word becomes zero.
        w("    m = (E[0] + O[0] + c0) * P::inv;\n")
        re, ro = [], []
        for j in range(0, N, 2):
            re.append("mad%s.lo.cc.u32 {o:E%d}, {i:m}, {i:p%d}, {o:E%d}" % ("" if j == 0 else "c", j, j, j))
            re.append("madc.hi.cc.u32 {o:E%d}, {i:m}, {i:p%d}, {o:E%d}" % (j + 1, j, j + 1))
        re.append("addc.u32 {o:E%d}, {o:E%d}, 0" % (N, N))
        for j in range(1, N, 2):
            ro.append("mad%s.lo.cc.u32 {o:O%d}, {i:m}, {i:p%d}, {o:O%d}" % ("" if j == 1 else "c", j, j, j))
            ro.append("madc.hi.cc.u32 {o:O%d}, {i:m}, {i:p%d}, {o:O%d}" % (j + 1, j, j + 1))
        ro.append("addc.u32 {o:O%d}, {o:O%d}, 0" % (N + 1, N + 1))
        oe = [("E%d" % k, ("+r", "E[%d]" % k)) for k in range(N + 1)]
        oo = [("O%d" % k, ("+r", "O[%d]" % k)) for k in range(1, N + 2)]
        ine = [("m", ("r", "m"))] + [("p%d" % j, ("n", "P::mod(%d)" % j)) for j in range(0, N, 2)]
        ino = [("p%d" % j, ("n", "P::mod(%d)" % j)) for j in range(1, N, 2)]
        if MODE == "row":
            w(asm_block(re + ro, oe + oo, ine + ino))
        else:
            w(asm_block(re, oe, ine))
            w(asm_block(ro, oo, [("m", ("r", "m"))] + ino))
        # the low word is now zero: keep its carry, shift one word down.
        w("    c0 = (uint32_t)(((uint64_t)E[0] + O[0] + c0) >> 32);\n")
        w("#pragma unroll\n    for (int k = 0; k < %d; k++) E[k] = E[k + 1];\n" % N)
        w("#pragma unroll\n    for (int k = 0; k < %d; k++) O[k] = O[k + 1];\n" % (N + 1))
    # T = E + O + c0 < 2p: merge, then the caller reduces once.
    mi = ["add.cc.u32 {o:r0}, {i:E0}, {i:O0}"]
    for k in range(1, N):
        mi.append("addc.cc.u32 {o:r%d}, {i:E%d}, {i:O%d}" % (k, k, k))
    mi.append("addc.u32 {o:r%d}, {i:O%d}, 0" % (N, N))
    mi.append("add.cc.u32 {o:r0}, {o:r0}, {i:c0}")
    for k in range(1, N):
        mi.append("addc.cc.u32 {o:r%d}, {o:r%d}, 0" % (k, k))
    mi.append("addc.u32 {o:r%d}, {o:r%d}, 0" % (N, N))
    w(asm_block(mi, [("r%d" % k, ("=r", "r[%d]" % k)) for k in range(N + 1)],
                [("E%d" % k, ("r", "E[%d]" % k)) for k in range(N)] + [("O%d" % k, ("r", "O[%d]" % k)) for k in range(N + 1)]
                + [("c0", ("r", "c0"))]))
    w("}\n\n")
    return "".join(o)


def main():
    out = sys.stdout
    out.write("// Code generated by gen/mont_chain.py; DO NOT EDIT.\n")
    out.write("//\n")
    out.write("// Montgomery product (CIOS) as PTX carry chains. The running sum T is kept as two\n")
    out.write("// numbers, E (products of even limbs of a: low half at word j, high half at j+1) and\n")
    out.write("// O (odd limbs), so each row is two independent chains of carry-propagating\n")
    out.write("// multiply-adds (mad.lo.cc / madc.hi.cc): no separate carry additions, and ptxas can\n")
    out.write("// interleave the two chains. After each reduction row T's low word is zero; its carry\n")
    out.write("// c0 (0..2) is kept aside and the words shift down by one. r receives T = E + O + c0\n")
    out.write("// in N+1 words (< 2p); the caller subtracts p once if needed.\n")
    out.write("#pragma once\n#include <stdint.h>\n\n")
    for N in (12, 8):
        out.write(gen(N))


main()
