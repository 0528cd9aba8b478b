#!/usr/bin/env python3
"""Writes ../ff/mont_chain.cuh: the Montgomery product as PTX carry chains (see that file).

Run from this folder: python3 mont_chain.py > ../ff/mont_chain.cuh
"""
import sys

# BLS12-381's scalar field modulus r (Fr), for the folded product's constant.
FR = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001


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


def rows(w, N):
    """Returns row(i, mult, src, imm): one chain per accumulator adding mult * src[j]
    (or mult * P::mod(j) when imm) at word positions q = i + j."""

    def row(i, mult, src, imm, jlo=0, accs=("X", "Y"), src_off=0, qlo=0):
        # one chain per accumulator: pairs (q, q+1) for q = i+j of its parity, then the
        # carry into word q+2. The chains' top pairs never move down, so word q+2 holds
        # nothing but a few earlier chains' carries when this one adds its own: it
        # cannot wrap, and one addition ends the chain (check_mont_chain.py flags any
        # wrapped top word). A second addition, always of zero, cost Fr's NTT pass 32
        # of 493 SASS instructions and G1 2^24 6 ms (119.8 against 113.9 ms).
        # Squaring's rows start at jlo = i+1 (the products a_i*a_j above the diagonal).
        # Karatsuba's rows take their own accumulators and src from word src_off.
        # Shoup's quotient rows take only columns q >= qlo > 0, the pair at qlo its
        # high word alone.
        for acc, par in ((accs[0], 0), (accs[1], 1)):
            ins, qs = [], []
            for j in range(jlo, N):
                q = i + j
                if q % 2 == par and q >= qlo:
                    qs.append((q, j))
            if not qs:
                continue
            used = set()
            for k, (q, j) in enumerate(qs):
                op = "mad" if k == 0 else "madc"
                if qlo and q == qlo:
                    ins.append("%s.hi.cc.u32 {o:%s%d}, {i:m}, {i:s%d}, {o:%s%d}" % (op, acc, q + 1, j, acc, q + 1))
                    used.add(q + 1)
                    continue
                ins.append("%s.lo.cc.u32 {o:%s%d}, {i:m}, {i:s%d}, {o:%s%d}" % (op, acc, q, j, acc, q))
                ins.append("madc.hi.cc.u32 {o:%s%d}, {i:m}, {i:s%d}, {o:%s%d}" % (acc, q + 1, j, acc, q + 1))
                used.update((q, q + 1))
            q = qs[-1][0] + 2
            ins.append("addc.u32 {o:%s%d}, {o:%s%d}, 0" % (acc, q, acc, q))
            used.add(q)
            outs = [("%s%d" % (acc, k), ("+r", "%s[%d]" % (acc, k))) for k in sorted(used)]
            srcs = [("s%d" % j, ("n", "P::mod(%d)" % j) if imm else ("r", "%s[%d]" % (src, src_off + j))) for (_, j) in qs]
            w(asm_block(ins, outs, [("m", ("r", mult))] + srcs))

    return row


def prologue(w, N, scalars=", m, c = 0"):
    W = 2 * N + 4
    w("    static_assert(P::N == %d, \"limb count\");\n" % N)
    w("    uint32_t X[%d], Y[%d]%s;\n" % (W, W, scalars))
    w("#pragma unroll\n    for (int k = 0; k < %d; k++) X[k] = Y[k] = 0;\n" % W)


def xy_top_sum(N):
    """The chain r[0..N] = words N..2N of X + Y (the top carry is known to be zero)."""
    mi = ["add.cc.u32 {o:r0}, {i:X%d}, {i:Y%d}" % (N, N)]
    for k in range(1, N + 1):
        mi.append("addc.cc.u32 {o:r%d}, {i:X%d}, {i:Y%d}" % (k, N + k, N + k))
    mi[-1] = mi[-1].replace("addc.cc", "addc")
    return mi


