#!/usr/bin/env python3
"""The emulator's memory counters still agree with the H100's (issue 19).

  profile_vs_ncu_check.py WAVE_RUN REPO_ROOT

bench/results/profile_vs_ncu_h100 holds, per kernel, the wave-run command that profiled it on
the emulator (first line of emu.log) and Nsight Compute's counters of the same kernel at the same
sizes on an H100 (ncu*.csv). This re-runs every emulator profile with this build's wave-run
(and wavec beside it) into a scratch directory, next to the recorded ncu files, and runs
`bench/profile_vs_ncu.py compare --fail-above 0.05` on it: global sectors, shared-memory
wavefronts and bank conflicts must stay within 5% of the hardware's, the sm_90a GEMMs' wgmma
operand wavefronts and TMA counts included (emu:sm_90a).
"""
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile


def main():
    wave_run, root = sys.argv[1], pathlib.Path(sys.argv[2])
    results = root / "bench/results/profile_vs_ncu_h100"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        # The cp.async variant of the GEMM sample, as bench/profile_vs_ncu.py prepares it.
        aligned = tmp / "gemm_aligned.wave"
        src = (root / "samples/gemm/gemm_portable.wave").read_text()
        marker = "    assume(K > BLOCK_K * 4);\n"
        if marker not in src:
            print("FAIL: samples/gemm/gemm_portable.wave lost its K assumption")
            return 1
        aligned.write_text(src.replace(marker, marker + "    assume(K % 8 == 0);\n"))
        # ... and with N a multiple of 8 too (the sm_90a GEMM's staged epilogue).
        aligned_n8 = tmp / "gemm_aligned_n8.wave"
        aligned_n8.write_text(src.replace(
            marker, marker + "    assume(K % 8 == 0);\n    assume(N % 8 == 0);\n"))
        ran = 0
        for case in sorted(p for p in results.iterdir() if p.is_dir()):
            out = tmp / "cases" / case.name
            out.mkdir(parents=True)
            for f in case.glob("ncu*.csv"):
                shutil.copy(f, out / f.name)
            argv = shlex.split((case / "emu.log").read_text().splitlines()[0])
            argv[0] = wave_run
            argv = [str(aligned) if a.endswith("/gemm_aligned.wave") else
                    str(aligned_n8) if a.endswith("/gemm_aligned_n8.wave") else a for a in argv]
            argv[argv.index("--profile-output") + 1] = str(out / "emu.json")
            r = subprocess.run(argv, cwd=root, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL: {case.name}: {' '.join(argv)}\n{r.stdout}{r.stderr}")
                return 1
            ran += 1
        print(f"re-profiled {ran} kernels on the emulator")
        if ran < 11:
            print("FAIL: expected at least 11 kernels with an emulator side")
            return 1
        r = subprocess.run([sys.executable, str(root / "bench/profile_vs_ncu.py"), "compare",
                            str(tmp / "cases"), "--fail-above", "0.05"], capture_output=True,
                           text=True)
        print(r.stdout + r.stderr)
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
