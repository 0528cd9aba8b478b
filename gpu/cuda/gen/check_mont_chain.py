#!/usr/bin/env python3
"""Checks mont_chain.cuh by running its PTX on Python integers.

Interprets each generated function (the asm blocks' mul/mad/madc/add/addc with the
carry flag, and the C statements between them) on edge and random operands and
compares the result with a*b*R^-1 mod p; the result must also stay below 2p.

    python3 check_mont_chain.py ../ff/mont_chain.cuh    # exit 1 on any mismatch
"""
import random
import re
import sys

src = open(sys.argv[1]).read()
P = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
R = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
M32 = (1 << 32) - 1
# Wrapped top words of carry chains (a carry dropped): the product, wide product and
# reduction chains must never wrap.
lost = [0]
def limbs(x, n): return [(x >> (32 * i)) & M32 for i in range(n)]
def run(fn, N, mod, a, b, t=0, out='r', words=None, arrays=None, env_out=None):
    """Runs fn on a, b (and a 2N-word input t, and any other named input arrays) and
    returns its output array out as an integer of words words (N+1 by default); with
    env_out, the arrays named there as integers."""
    body = src[src.index('void %s(' % fn):]
    body = body[:body.index('\n}\n')]
    inv = (-pow(mod, -1, 1 << 32)) % (1 << 32) if mod % 2 else 0  # 2p: subtraction only
    env = {'a': limbs(a, N), 'b': limbs(b, N), 't': limbs(t, 64), 'X': [0] * 64, 'Y': [0] * 64, 'E': [0] * 64, 'O': [0] * 64, 'r': [0] * 64, 'm': 0, 'c': 0, 'c0': 0, 'bw': 0, 'pm': [0] * 64, 'd': [0] * 64, 'u': [0] * 64, 's': [0] * 64, 'hi': 0}
    env = _Env(env)
    for k, v in (arrays or {}).items():
        env[k] = limbs(v, 64) if k != 'hi' else v
    def ev(e):
        e = e.strip()
        mm = re.fullmatch(r'0x([0-9a-f]+)u', e)
        if mm: return int(mm.group(1), 16)
        mm = re.match(r'P::mod\((\d+)\)', e)
        if mm: return limbs(mod, N)[int(mm.group(1))]
        mm = re.match(r'(\w+)\[(\d+)\]', e)
        if mm: return env[mm.group(1)][int(mm.group(2))]
        return env[e]
    def st(e, v):
        mm = re.match(r'(\w+)\[(\d+)\]', e.strip())
        if mm: env[mm.group(1)][int(mm.group(2))] = v & M32
        else: env[e.strip()] = v & M32
    pos = 0
    lines = body.split('\n')
    i = 0
    while i < len(lines):
        l = lines[i].strip()
        if l.startswith('asm('):
            ins = []
            i += 1
            while lines[i].strip().startswith('"'):
                ins.append(lines[i].strip().strip('"').replace('\\n\\t', '').rstrip(';'))
                i += 1
            outs = [x for x in re.findall(r'"[^"]*"\(([^()]*(?:\([^()]*\))?)\)', lines[i])]
            inps = [x for x in re.findall(r'"[^"]*"\(([^()]*(?:\([^()]*\))?)\)', lines[i + 1])]
            ops = outs + inps
            vals = {k: ev(e) for k, e in enumerate(ops)}
            cc = 0
            for inst in ins:
                op, args = inst.split(None, 1)
                args = [x.strip() for x in args.split(',')]
                def g(x):
                    return vals[int(x[1:])] if x.startswith('%') else int(x)
                d = int(args[0][1:])
                base = op.split('.')[0]
                if base in ('mul',):
                    p = g(args[1]) * g(args[2])
                    vals[d] = (p >> 32) & M32 if '.hi' in op else p & M32
                    continue
                if base == 'xor':
                    vals[d] = g(args[1]) ^ g(args[2])
                    continue
                if base == 'mov':
                    vals[d] = g(args[1])
                    continue
                if base in ('mad', 'madc'):
                    p = g(args[1]) * g(args[2])
                    part = (p >> 32) & M32 if '.hi' in op else p & M32
                    t = part + g(args[3]) + (cc if base == 'madc' else 0)
                elif base in ('add', 'addc'):
                    t = g(args[1]) + g(args[2]) + (cc if base == 'addc' else 0)
                elif base in ('sub', 'subc'):
                    t = g(args[1]) - g(args[2]) - (cc if base == 'subc' else 0)
                    vals[d] = t & M32
                    if '.cc' in op: cc = 1 if t < 0 else 0
                    continue
                else:
                    raise Exception(op)
                vals[d] = t & M32
                if '.cc' in op: cc = t >> 32
                elif t >> 32: lost[0] += 1  # a chain's top word wrapped: a carry lost
            for k, e in enumerate(outs): st(e, vals[k])
            i += 2
            continue
        mm = re.match(r'(\w)\[(\d+)\] = 0x([0-9a-f]+)u;', l)
        if mm: env[mm.group(1)][int(mm.group(2))] = int(mm.group(3), 16)
        mm = re.match(r't = (.*);', l)
        if mm: env['t'] = sum(ev(x) for x in mm.group(1).split('+')) & M32
        if l == 'mu = ~t;': env['mu'] = ~env['t'] & M32
        mm = re.match(r'c \+= 0x([0-9a-f]+)u;', l)
        if mm:
            assert env['c'] + int(mm.group(1), 16) <= M32
            env['c'] += int(mm.group(1), 16)
        mm = re.match(r'm = \((.*)\) \* mont_inv<P>\(\);', l)
        if mm:
            env['m'] = (sum(ev(x) for x in mm.group(1).split('+')) * inv) & M32
        mm = re.match(r'(c0?) = \(uint32_t\)\(\(\(uint64_t\)(.*)\) >> 32\);', l)
        if mm:
            env[mm.group(1)] = sum(ev(x) for x in mm.group(2).split('+')) >> 32
        mm = re.match(r'for \(int k = 0; k < (\d+); k\+\+\) (\w)\[k\] = \w\[k \+ 1\];', l)
        if mm:
            arr = env[mm.group(2)]
            for k in range(int(mm.group(1))): arr[k] = arr[k + 1]
        mm = re.match(r'for \(int k = 0; k < (\d+); k\+\+\) pm\[k\] = P::mod\(k\) & bw;', l)
        if mm:
            for k in range(int(mm.group(1))): env['pm'][k] = limbs(mod, N)[k] & env['bw']
        mm = re.match(r'for \(int k = 0; k < (\d+); k\+\+\) r\[k\] = \(int32_t\)bw < 0 \? t\[k\] : s\[k\];', l)
        if mm:
            neg = env['bw'] >= 1 << 31
            for k in range(int(mm.group(1))): env['r'][k] = (env['t'] if neg else env['s'])[k]
        mm = re.match(r'(\w+) = (\w+) \^ (\w+);', l)
        if mm:
            env[mm.group(1)] = env[mm.group(2)] ^ env[mm.group(3)]
        mm = re.match(r'(\w)\[(\d+)\] = 0;', l)
        if mm: env[mm.group(1)][int(mm.group(2))] = 0
        i += 1
    whole = lambda arr, n: sum(env[arr][k] << (32 * k) for k in range(n))
    if env_out:
        return [whole(arr, n) for arr, n in env_out]
    return whole(out, words or N + 1)