def final_sum(N, k_hi=None):
    """T = words N..2N+1 of X + Y, plus c at word N, into r[0..N]. k_hi: constant words
    added at words N+1..2N (immediates of the carry additions)."""
    k_hi = k_hi or [0] * N
    assert len(k_hi) == N
    mi = xy_top_sum(N)
    mi.append("add.cc.u32 {o:r0}, {o:r0}, {i:c}")
    for k in range(1, N):
        mi.append("addc.cc.u32 {o:r%d}, {o:r%d}, %d" % (k, k, k_hi[k - 1]))
    mi.append("addc.u32 {o:r%d}, {o:r%d}, %d" % (N, N, k_hi[N - 1]))
    return asm_block(mi, [("r%d" % k, ("=r", "r[%d]" % k)) for k in range(N + 1)],
                     [("X%d" % k, ("r", "X[%d]" % k)) for k in range(N, 2 * N + 1)]
                     + [("Y%d" % k, ("r", "Y[%d]" % k)) for k in range(N, 2 * N + 1)] + [("c", ("r", "c"))])


def gen(N):
    """Accumulators at absolute word positions: X holds 64-bit pairs starting at even
    positions, Y pairs starting at odd ones, so a product landing at position q (low
    word) and q+1 goes to X or Y by the parity of q and every pair stays the same
    register pair for the whole product: no shifts, no moves."""
    o = []
    w = o.append
    w("template <class P>\n")
    w("__device__ __forceinline__ void mont_mul_chain_%d(uint32_t* r, const uint32_t* a, const uint32_t* b) {\n" % N)
    prologue(w, N)
    row = rows(w, N)
    for i in range(N):
        row(i, "b[%d]" % i, "a", False)
        w("    m = (X[%d] + Y[%d] + c) * mont_inv<P>();\n" % (i, i))
        row(i, "m", None, True)
        w("    c = (uint32_t)(((uint64_t)X[%d] + Y[%d] + c) >> 32);\n" % (i, i))
    w(final_sum(N))
    w("}\n\n")
    return "".join(o)


