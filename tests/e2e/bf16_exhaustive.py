#!/usr/bin/env python3
"""bf16 conversions and arithmetic against an oracle of this file's own.

usage: bf16_exhaustive.py WAVE_RUN DEVICE

A kernel (written here) takes all 65,536 bf16 codes (to f32, to i32, negated), f32 and f64 values
around every rounding boundary of bf16 (each boundary between neighbours, one unit of the source
type either side of it, f64 values a hair off a boundary, where rounding to nearest through f32
would land on the boundary), integers, and 640 x 640 pairs of codes (every sign, binade and
special value among them) for + - * / and <. wave-run runs it on DEVICE (`reference` for the
reference evaluator, or `emu:<target>`); outputs are compared bit for bit (any NaN matches any
NaN) with this file's oracle: round to nearest even from the exact value, overflow to infinity
(docs/language.md section 11). The oracle shares no code with wavec or its reference evaluator;
its arithmetic is Python's f64, whose rounding before bf16's is harmless (53 >= 2 x 8 + 2 bits).
"""
import math
import os
import random
import struct
import sys
import tempfile

from exhaustive_io import (f32_bits as bits32, f64_bits as bits64, from_f32_bits as from32,
                           from_f64_bits as from64, read_npy, run_kernels, to_i32)

NAN = float("nan")
MAXF = (2 - 2.0 ** -7) * 2.0 ** 127  # the largest finite bf16


def decode(code):
    return struct.unpack("<f", struct.pack("<I", (code & 0xFFFF) << 16))[0]


def round_bf16(x):
    """The bf16 code of the float x (exact dyadic) rounded to nearest even."""
    if math.isnan(x):
        return None
    neg = math.copysign(1.0, x) < 0
    a = abs(x)
    if math.isinf(a):
        mag = 0x7F80
    elif a == 0:
        mag = 0
    else:
        e = max(math.frexp(a)[1] - 1, -126)  # the binade (subnormals: the least one)
        q = math.ldexp(1.0, e - 7)
        r = round(a / q) * q  # exact scaling; round() is to nearest even
        if r > MAXF:
            mag = 0x7F80
        else:
            mag = struct.unpack("<I", struct.pack("<f", r))[0] >> 16
    return mag | (0x8000 if neg else 0)


KERNEL = """symbol N;
kernel bf16_convert(codes: Memory[N, global, bf16], f: Memory[N, global, f32],
    d: Memory[N, global, f64], i: Memory[N, global, i32], dec: Memory[N, global, f32],
    toi: Memory[N, global, i32], neg: Memory[N, global, bf16], fromf: Memory[N, global, bf16],
    fromd: Memory[N, global, bf16], fromi: Memory[N, global, bf16]) {
  constraints { workgroup(N, 256, dim = 0); wave(N, 64); }
  c = read(codes);
  write(cast(c, f32), dec);
  write(cast(c, i32), toi);
  write(-c, neg);
  write(cast(read(f), bf16), fromf);
  write(cast(read(d), bf16), fromd);
  write(cast(read(i), bf16), fromi);
}
symbol P;
kernel bf16_pairs(pa: Memory[P, global, bf16], pb: Memory[P, global, bf16],
    sum: Memory[P, global, bf16], dif: Memory[P, global, bf16], prod: Memory[P, global, bf16],
    quot: Memory[P, global, bf16], less: Memory[P, global, i32]) {
  constraints { workgroup(P, 256, dim = 0); wave(P, 64); }
  a = read(pa);
  b = read(pb);
  write(a + b, sum);
  write(a - b, dif);
  write(a * b, prod);
  write(a / b, quot);
  write(select(a < b, 1, 0), less);
}
"""