class _Env(dict):
    """The interpreter's variables: arrays not named up front start as zero words."""
    def __missing__(self, k):
        self[k] = [0] * 64
        return self[k]


random.seed(1)
failed = 0
for fn, N, mod in (('mont_mul_chain_12', 12, P), ('mont_mul_fold_chain_8', 8, R)):
    Rm = 1 << (32 * N)
    cases = [(0, 0), (1, 1), (mod - 1, mod - 1), (mod - 1, 1)] + [(random.randrange(mod), random.randrange(mod)) for _ in range(300)]
    if 'fold' in fn:
        # every row's word t_i zero (m = 2^32), operands with many zero or all-one words,
        # and a below 2r (the NTT's lazy inputs reach neither, but the bound allows it)
        ones = (1 << 256) - 1
        edge = [0, 1, 2, mod - 1, mod - 2, mod // 2, 1 << 224, (1 << 224) - 1, ones % mod, ones // 3 % mod]
        cases += [(x, y) for x in edge for y in edge]
        cases += [(random.randrange(2 * mod), random.randrange(mod)) for _ in range(300)]
        cases += [(x * pow(Rm, -1, mod) % mod, y) for x in edge for y in (1, mod - 1)]
    lost[0] = 0
    bad = 0
    for a, b in cases:
        got = run(fn, N, mod, a, b)
        want = a * b * pow(Rm, -1, mod) % mod
        if got % mod != want or got >= 2 * mod:
            bad += 1
    print(fn, 'cases', len(cases), 'bad', bad, 'lost carries', lost[0])
    failed += bad + lost[0]

# The two halves of the product apart (a*b - c*d below): the wide product is exact on
# operands below 2^384, and the reduction maps any t < p*2^384 to t*R^-1 mod p below 2p.
N, mod, Rm = 12, P, 1 << 384
M384 = (1 << 384) - 1
cases = [(0, 0), (1, 1), (M384, M384), (2 * P - 2, 2 * P - 2), (P - 1, P - 1)] + [(random.randrange(1 << 384), random.randrange(1 << 384)) for _ in range(200)]
lost[0] = 0
bad = sum(run('mont_wide_chain_12', N, mod, a, b, out='t', words=2 * N) != a * b for a, b in cases)
print('mont_wide_chain_12 cases', len(cases), 'bad', bad, 'lost carries', lost[0])
failed += bad + lost[0]
tcases = [0, 1, P * Rm - 1, (P - 1) ** 2, 2 * (P - 1) ** 2] + [random.randrange(P * Rm) for _ in range(200)]
bad = 0
lost[0] = 0
for t in tcases:
    got = run('mont_redc_chain_12', N, mod, 0, 0, t=t)
    if got % mod != t * pow(Rm, -1, mod) % mod or got >= 2 * mod:
        bad += 1
print('mont_redc_chain_12 cases', len(tcases), 'bad', bad, 'lost carries', lost[0])
failed += bad + lost[0]

# a*b - c*d with one reduction: the wide difference (p at word 12 on a borrow) stays
# below p*2^384 and reduces to (a*b - c*d)*R^-1 mod p below 2p.
cases = [(0, 0, 0, 0), (P - 1, P - 1, 0, 0), (0, 0, P - 1, P - 1), (P - 1, P - 1, P - 1, P - 1), (1, 1, P - 1, P - 1)]
cases += [tuple(random.randrange(P) for _ in range(4)) for _ in range(300)]
bad = 0
for a, b, c, d in cases:
    x = run('mont_wide_chain_12', 12, P, a, b, out='t', words=24)
    y = run('mont_wide_chain_12', 12, P, c, d, out='t', words=24)
    dd = run('sub_wide_mod_chain_12', 12, P, 0, 0, arrays={'x': x, 'y': y}, out='d', words=24)
    got = run('mont_redc_chain_12', 12, P, 0, 0, t=dd)
    if not 0 <= dd < P * Rm or got % P != (a * b - c * d) * pow(Rm, -1, P) % P or got >= 2 * P:
        bad += 1
print('a*b - c*d, 12 limbs, cases', len(cases), 'bad', bad)
failed += bad

# Lazily reduced Fp (field.cuh's lz_*): operands below 2p. The product is below 2p
# with a zero top word; a*b - c*d reduces from below p*2^384 to below 2p; the
# subtraction modulo 2p (the chain with 2p as the modulus) stays below 2p.
P2, Rm = 2 * P, 1 << 384
edge = [0, 1, P - 1, P, P + 1, P2 - 1]
cases = [(a, b) for a in edge for b in edge] + [(random.randrange(P2), random.randrange(P2)) for _ in range(300)]
bad = 0
for a, b in cases:
    got = run('mont_mul_chain_12', 12, P, a, b)
    if got >= P2 or got % P != a * b * pow(Rm, -1, P) % P:
        bad += 1
    if run('sub_mod_chain_12', 12, P2, a, b, words=12) != (a - b) % P2:
        bad += 1
for _ in range(300):
    a, b, c, d = (random.choice([random.randrange(P2), P2 - 1, P, 0]) for _ in range(4))
    x = run('mont_wide_chain_12', 12, P, a, b, out='t', words=24)
    y = run('mont_wide_chain_12', 12, P, c, d, out='t', words=24)
    dd = run('sub_wide_mod_chain_12', 12, P, 0, 0, arrays={'x': x, 'y': y}, out='d', words=24)
    got = run('mont_redc_chain_12', 12, P, 0, 0, t=dd)
    if not 0 <= dd < P * Rm or got >= P2 or got % P != (a * b - c * d) * pow(Rm, -1, P) % P:
        bad += 1
print('lazily reduced Fp (below 2p), cases', 2 * len(cases) + 300, 'bad', bad)
failed += bad

# a + b and a - b mod p, and the product's final subtraction (t < 2p with a top word).
for N, md in ((12, P), (8, R)):
    cases = [(0, 0), (0, md - 1), (md - 1, 0), (md - 1, md - 1), (1, md - 1), (md - 1, 1), (md // 2, md // 2 + 1)]
    cases += [(random.randrange(md), random.randrange(md)) for _ in range(300)]
    bad = 0
    for a, b in cases:
        if run('add_mod_chain_%d' % N, N, md, a, b, words=N) != (a + b) % md:
            bad += 1
        if run('sub_mod_chain_%d' % N, N, md, a, b, words=N) != (a - b) % md:
            bad += 1
    tcases = [0, 1, md - 1, md, md + 1, 2 * md - 1] + [random.randrange(2 * md) for _ in range(300)]
    for t in tcases:
        lo, hi = t & ((1 << (32 * N)) - 1), t >> (32 * N)
        if run('reduce_once_chain_%d' % N, N, md, 0, 0, t=lo, arrays={'hi': hi}, words=N) != t % md:
            bad += 1
    print('add/sub/reduce_once chains, %d limbs, cases' % N, 2 * len(cases) + len(tcases), 'bad', bad)
    failed += bad
# Fr's lazily reduced butterflies (field.cuh's lz_add and lz_sub, the NTT's
# lazy radix-4 passes): with 2r as the chains' modulus, a - b is (a - b) mod 2r for a, b < 2r,
# and a sum below 4r (add_carry_chain_8: its carry as word 8) reduces once to the sum
# mod 2r.
R2 = 2 * R
cases = [(0, 0), (0, R2 - 1), (R2 - 1, 0), (R2 - 1, R2 - 1), (R - 1, R), (R, R - 1), (R, R), (R2 - 1, 1)]
cases += [(random.randrange(R2), random.randrange(R2)) for _ in range(600)]
bad = 0
for a, b in cases:
    if run('sub_mod_chain_8', 8, R2, a, b, words=8) != (a - b) % R2:
        bad += 1
    t = run('add_carry_chain_8', 8, R2, a, b, out='t', words=9)
    if t != a + b:
        bad += 1
    if run('reduce_once_chain_8', 8, R2, 0, 0, t=t & ((1 << 256) - 1), arrays={'hi': t >> 256}, words=8) != t % R2:
        bad += 1
print('lazy Fr add/sub modulo 2r, cases', 3 * len(cases), 'bad', bad, 'sums past 2^256', sum(a + b >> 256 for a, b in cases))
failed += bad
# Shoup's product by a fixed w < r with ws = floor(w*2^256/r): q falls short of
# floor(a*w/r) by at most 1 with no carry lost, and a*w - q*r (computed modulo 2^256)
# is exact and below 2r, for a < 2r (the lazy butterflies' operands: lz_mul_shoup).
ones = (1 << 256) - 1
edge = [0, 1, 2, R - 1, R - 2, R // 2, R // 2 + 1, 1 << 224, (1 << 224) - 1, ones % R, ones // 3 % R]
edge_a = edge + [R, R + 1, 2 * R - 1, 2 * R - 2, ones // 3, (1 << 255) + 12345]
cases = [(x, y) for x in edge_a for y in edge] + [(random.randrange(R), random.randrange(R)) for _ in range(600)]
cases += [(random.randrange(2 * R), random.randrange(R)) for _ in range(600)]
bad = 0
lost[0] = 0
short = [0, 0]
for a, w in cases:
    ws = (w << 256) // R
    q = run('shoup_q_chain_8', 8, R, a, 0, arrays={'ws': ws}, out='q', words=8)
    exact = a * w // R
    if q not in (exact, exact - 1):
        bad += 1
        continue
    short[exact - q] += 1
    lost_q = lost[0]
    got = run('shoup_lo_chain_8', 8, R, a, 0, arrays={'w': w, 'q': q}, out='r', words=8)
    lost[0] = lost_q  # the low words' chains drop their carries out of word 7 on purpose
    if got != a * w - q * R or got >= 2 * R:
        bad += 1
print('shoup chains (Fr) cases', len(cases), 'bad', bad, 'lost carries', lost[0], 'q exact/one short', short)
failed += bad + lost[0]
sys.exit(1 if failed else 0)