def gen_fold(N, mod):
    """The product for a modulus with p = 2^64 - 2^32 + 1 mod 2^64 (Fr): each row's m is
    2^32 - t_i (t_i word i of the running sum), always a valid Montgomery multiple, and
    m*(p_0 + p_1 2^32) added to word i leaves word i zero with a carry of exactly
    H + 1 (H the sum's carry out), t_i at word i+1 and mu = ~t_i at word i+2: two
    additions instead of two wide multiply-adds, and no multiply for m. The other
    pairs take mu = m - 1 and the leftover m*p_j - mu*p_j = p_j, like the +1 of every
    carry, is the same for every operand, so it is summed once (F below) into the
    accumulators' starting words. m <= 2^32 keeps T/2^(32N) < a*b/2^(32N) + p(1 + 2^-31),
    below 2p for a, b < p (and a < 2p, b < p)."""
    assert mod & ((1 << 64) - 1) == (1 << 64) - (1 << 32) + 1
    P_hi = mod >> 64
    F = sum((1 << (32 * (i + 1))) + (P_hi << (32 * (i + 2))) for i in range(N))
    o = []
    w = o.append
    w("template <class P>\n")
    w("__device__ __forceinline__ void mont_mul_fold_chain_%d(uint32_t* r, const uint32_t* a, const uint32_t* b) {\n" % N)
    w("    static_assert(P::mod(0) == 1u && P::mod(1) == 0xffffffffu, \"modulus without the folded low words\");\n")
    prologue(w, N, ", t, mu, c = 0")
    # F's words below N start X (each row's m needs its word whole); the words from N
    # up join the final sum as immediates, so no chain ever carries into a word that
    # is not zero above it (the invariant of rows()).
    Fw = [(F >> (32 * k)) & 0xffffffff for k in range(2 * N + 1)]
    assert F >> (32 * (2 * N + 1)) == 0 and Fw[0] == 0
    for k in range(1, N):
        if Fw[k]:
            w("    X[%d] = 0x%08xu;\n" % (k, Fw[k]))
    row = rows(w, N)
    for i in range(N):
        row(i, "b[%d]" % i, "a", False)
        w("    t = X[%d] + Y[%d] + c;\n" % (i, i))
        w("    c = (uint32_t)(((uint64_t)X[%d] + Y[%d] + c) >> 32);\n" % (i, i))
        w("    mu = ~t;\n")
        # chain of parity i+1: t at word i+1, mu at i+2, then mu*p_j for odd j >= 3
        # (pairs at i+j, i+j+1); chain of parity i: mu*p_j for even j >= 2.
        for acc, par in (("X", 0), ("Y", 1)):
            js = [j for j in range(2, N) if (i + j) % 2 == par]
            ins, used = [], set()
            lead = (i + 1) % 2 == par
            if lead:
                ins.append("add.cc.u32 {o:%s%d}, {o:%s%d}, {i:t}" % (acc, i + 1, acc, i + 1))
                ins.append("addc.cc.u32 {o:%s%d}, {o:%s%d}, {i:mu}" % (acc, i + 2, acc, i + 2))
                used.update((i + 1, i + 2))
            for k, j in enumerate(js):
                q = i + j
                op = "mad" if k == 0 and not lead else "madc"
                ins.append("%s.lo.cc.u32 {o:%s%d}, {i:mu}, {i:s%d}, {o:%s%d}" % (op, acc, q, j, acc, q))
                ins.append("madc.hi.cc.u32 {o:%s%d}, {i:mu}, {i:s%d}, {o:%s%d}" % (acc, q + 1, j, acc, q + 1))
                used.update((q, q + 1))
            q = max(used) + 1  # one carry addition, as in rows()
            ins.append("addc.u32 {o:%s%d}, {o:%s%d}, 0" % (acc, q, acc, q))
            used.add(q)
            outs = [("%s%d" % (acc, k), ("+r", "%s[%d]" % (acc, k))) for k in sorted(used)]
            ins_ops = [("mu", ("r", "mu"))] + ([("t", ("r", "t"))] if lead else [])
            ins_ops += [("s%d" % j, ("n", "P::mod(%d)" % j)) for j in js]
            w(asm_block(ins, outs, ins_ops))
    # c <= 2 (the carry out of a sum of three words), so c + F's word N cannot wrap.
    assert Fw[N] < (1 << 32) - 2
    w("    c += 0x%08xu;\n" % Fw[N])
    w(final_sum(N, Fw[N + 1:]))
    w("}\n\n")
    return "".join(o)