def probes():
    """f32 and f64 values around every rounding boundary of the positive bf16 codes."""
    fv, dv = [], []
    for c in range(0x7F80):
        lo, hi = decode(c), decode(c + 1) if c + 1 < 0x7F80 else MAXF + 2.0 ** 120
        mid = (lo + hi) / 2  # exact in f32 (bf16's midpoints have 9 bits)
        b = bits32(mid)
        fv += [mid, from32(b - 1), from32(b + 1)]
        if c % 7 == 0:  # f64: a hair off the boundary, one f64 unit off, and the boundary
            db = bits64(mid)
            dv += [mid, from64(db - 1), from64(db + 1), mid * (1 + 2.0 ** -40),
                   mid * (1 - 2.0 ** -40)]
    dv += [1e300, 1e-300, 5e-324, math.inf, 0.0, -0.0, NAN]
    fv += [math.inf, from32(1), from32(0x7FC00001), 0.0, -0.0]
    return fv + [-x for x in fv], dv + [-x for x in dv]


def main():
    wave_run, device = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="wave-bf16.")
    src = os.path.join(tmp, "k.wave")
    with open(src, "w") as fh:
        fh.write(KERNEL)
    fvals, dvals = probes()
    ivals = list(range(-1000, 1001)) + [2**31 - 1, -2**31, 257, 259, 65535, 16777217, -33554431]
    n = max(65536, len(fvals), len(dvals), len(ivals)) + 77  # ragged: not a multiple of 256
    pad = lambda xs, v: xs + [v] * (n - len(xs))
    codes = pad(list(range(65536)), 0)
    fvals, dvals, ivals = pad(fvals, 0.5), pad(dvals, 0.5), pad(ivals, 3)
    rng = random.Random(16)
    special = [0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F,
               0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x4000, 0x3F81, 0x3F7F, 0x0100, 0x7F00, 0x4B00]
    pick = special + [rng.randrange(65536) for _ in range(640 - len(special))]
    pa = [x for x in pick for _ in pick]
    pb = [y for _ in pick for y in pick]
    inputs = {"codes": ("<u2", codes), "f": ("<f4", fvals), "d": ("<f8", dvals),
              "i": ("<i4", ivals), "pa": ("<u2", pa), "pb": ("<u2", pb)}
    out = run_kernels(wave_run, device, src, [("bf16_convert", ["codes", "f", "d", "i"]),
                                              ("bf16_pairs", ["pa", "pb"])], inputs, tmp)
    if out is None:
        return 1
    got = {k: read_npy(os.path.join(out, k + ".npy")) for k in
           ["dec", "toi", "neg", "fromf", "fromd", "fromi", "sum", "dif", "prod", "quot", "less"]}
    bad = {}
    counts = {}

    def check(name, idx, want, have, code=True):
        counts[name] = counts.get(name, 0) + 1
        if code:
            ok = (want is None and math.isnan(decode(have))) or want == have
        elif isinstance(want, float) and math.isnan(want):
            ok = math.isnan(have)
        elif isinstance(want, float):
            ok = bits32(want) == bits32(have)
        else:
            ok = want == have
        if not ok:
            bad.setdefault(name, []).append((idx, want, have))

    for c in range(65536):
        v = decode(c)
        check("dec", c, v, got["dec"][c], code=False)
        check("toi", c, to_i32(v), got["toi"][c], code=False)
        check("neg", c, round_bf16(-v), got["neg"][c])
    for j in range(n):
        check("fromf", j, round_bf16(fvals[j]), got["fromf"][j])
        check("fromd", j, round_bf16(dvals[j]), got["fromd"][j])
        check("fromi", j, round_bf16(float(ivals[j])), got["fromi"][j])
    for j in range(len(pa)):
        a, b = decode(pa[j]), decode(pb[j])
        for name, f in (("sum", lambda: a + b), ("dif", lambda: a - b), ("prod", lambda: a * b),
                        ("quot", lambda: a / b if b != 0 else (
                            NAN if a == 0 or math.isnan(a) else
                            math.copysign(math.inf, a) * math.copysign(1.0, b)))):
            try:
                r = f()
            except OverflowError:
                r = math.copysign(math.inf, a) * math.copysign(1.0, b)
            check(name, j, round_bf16(r), got[name][j])
        check("less", j, int(a < b), got["less"][j], code=False)
    for name, rows in bad.items():
        print("%s: %d of %d mismatch, first: %s" % (name, len(rows), counts[name], rows[:4]))
    print("bf16 on %s: %s (%d values checked)" % (device, "FAIL" if bad else "ok",
                                                  sum(counts.values())), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
