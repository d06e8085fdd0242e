#!/usr/bin/env python3
"""Seeded-bug tests of the emulator's detectors on a shared-memory GEMM (issue 4).

usage: seeded_bugs.py WAVE_RUN WAVEC KERNEL.wave TARGET

1. The normal build (barriers placed by the barrier-insertion pass) runs clean on emu:TARGET and
   matches the reference evaluator (||out - ref|| / ||ref|| < 1e-3).
2. The same kernel built with --debug-no-barriers is reported as a shared-memory race; the
   message names the kernel, the operation with its .wave location, the workgroup and thread.
3. An out-of-bounds access: the code object is compiled for K = 192 but launched on tensors of
   K = 160 (the object's static size is wrong for the data); the emulator reports an
   out-of-bounds global load, naming the kernel, location, workgroup and thread.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout, end="", flush=True)
    return p


def main():
    wave_run, wavec, path, target = sys.argv[1:5]
    kernel = os.path.splitext(os.path.basename(path))[0]
    fname = re.escape(os.path.basename(path))
    where = (rf"at [^ ]*{fname}:\d+:\d+ in workgroup \(\d+,\d+,\d+\) thread \(\d+,\d+,\d+\)")
    sizes = ["-DM=128", "-DN=128"]
    tmp = tempfile.mkdtemp(prefix="wave-seeded.")
    failed = []
    try:
        def build(name, extra):
            out = os.path.join(tmp, name + ".wemu")
            p = run([wavec, path, "--target=" + target, "--emit=emu", "-o", out] + sizes + extra)
            if p.returncode != 0:
                failed.append(f"wavec {name} failed")
            return out

        def launch(obj, k):
            return run([wave_run, path, "--device", "emu:" + target, "--object", obj, "--check",
                        "--rel-norm", "1e-3", "-DK=" + str(k)] + sizes)

        good = build("barriers", ["-DK=160"])
        p = launch(good, 160)
        if p.returncode != 0:
            failed.append("the normal build does not pass")

        racy = build("no_barriers", ["-DK=160", "--debug-no-barriers"])
        p = launch(racy, 160)
        pat = rf"{kernel}: shared-memory race on an? [a-z. ]+ {where}"
        if p.returncode == 0 or not re.search(pat, p.stdout):
            failed.append(f"no race reported for --debug-no-barriers (want /{pat}/)")

        wrong = build("k192", ["-DK=192"])
        p = launch(wrong, 160)
        # (a cp.async copy's source read is a "cp.async load")
        pat = rf"{kernel}: out-of-bounds global (?:cp\.async )?load of \d+ bytes? {where}"
        if p.returncode == 0 or not re.search(pat, p.stdout):
            failed.append(f"no out-of-bounds access reported (want /{pat}/)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failed:
        print("FAIL: " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