def gen_shoup(N, mod):
    """The product a*w mod p by a fixed w < p with ws = floor(w*2^(32N)/p) given beside
    it (Shoup's product; the NTT's twiddles): q = floor(a*ws/2^(32N)) is at most
    floor(a*w/p) and at least one less (a*w/p - a*ws/2^(32N) = a*f/2^(32N) < p/2^(32N)
    for the fraction f < 1 left out of ws, below 0.46 for Fr), so a*w - q*p is in
    [0, 2p): below 2^(32N), computed modulo 2^(32N). Neither half needs the other's
    words: shoup_q_chain_N takes the product's columns from N-1 up (the high words of
    the pairs at N-2 and every pair above; the columns below add less than 2^(32N-26),
    so q can fall short by a further 1 only if the dropped part carries: the bound
    above keeps the total shortfall below one), shoup_lo_chain_N the columns below N
    of a*w + q*(2^(32N) - p). Fr's -p mod 2^64 = 2^32 - 1: its word 0 times q is
    (q << 32) - q, two additions of q in place of eight wide multiply-adds. About 80
    + 64 + 36 of the Montgomery product's 224 multiply-adds for Fr."""
    assert mod & ((1 << 64) - 1) == (1 << 64) - (1 << 32) + 1
    negp = (1 << (32 * N)) - mod
    nw = [(negp >> (32 * k)) & 0xffffffff for k in range(N)]
    assert nw[0] == 0xffffffff and nw[1] == 0
    o = []
    w = o.append
    npinv = (-pow(mod, -1, 1 << (32 * N))) % (1 << (32 * N))
    w("// -r^-1 mod 2^%d, word i: a twiddle's ws from its Montgomery form (field.cuh).\n" % (32 * N))
    w("__host__ __device__ constexpr uint32_t shoup_npinv_%d(int i) {\n    switch (i) {\n" % N)
    for k in range(N):
        w("    case %d: return 0x%08xu;\n" % (k, (npinv >> (32 * k)) & 0xffffffff))
    w("    default: return 0;\n    }\n}\n\n")
    chk = " && ".join("P::mod(%d) == 0x%08xu" % (k, (mod >> (32 * k)) & 0xffffffff) for k in range(N))
    # q: rows a_i * ws_j over columns q = i + j >= N - 2 (the pair at N - 2 only its high
    # word: rows()'s qlo); then words N..2N-1 of X + Y.
    w("template <class P>\n")
    w("__device__ __forceinline__ void shoup_q_chain_%d(uint32_t* q, const uint32_t* a, const uint32_t* ws) {\n" % N)
    w("    static_assert(P::N == %d && %s, \"Shoup's product is generated for Fr\");\n" % (N, chk))
    W = 2 * N + 2
    w("    uint32_t X[%d], Y[%d];\n" % (W, W))
    w("#pragma unroll\n    for (int k = 0; k < %d; k++) X[k] = Y[k] = 0;\n" % W)
    row = rows(w, N)
    for i in range(N):
        row(i, "a[%d]" % i, "ws", False, qlo=N - 2)
    # the words from 2N up sum to zero (a*ws < 2^(64N)); word N-1 gives its carry only
    mi = ["add.cc.u32 {o:q0}, {i:X%d}, {i:Y%d}" % (N - 1, N - 1)]  # only its carry
    for k in range(N):
        mi.append("addc%s.u32 {o:q%d}, {i:X%d}, {i:Y%d}" % (".cc" if k < N - 1 else "", k, N + k, N + k))
    w(asm_block(mi, [("q%d" % k, ("=r", "q[%d]" % k)) for k in range(N)],
                [("X%d" % k, ("r", "X[%d]" % k)) for k in range(N - 1, 2 * N)]
                + [("Y%d" % k, ("r", "Y[%d]" % k)) for k in range(N - 1, 2 * N)]))
    w("}\n\n")

    # r = a*w + q*(-p) mod 2^(32N): rows truncated at column N-1 (its pairs' low words
    # only; no chain carries out of word N-1).
    w("template <class P>\n")
    w("__device__ __forceinline__ void shoup_lo_chain_%d(uint32_t* r, const uint32_t* a, const uint32_t* w, const uint32_t* q) {\n" % N)
    w("    static_assert(P::N == %d && %s, \"Shoup's product is generated for Fr\");\n" % (N, chk))
    w("    uint32_t U[%d], V[%d];\n" % (N, N))
    w("#pragma unroll\n    for (int k = 0; k < %d; k++) U[k] = V[k] = 0;\n" % N)

    def low_row(i, mult, src, jlo):
        for acc, par in (("U", 0), ("V", 1)):
            qs = [(i + j, j) for j in range(jlo, N) if i + j <= N - 1 and (i + j) % 2 == par]
            if not qs:
                continue
            ins, used = [], set()
            for k, (qq, j) in enumerate(qs):
                c = "c" if k else ""
                ins.append("mad%s.lo.cc.u32 {o:%s%d}, {i:m}, {i:s%d}, {o:%s%d}" % (c, acc, qq, j, acc, qq))
                used.add(qq)
                if qq + 1 <= N - 1:
                    ins.append("madc.hi.cc.u32 {o:%s%d}, {i:m}, {i:s%d}, {o:%s%d}" % (acc, qq + 1, j, acc, qq + 1))
                    used.add(qq + 1)
            ins[-1] = ins[-1].replace(".cc.u32", ".u32")  # the carry out of word N-1 drops
            outs = [("%s%d" % (acc, k), ("+r", "%s[%d]" % (acc, k))) for k in sorted(used)]
            if src is None:
                srcs = [("s%d" % j, ("n", "0x%08xu" % nw[j])) for (_, j) in qs]
            else:
                srcs = [("s%d" % j, ("r", "%s[%d]" % (src, j))) for (_, j) in qs]
            w(asm_block(ins, outs, [("m", ("r", mult))] + srcs))

    for i in range(N):
        low_row(i, "a[%d]" % i, "w", 0)
    for i in range(N):
        low_row(i, "q[%d]" % i, None, 2)
    mi = ["add.cc.u32 {o:r0}, {i:U0}, {i:V0}"]
    for k in range(1, N):
        mi.append("addc%s.u32 {o:r%d}, {i:U%d}, {i:V%d}" % (".cc" if k < N - 1 else "", k, k, k))
    mi.append("add.cc.u32 {o:r1}, {o:r1}, {i:q0}")
    for k in range(2, N):
        mi.append("addc%s.u32 {o:r%d}, {o:r%d}, {i:q%d}" % (".cc" if k < N - 1 else "", k, k, k - 1))
    mi.append("sub.cc.u32 {o:r0}, {o:r0}, {i:q0}")
    for k in range(1, N):
        mi.append("subc%s.u32 {o:r%d}, {o:r%d}, {i:q%d}" % (".cc" if k < N - 1 else "", k, k, k))
    w(asm_block(mi, [("r%d" % k, ("=r", "r[%d]" % k)) for k in range(N)],
                [("U%d" % k, ("r", "U[%d]" % k)) for k in range(N)]
                + [("V%d" % k, ("r", "V[%d]" % k)) for k in range(N)]
                + [("q%d" % k, ("r", "q[%d]" % k)) for k in range(N)]))
    w("}\n\n")
    return "".join(o)


