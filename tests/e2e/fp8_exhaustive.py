#!/usr/bin/env python3
"""fp8 conversions and arithmetic, exhaustively, against an oracle of this file's own.

usage: fp8_exhaustive.py WAVE_RUN DEVICE [KIND...]

For each fp8 kind (default: all four) a kernel (written here) takes every one of the 256
codes, paired with every code for + - * / (65,536 pairs), and f32, f64, f16 and i32 values
chosen around every rounding boundary of the kind (each representable value, each midpoint
between neighbours and one unit of the source type either side of it, the overflow threshold,
the subnormal range, zeros, infinities, NaN). wave-run runs it on DEVICE (`reference` for the
reference evaluator, or `emu:<target>`) with these inputs and the outputs are compared byte for
byte (f32 bit for bit; any NaN matches any NaN) with this file's oracle: exact rational
arithmetic rounded once to nearest even, overflow to infinity (f8e5m2) or NaN (the others, which
have no infinity), no negative zero in the fnuz kinds (docs/language.md section 11). The oracle
is independent of wavec: it shares no code with the reference evaluator (src/reference).
"""
import functools
import math
import os
import struct
import sys
import tempfile
from fractions import Fraction

from exhaustive_io import (f32, f32_bits, f64_bits, from_f32_bits, from_f64_bits, read_npy,
                           run_kernels, to_i32)

# name: (exponent bits, mantissa bits, bias, special)
KINDS = {
    "f8e4m3fn": (4, 3, 7, "fn"),
    "f8e5m2": (5, 2, 15, "ieee"),
    "f8e4m3fnuz": (4, 3, 8, "fnuz"),
    "f8e5m2fnuz": (5, 2, 16, "fnuz"),
}
NAN = float("nan")


def decode(kind, code):
    eb, mb, bias, special = KINDS[kind]
    sign = -1 if code & 0x80 else 1
    e, m = (code >> mb) & ((1 << eb) - 1), code & ((1 << mb) - 1)
    if special == "ieee" and e == (1 << eb) - 1:
        return sign * math.inf if m == 0 else NAN
    if special == "fn" and code & 0x7F == 0x7F:
        return NAN
    if special == "fnuz" and code == 0x80:
        return NAN
    if e == 0:
        return sign * math.ldexp(m, 1 - bias - mb)
    return sign * math.ldexp((1 << mb) + m, e - bias - mb)


@functools.lru_cache(maxsize=None)
def finite_codes(kind):
    """{value: code} of the non-negative finite values (0 -> the code of +0)."""
    out = {}
    for c in range(128):
        v = decode(kind, c)
        if not math.isnan(v) and not math.isinf(v):
            out[v] = c
    return out


@functools.lru_cache(maxsize=None)
def largest(kind):
    return max(finite_codes(kind))


def round_to(kind, x):
    """The code of x (a float or Fraction) rounded to `kind`."""
    eb, mb, bias, special = KINDS[kind]
    if isinstance(x, float) and math.isnan(x):
        return None  # NaN
    neg = x < 0 or (isinstance(x, float) and x == 0 and math.copysign(1, x) < 0)
    a = -x if x < 0 else x
    if isinstance(a, float) and math.isinf(a):
        r = math.inf
    elif a == 0:
        r = Fraction(0)
    else:
        a = Fraction(a)
        e = math.floor(math.log2(a)) if a.numerator.bit_length() < 2000 else 0
        while Fraction(2) ** e > a:
            e -= 1
        while Fraction(2) ** (e + 1) <= a:
            e += 1
        e = max(e, 1 - bias)
        q = Fraction(2) ** (e - mb)
        n = a / q
        fl = math.floor(n)
        d = n - fl
        k = fl + 1 if d > Fraction(1, 2) or (d == Fraction(1, 2) and fl % 2 == 1) else fl
        r = k * q
    table = finite_codes(kind)
    biggest = largest(kind)
    if r > biggest:
        if special != "ieee":
            return None
        return 0xFC if neg else 0x7C
    code = table[float(r)]
    if neg and (code != 0 or special != "fnuz"):
        code |= 0x80
    return code


