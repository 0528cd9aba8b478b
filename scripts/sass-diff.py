#!/usr/bin/env python3
"""Compares the device code of two builds of the CUDA library, kernel by kernel.

    scripts/sass-diff.py OLD_BUILD_DIR NEW_BUILD_DIR [name-regex]

Each folder holds the build's objects (runtime.o, msm_g1.o, ...; make -C gpu/cuda
BUILD=dir). Every function's SASS (cuobjdump -sass) is normalized: addresses and the
names of functions it calls are dropped, the instruction encodings (which hold the
scheduling bits) are kept. A new function is "same" when an old function of the same
object has the identical normalized body, whatever either is called (template
parameters and namespaces change names, not code). Prints one line per function of
the new build matching the regex (default: all), then the old functions left
unmatched; exits 1 if any differs.
"""
import hashlib
import os
import re
import subprocess
import sys


def functions(obj):
    out = subprocess.run(["cuobjdump", "-sass", obj], capture_output=True, text=True, check=True).stdout
    funcs, name, body = {}, None, []
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            if name:
                funcs[name] = body
            name, body = m.group(1), []
            continue
        if name is None or not line.strip() or line.strip().startswith(".") or "......" in line:
            continue
        line = re.sub(r"/\*[0-9a-f]{4,}\*/", "", line)  # address
        line = re.sub(r"`\([^)]*\)", "`(fn)", line)  # callee names
        line = re.sub(r"\b_Z\w+", "fn", line)
        body.append(" ".join(line.split()))
    if name:
        funcs[name] = body
    return {n: (hashlib.sha256("\n".join(b).encode()).hexdigest(), sum(1 for l in b if ";" in l)) for n, b in funcs.items()}


def demangle(names):
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return r.stdout.splitlines() if r.returncode == 0 else names


def main():
    old_dir, new_dir = sys.argv[1], sys.argv[2]
    pat = re.compile(sys.argv[3] if len(sys.argv) > 3 else ".")
    bad = 0
    for obj in sorted(os.listdir(new_dir)):
        if not obj.endswith(".o") or not os.path.exists(os.path.join(old_dir, obj)):
            continue
        old, new = functions(os.path.join(old_dir, obj)), functions(os.path.join(new_dir, obj))
        by_hash = {}
        for n, (h, _) in old.items():
            by_hash.setdefault(h, []).append(n)
        used = set()
        names = sorted(new)
        for n, dn in zip(names, demangle(names)):
            h, count = new[n]
            match = by_hash.get(h)
            if match:
                used.update(match)
            if not pat.search(dn):
                continue
            print("%s %-5s %6d instr  %s" % (obj, "same" if match else "DIFF", count, dn[:200]))
            bad += not match
        left = sorted(n for n in old if n not in used)
        for n, dn in zip(left, demangle(left)):
            print("%s old-only   %6d instr  %s" % (obj, old[n][1], dn[:200]))
    sys.exit(1 if bad else 0)


main()