def gen_wide(N):
    """The product a*b without reduction: the a*b_i rows of gen() alone, then
    t = X + Y (2N words; the words above 2N sum to zero since a*b < 2^(64N))."""
    o = []
    w = o.append
    w("template <class P>\n")
    w("__device__ __forceinline__ void mont_wide_chain_%d(uint32_t* t, const uint32_t* a, const uint32_t* b) {\n" % N)
    prologue(w, N, "")
    row = rows(w, N)
    for i in range(N):
        row(i, "b[%d]" % i, "a", False)
    mi = ["add.cc.u32 {o:t0}, {i:X0}, {i:Y0}"]
    for k in range(1, 2 * N):
        mi.append("addc.cc.u32 {o:t%d}, {i:X%d}, {i:Y%d}" % (k, k, k))
    mi[-1] = mi[-1].replace("addc.cc", "addc")
    w(asm_block(mi, [("t%d" % k, ("=r", "t[%d]" % k)) for k in range(2 * N)],
                [("X%d" % k, ("r", "X[%d]" % k)) for k in range(2 * N)]
                + [("Y%d" % k, ("r", "Y[%d]" % k)) for k in range(2 * N)]))
    w("}\n\n")
    return "".join(o)


def gen_redc(N):
    """Montgomery reduction of a 2N-word t < p*2^(32N): the m_i*p rows of gen() into
    X, Y (which start at zero, so each row's carries stay within the two words above
    it, as in gen()), with m_i taken from word i of t + X + Y. r receives words N..2N
    of t + X + Y + c (< 2p); the caller subtracts p once."""
    o = []
    w = o.append
    w("template <class P>\n")
    w("__device__ __forceinline__ void mont_redc_chain_%d(uint32_t* r, const uint32_t* t) {\n" % N)
    prologue(w, N)
    row = rows(w, N)
    for i in range(N):
        w("    m = (X[%d] + Y[%d] + t[%d] + c) * mont_inv<P>();\n" % (i, i, i))
        row(i, "m", None, True)
        w("    c = (uint32_t)(((uint64_t)X[%d] + Y[%d] + t[%d] + c) >> 32);\n" % (i, i, i))
    mi = xy_top_sum(N)
    mi.append("add.cc.u32 {o:r0}, {o:r0}, {i:T0}")
    for k in range(1, N):
        mi.append("addc.cc.u32 {o:r%d}, {o:r%d}, {i:T%d}" % (k, k, k))
    mi.append("addc.u32 {o:r%d}, {o:r%d}, 0" % (N, N))
    mi.append("add.cc.u32 {o:r0}, {o:r0}, {i:c}")
    for k in range(1, N):
        mi.append("addc.cc.u32 {o:r%d}, {o:r%d}, 0" % (k, k))
    mi.append("addc.u32 {o:r%d}, {o:r%d}, 0" % (N, N))
    w(asm_block(mi, [("r%d" % k, ("=r", "r[%d]" % k)) for k in range(N + 1)],
                [("X%d" % k, ("r", "X[%d]" % k)) for k in range(N, 2 * N + 1)]
                + [("Y%d" % k, ("r", "Y[%d]" % k)) for k in range(N, 2 * N + 1)]
                + [("T%d" % k, ("r", "t[%d]" % (N + k))) for k in range(N)] + [("c", ("r", "c"))]))
    w("}\n\n")
    return "".join(o)