def probes(kind):
    """Values around every rounding boundary of `kind`, both signs, as f64 (f32 ones first)."""
    vals = sorted(finite_codes(kind))
    pts = set(vals)
    for lo, hi in zip(vals, vals[1:]):
        pts.add((lo + hi) / 2)
    step = vals[-1] - vals[-2]
    for k in range(1, 6):  # beyond the largest value: the overflow threshold and past it
        pts.add(vals[-1] + step * k / 2)
    pts.update([vals[1] / 2, vals[1] / 4, vals[1] * 0.75, 1e-30, 1e30, math.inf])
    out = []
    for p in sorted(pts):
        for s in (1, -1):
            out.append(s * p)
    out += [0.0, -0.0, NAN]
    return out


KERNEL = """symbol N;
kernel fp8_convert(codes: Memory[N, global, {k}], f: Memory[N, global, f32],
    d: Memory[N, global, f64], h: Memory[N, global, f16], i: Memory[N, global, i32],
    dec: Memory[N, global, f32], other: Memory[N, global, {o}], toi: Memory[N, global, i32],
    fromf: Memory[N, global, {k}], fromd: Memory[N, global, {k}], fromh: Memory[N, global, {k}],
    fromi: Memory[N, global, {k}], neg: Memory[N, global, {k}]) {{
  constraints {{ workgroup(N, 64, dim = 0); wave(N, 64); }}
  c = read(codes);
  write(cast(c, f32), dec);
  write(cast(c, {o}), other);
  write(cast(c, i32), toi);
  write(-c, neg);
  write(cast(read(f), {k}), fromf);
  write(cast(read(d), {k}), fromd);
  write(cast(read(h), {k}), fromh);
  write(cast(read(i), {k}), fromi);
}}
symbol P;
kernel fp8_pairs(pa: Memory[P, global, {k}], pb: Memory[P, global, {k}],
    sum: Memory[P, global, {k}], dif: Memory[P, global, {k}], prod: Memory[P, global, {k}],
    quot: Memory[P, global, {k}], less: Memory[P, global, i32]) {{
  constraints {{ workgroup(P, 64, dim = 0); wave(P, 64); }}
  a = read(pa);
  b = read(pb);
  write(a + b, sum);
  write(a - b, dif);
  write(a * b, prod);
  write(a / b, quot);
  write(select(a < b, 1, 0), less);
}}
"""


