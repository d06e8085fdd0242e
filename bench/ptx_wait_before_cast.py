#!/usr/bin/env python3
"""Experiment helper: inserts `wgmma.wait_group.sync.aligned 0;` before the first conversion
of an f32 accumulator to f16/bf16 in a PTX file.

  ptx_wait_before_cast.py IN.ptx OUT.ptx

Why: in the f16-C and bf16-C GEMMs LLVM moves the epilogue's `cvt.rn.f16.f32` (pure
arithmetic) above the `wgmma.wait_group 0` after the K loop, so the PTX reads accumulators of
a wgmma still in flight, and ptxas then serializes the loop's wgmmas (its note C7514). With
the wait in front of the conversions ptxas no longer reports C7514. For measuring what the
compiler would gain by ordering the conversions after the wait (docs/performance.md, "GEMM at
4096³"); not a compiler feature. Exits 1 when the file has no such conversion.
"""
import re
import sys


def main():
    src, dst = sys.argv[1:3]
    lines = open(src).read().split("\n")
    cvt = re.compile(r"\s*cvt\.rn\.(bf16x2|f16x2|bf16|f16)\.f32\s")
    at = next((i for i, line in enumerate(lines) if cvt.match(line)), None)
    if at is None:
        sys.stderr.write(f"{src}: no f32 -> f16/bf16 conversion\n")
        return 1
    lines.insert(at, "\twgmma.wait_group.sync.aligned 0;")
    with open(dst, "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