def gen_sub_wide_mod(N):
    """d = x - y over 2N words, plus p at word N when that borrows: for x, y < p^2
    (two products of reduced operands) d stays below p*2^(32N), as the reduction
    needs, and d = x - y mod p*2^(32N). Lets a*b - c*d take one reduction."""
    o = []
    w = o.append
    W = 2 * N
    w("template <class P>\n")
    w("__device__ __forceinline__ void sub_wide_mod_chain_%d(uint32_t* d, const uint32_t* x, const uint32_t* y) {\n" % N)
    w("    static_assert(P::N == %d, \"limb count\");\n" % N)
    w("    uint32_t bw, pm[%d];\n" % N)
    mi = []
    for k in range(W):
        op = "sub.cc.u32" if k == 0 else "subc.cc.u32"
        mi.append("%s {o:d%d}, {i:x%d}, {i:y%d}" % (op, k, k, k))
    mi.append("subc.u32 {o:bw}, 0, 0")
    w(asm_block(mi, [("d%d" % k, ("=r", "d[%d]" % k)) for k in range(W)] + [("bw", ("=r", "bw"))],
                [("x%d" % k, ("r", "x[%d]" % k)) for k in range(W)] + [("y%d" % k, ("r", "y[%d]" % k)) for k in range(W)]))
    w("#pragma unroll\n    for (int k = 0; k < %d; k++) pm[k] = P::mod(k) & bw;\n" % N)
    mi = []
    for k in range(N):
        op = "add.cc.u32" if k == 0 else ("addc.u32" if k == N - 1 else "addc.cc.u32")
        mi.append("%s {o:d%d}, {o:d%d}, {i:p%d}" % (op, k, k, k))
    w(asm_block(mi, [("d%d" % k, ("+r", "d[%d]" % (N + k))) for k in range(N)],
                [("p%d" % k, ("r", "pm[%d]" % k)) for k in range(N)]))
    w("}\n\n")
    return "".join(o)