def main():
    wave_run, device = sys.argv[1], sys.argv[2]
    kinds = sys.argv[3:] or list(KINDS)
    names = list(KINDS)
    bad_total = 0
    for kind in kinds:
        other = names[(names.index(kind) + 1) % len(names)]
        tmp = tempfile.mkdtemp(prefix="wave-fp8.")
        src = os.path.join(tmp, "k.wave")
        with open(src, "w") as fh:
            fh.write(KERNEL.format(k=kind, o=other))
        pr = probes(kind)
        fvals = []  # f32: each probe rounded to f32, and one f32 unit either side of it
        dvals = []  # f64: each probe and one f64 unit either side (not representable in f32)
        for p in pr:
            if math.isnan(p) or math.isinf(p) or p == 0:
                fvals.append(p)
                dvals.append(p)
                continue
            b = f32_bits(p)
            fvals += [from_f32_bits(b), from_f32_bits(b - 1), from_f32_bits(b + 1)]
            b = f64_bits(p)
            dvals += [p, from_f64_bits(b - 1), from_f64_bits(b + 1)]
        fvals += [from_f32_bits(1), from_f32_bits(0x80000001), from_f32_bits(0x7FC00001)]
        ivals = list(range(-600, 601)) + [2**31 - 1, -2**31, 57344, 61440, 65536, -61439, 464, 465,
                                         479, 480, 247, 248, 249]
        n = max(256, len(fvals), len(dvals), len(ivals))
        n = (n + 63) // 64 * 64 + 13  # ragged: not a multiple of the workgroup
        pad = lambda xs, v: xs + [v] * (n - len(xs))
        codes = pad(list(range(256)), 0)
        fvals, dvals, ivals = pad(fvals, 0.5), pad(dvals, 0.5), pad(ivals, 3)
        hvals = []
        for p in pr:  # f16: the probes f16 holds exactly (all midpoints of every kind)
            try:
                hv = struct.unpack("<e", struct.pack("<e", p))[0]
            except OverflowError:
                hv = math.copysign(math.inf, p)
            hvals.append(hv)
        hvals = pad(hvals[:n], 0.25)
        pa = [x for x in range(256) for _ in range(256)]
        pb = [y for _ in range(256) for y in range(256)]
        inputs = {"codes": ("|u1", codes), "f": ("<f4", fvals), "d": ("<f8", dvals),
                  "h": ("<f2", hvals), "i": ("<i4", ivals), "pa": ("|u1", pa), "pb": ("|u1", pb)}
        out = run_kernels(wave_run, device, src, [("fp8_convert", ["codes", "f", "d", "h", "i"]),
                                                  ("fp8_pairs", ["pa", "pb"])], inputs, tmp)
        if out is None:
            return 1
        got = {k: read_npy(os.path.join(out, k + ".npy")) for k in
               ["dec", "other", "toi", "fromf", "fromd", "fromh", "fromi", "neg", "sum", "dif",
                "prod", "quot", "less"]}
        dv = [decode(kind, c) for c in range(256)]
        exact = [None if math.isnan(v) else (v if math.isinf(v) else Fraction(v)) for v in dv]
        bad = {}

        def check(out_name, idx, want, have, fp8=True):
            if fp8:
                gv = decode(kind if out_name != "other" else other, have)
                ok = (want is None and math.isnan(gv)) or (want is not None and have == want)
            elif isinstance(want, float) and math.isnan(want):
                ok = math.isnan(have)
            elif isinstance(want, float):
                ok = f32_bits(want) == f32_bits(have)
            else:
                ok = want == have
            if not ok:
                bad.setdefault(out_name, []).append((idx, want, have))

        def rnd(x, k=kind):
            return round_to(k, x)

        for c in range(256):
            v = dv[c]
            check("dec", c, f32(v) if not math.isnan(v) else NAN, got["dec"][c], fp8=False)
            check("other", c, rnd(v, other), got["other"][c])
            check("toi", c, to_i32(v), got["toi"][c], fp8=False)
            check("neg", c, rnd(-v) if not math.isnan(v) else None, got["neg"][c])
        for j in range(n):
            check("fromf", j, rnd(fvals[j]), got["fromf"][j])
            check("fromd", j, rnd(dvals[j]), got["fromd"][j])
            check("fromh", j, rnd(hvals[j]), got["fromh"][j])
            check("fromi", j, rnd(Fraction(ivals[j])) if ivals[j] else rnd(0.0), got["fromi"][j])

        def op(x, y, o):
            if x is None or y is None:
                return None
            if isinstance(x, float) or isinstance(y, float):  # an infinity: IEEE float rules
                a, b = dv[pa[j]], dv[pb[j]]
                if o == "/":
                    if b == 0:
                        return math.copysign(math.inf, a) * math.copysign(1, dv[pb[j]])
                    return NAN if math.isinf(a) and math.isinf(b) else a / b
                if o == "*" and (a == 0 or b == 0):
                    return NAN
                return a + b if o == "+" else a - b if o == "-" else a * b
            if o == "+":
                return x + y
            if o == "-":
                return x - y
            if o == "*":
                return x * y
            if y == 0:
                return NAN if x == 0 else math.copysign(math.inf, x) * math.copysign(1, dv[pb[j]])
            return x / y

        for j in range(256 * 256):
            x, y = exact[pa[j]], exact[pb[j]]
            for name, o in (("sum", "+"), ("dif", "-"), ("prod", "*"), ("quot", "/")):
                r = op(x, y, o)
                if isinstance(r, Fraction) and r == 0:
                    # the sign of an exact zero: IEEE rules (only -0 - +0, -0 + -0, and products
                    # and quotients of opposite signs are -0)
                    sx = math.copysign(1, dv[pa[j]]) if dv[pa[j]] == 0 else (1 if x > 0 else -1)
                    sy = math.copysign(1, dv[pb[j]]) if dv[pb[j]] == 0 else (1 if y > 0 else -1)
                    if o == "+":
                        negz = sx < 0 and sy < 0 if (dv[pa[j]] == 0 and dv[pb[j]] == 0) else False
                    elif o == "-":
                        negz = sx < 0 and sy > 0 if (dv[pa[j]] == 0 and dv[pb[j]] == 0) else False
                    else:
                        negz = sx * sy < 0
                    r = -0.0 if negz else 0.0
                want = None if r is None or (isinstance(r, float) and math.isnan(r)) else rnd(r)
                check(name, j, want, got[name][j])
            lt = None if x is None or y is None else int(dv[pa[j]] < dv[pb[j]])
            check("less", j, 0 if lt is None else lt, got["less"][j], fp8=False)
        for name, rows in bad.items():
            print("%s %s: %d mismatches, first: %s" % (kind, name, len(rows), rows[:4]))
            bad_total += len(rows)
        print("%s on %s: %s" % (kind, device, "ok" if not bad else "FAIL"), flush=True)
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
