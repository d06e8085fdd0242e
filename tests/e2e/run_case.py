#!/usr/bin/env python3
"""Runs one end-to-end case: a kernel through wave-run on a device or the reference evaluator.

usage: run_case.py WAVE_RUN FILE DEVICE [WAVE_RUN_ARGS...]

DEVICE `reference`: the reference evaluator runs the kernel on fresh random data (wave-run
prints the seed) and writes the outputs; this script checks that the kernel defined every
element of every output (wave-run prints, per output, how many elements the evaluator saw
written), unless the file says `# E2E-PARTIAL`, and that every output file has that shape. Any other DEVICE (emu:gfx942, emu:sm_90, ...): `wave-run --check`
runs the kernel there and compares with the reference evaluator on fresh random data; exit 77
(device not available) is passed through for a GPU device, so CTest reports the case as
skipped with the reason, and is a failure for the emulator (`emu:*`), which is always there.
A kernel the code generator reports as `[codegen-unsupported]` fails, unless its file has a
`# CODEGEN-PENDING: reason` line (then the case skips with that reason).
"""
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile


def npy_shape(path):
    """The shape of a .npy file wave-run wrote (a v1.0 header it formats itself)."""
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY" or data[6] != 1:
        raise ValueError(f"{path}: not a .npy v1.0 file")
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode("latin1")
    m = re.search(r"'shape': \(([0-9, ]*)\)", header)
    return tuple(int(x) for x in m.group(1).replace(" ", "").split(",") if x)


def main():
    wave_run, path, device, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    text = open(path, encoding="utf-8").read()
    out_dir = tempfile.mkdtemp(prefix="wave-e2e.")
    try:
        if device == "reference":
            cmd = [wave_run, path, "--reference", "--output-dir", out_dir] + extra
        else:
            cmd = [wave_run, path, "--device", device, "--check"] + extra
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout, end="", flush=True)
        if p.returncode != 0 and "[codegen-unsupported]" in p.stdout:
            pending = re.search(r"^# CODEGEN-PENDING:\s*(.+)$", text, re.M)
            if not pending:
                print("FAIL: the code generator rejects this kernel, and the file has no "
                      "'# CODEGEN-PENDING: reason' line saying that is expected")
                return 1
            print(f"SKIP: code generation pending ({pending.group(1)}); see above")
            return 77
        if p.returncode == 77 and device.startswith("emu"):
            print("FAIL: wave-run reports the emulator unavailable; it is part of the runtime and "
                  "always runs, so an emulator case never skips (issue 15)")
            return 1
        if p.returncode != 0 or device != "reference":
            return p.returncode
        counts = re.findall(r"^output (\w+): the kernel wrote (\d+) of (\d+) elements$",
                            p.stdout, re.M)
        if not counts:
            print("FAIL: wave-run reported no outputs")
            return 1
        failed = False
        for name, wrote, total in counts:
            shape = npy_shape(os.path.join(out_dir, name + ".npy"))
            if math.prod(shape) != int(total):
                print(f"FAIL: {name}.npy has shape {shape}, not {total} elements")
                failed = True
            if wrote != total and "# E2E-PARTIAL" not in text:
                print(f"FAIL: the kernel left {int(total) - int(wrote)} elements of {name} unwritten")
                failed = True
        return 1 if failed else 0
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