def gen_addsub(N, carry):
    """Modular addition, subtraction and the product's final subtraction as carry chains
    (operands below p, so a + b < 2p fits N words): the C++ forms with 64-bit
    intermediates cost an extra shift per word to extract each carry or borrow."""
    o = []
    w = o.append

    def chain(op, dst, x, y, n, tail=None):
        """dst = x op y over n words; x, y are (name, constraint-kind) pairs: "o" reads an
        output of the same block, "i" an input array, "n" the modulus' immediates."""
        mi = []
        for k in range(n):
            first = k == 0
            last = k == n - 1 and tail is None
            cc = "" if last else ".cc"
            ins = ("%s%s%s.u32" % (op, "" if first else "c", cc))
            mi.append("%s {o:%s%d}, {%s:%s%d}, {%s:%s%d}" % (ins, dst, k, x[1], x[0], k, y[1], y[0], k))
        if tail:
            mi.append(tail)
        return mi

    def outs(name, n, kind="=r"):
        return [("%s%d" % (name, k), (kind, "%s[%d]" % (name, k))) for k in range(n)]

    def ins(name, n):
        return [("%s%d" % (name, k), ("r", "%s[%d]" % (name, k))) for k in range(n)]

    def mods(n):
        return [("p%d" % k, ("n", "P::mod(%d)" % k)) for k in range(n)]

    select = "#pragma unroll\n    for (int k = 0; k < %d; k++) r[k] = (int32_t)bw < 0 ? t[k] : s[k];\n" % N
    w("template <class P>\n")
    w("__device__ __forceinline__ void add_mod_chain_%d(uint32_t* r, const uint32_t* a, const uint32_t* b) {\n" % N)
    w("    static_assert(P::N == %d, \"limb count\");\n" % N)
    w("    uint32_t t[%d], s[%d], bw;\n" % (N, N))
    mi = chain("add", "t", ("a", "i"), ("b", "i"), N)
    mi += chain("sub", "s", ("t", "o"), ("p", "i"), N, tail="subc.u32 {o:bw}, 0, 0")
    w(asm_block(mi, outs("t", N) + outs("s", N) + [("bw", ("=r", "bw"))], ins("a", N) + ins("b", N) + mods(N)))
    w(select)
    w("}\n\n")

    w("template <class P>\n")
    w("__device__ __forceinline__ void sub_mod_chain_%d(uint32_t* r, const uint32_t* a, const uint32_t* b) {\n" % N)
    w("    static_assert(P::N == %d, \"limb count\");\n" % N)
    w("    uint32_t d[%d], pm[%d], bw;\n" % (N, N))
    mi = chain("sub", "d", ("a", "i"), ("b", "i"), N, tail="subc.u32 {o:bw}, 0, 0")
    w(asm_block(mi, outs("d", N) + [("bw", ("=r", "bw"))], ins("a", N) + ins("b", N)))
    w("#pragma unroll\n    for (int k = 0; k < %d; k++) pm[k] = P::mod(k) & bw;\n" % N)
    w(asm_block(chain("add", "r", ("d", "i"), ("pm", "i"), N), outs("r", N), ins("d", N) + ins("pm", N)))
    w("}\n\n")

    # a + b with its carry as word N: Fr's lazily reduced sums (field.cuh's lz_add) of
    # values below 2r reach 4r > 2^256.
    if carry:
        w("__device__ __forceinline__ void add_carry_chain_%d(uint32_t* t, const uint32_t* a, const uint32_t* b) {\n" % N)
        mi = chain("add", "t", ("a", "i"), ("b", "i"), N, tail="addc.u32 {o:t%d}, 0, 0" % N)
        w(asm_block(mi, outs("t", N + 1), ins("a", N) + ins("b", N)))
        w("}\n\n")

    # t < 2p with an extra top word hi: bw = hi - borrow is negative only when hi = 0
    # and t < p, the one case that keeps t.
    w("template <class P>\n")
    w("__device__ __forceinline__ void reduce_once_chain_%d(uint32_t* r, const uint32_t* t, uint32_t hi) {\n" % N)
    w("    static_assert(P::N == %d, \"limb count\");\n" % N)
    w("    uint32_t s[%d], bw;\n" % N)
    mi = chain("sub", "s", ("t", "i"), ("p", "i"), N, tail="subc.u32 {o:bw}, {i:hi}, 0")
    w(asm_block(mi, outs("s", N) + [("bw", ("=r", "bw"))], ins("t", N) + [("hi", ("r", "hi"))] + mods(N)))
    w(select)
    w("}\n\n")
    return "".join(o)


