#!/usr/bin/env python3
"""A tiling's `end` against numpy: tests/e2e/kernels/tiling_end_rows.wave on the reference
evaluator and on the CPU emulator of an AMD and an NVIDIA target, each output compared with
the row sums numpy computes from the stop rule of docs/language.md section 5 (row m of the
workgroup whose tile starts at t sums the tiles of K that start below 2 * t + 40).

  tiling_end_numpy.py WAVE_RUN
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "tiling_end_rows.wave")


def expected(a):
    m_count, k = a.shape
    out = np.zeros(m_count)
    for m in range(m_count):
        end = 2 * (m // 16 * 16) + 40
        visited = min(k, 64 * -(-max(end, 0) // 64))
        out[m] = a[m, :visited].astype(np.float64).sum()
    return out


def main():
    wave_run = sys.argv[1]
    rng = np.random.default_rng()
    failures = 0
    for m_count, k in [(100, 300), (70, 1000), (1, 500)]:
        a = rng.standard_normal((m_count, k)).astype(np.float32)
        want = expected(a)
        full = a.astype(np.float64).sum(axis=1)
        assert not np.allclose(want, full), "the shape must make the end matter"
        with tempfile.TemporaryDirectory() as tmp:
            np.save(os.path.join(tmp, "a.npy"), a)
            for dev in ["--reference", "--device=emu:gfx942", "--device=emu:sm_80"]:
                out_dir = os.path.join(tmp, dev.strip("-").replace(":", "_").replace("=", "_"))
                cmd = [wave_run, KERNEL, dev, f"--size=M={m_count}", f"--size=K={k}",
                       f"--input=a={os.path.join(tmp, 'a.npy')}", f"--output-dir={out_dir}"]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"FAIL {' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
                    failures += 1
                    continue
                got = np.load(os.path.join(out_dir, "o.npy")).astype(np.float64)
                err = np.abs(got - want).max()
                ok = err < 1e-3
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} M={m_count} K={k} {dev}: max abs err {err:.2e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
