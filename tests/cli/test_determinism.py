#!/usr/bin/env python3
"""wavec's output is the same on every run (docs/user-guide.md: byte-identical outputs).

usage: test_determinism.py WAVEC SOURCE_DIR

GiNaC orders the operands of sums and products by hashes seeded with type addresses, which
address-space randomization changes from run to run; the printer and the index lowering must
not let that order through. The convolutions' index expressions (products with sum factors
such as H - HF + 1) showed it: before the fix about one run in three emitted different MLIR.
Each case is compiled 12 times (fresh processes, no cache) and every output must be identical.
"""
import hashlib
import os
import subprocess
import sys
import tempfile

RUNS = 12


def main():
    wavec, root = sys.argv[1], sys.argv[2]
    conv = os.path.join(root, "tests", "e2e", "kernels")
    sizes = ["-DN=2", "-DH=18", "-DW=18", "-DC=32", "-DHF=3", "-DWF=3", "-DNF=64"]
    cases = [
        [os.path.join(conv, "conv_igemm_krsc.wave"), "--target=sm_80", "--emit=mlir"],
        [os.path.join(conv, "conv_igemm.wave"), "--target=gfx942", "--emit=mlir"],
        [os.path.join(conv, "conv_igemm_krsc.wave"), "--target=sm_90", "--emit=ptx"] + sizes,
        [os.path.join(conv, "conv_igemm.wave"), "--target=sm_90", "--emit=distribution"] + sizes,
    ]
    failed = 0
    for case in cases:
        digests = {}
        for _ in range(RUNS):
            p = subprocess.run([wavec] + case + ["--no-cache", "-o", "-"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            if p.returncode != 0 or not p.stdout:
                print(f"FAIL: {' '.join(case)}: exit {p.returncode}, {len(p.stdout)} bytes\n"
                      + p.stderr.decode(errors="replace"))
                failed += 1
                break
            d = hashlib.sha256(p.stdout).hexdigest()
            digests[d] = digests.get(d, 0) + 1
        else:
            ok = len(digests) == 1
            failed += not ok
            print(f"{'ok' if ok else 'FAIL'}: {len(digests)} distinct output(s) in {RUNS} runs: "
                  + " ".join(os.path.basename(a) if a.endswith('.wave') else a for a in case))
    # The generated host code too: the stub checks tensor shapes with C expressions of the
    # convolution's output size, a product of sum factors (symbolic/lowering.cpp).
    im2col = os.path.join(root, "tests", "ir", "conv_im2col.wave")
    digests = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(RUNS):
            p = subprocess.run([wavec, im2col, "--target=sm_80", "--no-cache", "-o", "k.ptx",
                                "--header", "k.h", "--stub", "k.c"], cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode != 0:
                print("FAIL: conv_im2col.wave --header/--stub: " + p.stderr.decode(errors="replace"))
                failed += 1
                break
            h = hashlib.sha256()
            for name in ("k.h", "k.c"):
                h.update(open(os.path.join(tmp, name), "rb").read())
            digests[h.hexdigest()] = digests.get(h.hexdigest(), 0) + 1
        else:
            ok = len(digests) == 1
            failed += not ok
            print(f"{'ok' if ok else 'FAIL'}: {len(digests)} distinct header+stub pair(s) in {RUNS} "
                  "runs: conv_im2col.wave --target=sm_80 --header --stub")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