def main():
    out = sys.stdout
    out.write("// Code generated by gen/mont_chain.py; DO NOT EDIT.\n")
    out.write("//\n")
    out.write("// Montgomery product (CIOS) as PTX carry chains. Each row (a*b_i, then m_i*p) adds\n")
    out.write("// 32x32-bit products at word positions q = i+j: the low half at q, the high half at\n")
    out.write("// q+1. Two accumulators at absolute positions, X for pairs (q, q+1) with q even and\n")
    out.write("// Y for q odd, make each row two independent chains of mad.lo.cc/madc.hi.cc, which\n")
    out.write("// ptxas turns into one 64-bit multiply-add per pair (IMAD.WIDE.U32.X) with no\n")
    out.write("// separate carry additions; no word ever moves, so the pairs stay register pairs.\n")
    out.write("// After row i, word i of X + Y (+ the carry c from word i-1) is zero mod 2^32.\n")
    out.write("// r receives words N..2N of T = X + Y + c (< 2p); the caller subtracts p once.\n")
    out.write("// mont_mul_chain_12: Fp's product. mont_wide_chain_12 and mont_redc_chain_12 are\n")
    out.write("// its two halves apart: the rows a*b_i alone (24-word product), and the rows m_i*p\n")
    out.write("// alone over a 24-word input.\n")
    out.write("// add_mod_chain_N, sub_mod_chain_N, reduce_once_chain_N: a + b, a - b mod p and the\n")
    out.write("// product's final conditional subtraction, each a carry chain and a select;\n")
    out.write("// add_carry_chain_8: a + b with its carry as word 8.\n")
    out.write("// sub_wide_mod_chain_12: the difference of two 24-word products, kept below p*2^384\n")
    out.write("// so a*b - c*d takes one reduction.\n")
    out.write("// mont_mul_fold_chain_8: Fr's product with the reduction rows' two lowest pairs\n")
    out.write("// folded into additions (r = 2^64 - 2^32 + 1 mod 2^64; see gen_fold).\n")
    out.write("// shoup_q_chain_8, shoup_lo_chain_8: Fr's product by a fixed w with a precomputed\n")
    out.write("// ws = floor(w*2^256/r) (Shoup's; see gen_shoup), a*w - q*r below 2r.\n")
    out.write("#pragma once\n#include <stdint.h>\n\n")
    out.write("// -p^-1 mod 2^32 for the rows' m. Fr's is 2^32 - 1 (r = 1 mod 2^32): given that\n")
    out.write("// constant, ptxas rewrites m = -t and splits every m*p pair of the reduction into\n")
    out.write("// two multiply-adds plus carry additions (Fr product 360 SASS instructions, a\n")
    out.write("// butterfly 424). Read from constant memory it stays opaque, and the rows stay one\n")
    out.write("// wide multiply-add per pair (320 and 384; nvcc 11.8, sm_90).\n")
    out.write("static __constant__ uint32_t kMontInvAllOnes = 0xffffffffu;\n\n")
    out.write("template <class P>\n__device__ __forceinline__ uint32_t mont_inv() {\n")
    out.write("    if constexpr (P::inv == 0xffffffffu) {\n        return kMontInvAllOnes;\n    } else {\n        return P::inv;\n    }\n}\n\n")
    out.write(gen(12))
    out.write(gen_fold(8, FR))
    out.write(gen_shoup(8, FR))
    # G1's a*b - c*d (field.cuh's fe_mul_sub and lz_mul_sub): the product and the
    # reduction apart.
    out.write(gen_wide(12))
    out.write(gen_redc(12))
    out.write(gen_sub_wide_mod(12))
    out.write(gen_addsub(12, carry=False))
    out.write(gen_addsub(8, carry=True))

main()
