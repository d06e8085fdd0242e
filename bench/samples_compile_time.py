#!/usr/bin/env python3
"""Compile time of the samples for two builds of wavec (a refactoring must not slow it down).

    python3 bench/samples_compile_time.py --base BASE_BUILD_DIR [--head build] [--reps 7]
                                          [--targets gfx942,sm_90] [--no-code]

Each BUILD_DIR holds `wavec` and `libwavec_codegen.so`. For every samples/*/*.wave that compiles
for a target, times `wavec --check` and a compilation to the target's code object (compile
cache off), alternating base and head run by run so that load on the machine hits both alike,
and reports the median of --reps runs of each, the head/base ratio per case and the ratio of
the summed medians. CPU time (user + sys of the wavec process: what other processes on a
shared machine disturb least; bench/check_time.py times one invocation the same way). Not a
test: nothing is asserted. Prints a markdown table for docs/performance.md.
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(wavec, args):
    """(user+sys seconds, exit status) of one run."""
    proc = subprocess.Popen([wavec] + args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, status


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="build directory of the baseline wavec")
    ap.add_argument("--head", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--targets", default="gfx942,sm_90")
    ap.add_argument("--no-code", action="store_true", help="time --check only")
    opts = ap.parse_args()
    builds = {}
    for side in ("base", "head"):
        w = os.path.join(getattr(opts, side), "wavec")
        if not os.access(w, os.X_OK):
            print(f"check_time: no wavec in {getattr(opts, side)}", file=sys.stderr)
            return 2
        builds[side] = w
    samples = sorted(glob.glob(os.path.join(ROOT, "samples", "*", "*.wave")))
    rows, totals = [], {"base": {}, "head": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for src in samples:
            for target in opts.targets.split(","):
                modes = [("check", ["--check"])]
                if not opts.no_code:
                    modes.append(("code", ["--no-cache", "-o", os.path.join(tmp, "out")]))
                for mode, extra in modes:
                    args = [src, f"--target={target}"] + extra
                    times = {"base": [], "head": []}
                    ok = True
                    for _ in range(opts.reps):
                        for side in ("base", "head"):
                            t, rc = run_once(builds[side], args)
                            ok = ok and rc == 0
                            times[side].append(t)
                    if not ok:
                        continue  # a sample that does not compile for this target
                    med = {s: statistics.median(times[s]) for s in times}
                    for s in med:
                        totals[s][mode] = totals[s].get(mode, 0.0) + med[s]
                    rows.append((os.path.relpath(src, ROOT), target, mode, med["base"],
                                 med["head"]))
    print(f"| sample | target | run | base CPU (ms) | head CPU (ms) | head/base |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, target, mode, b, h in rows:
        print(f"| {name} | {target} | {mode} | {b * 1e3:.1f} | {h * 1e3:.1f} | {h / b:.3f} |")
    for mode in sorted(totals["base"]):
        b, h = totals["base"][mode], totals["head"][mode]
        print(f"| **all samples** | | {mode} | {b * 1e3:.1f} | {h * 1e3:.1f} | **{h / b:.3f}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
