#!/usr/bin/env python3
"""Runs one end-to-end case: a kernel through wave-run on a device or the reference evaluator.

usage: run_case.py WAVE_RUN FILE DEVICE [WAVE_RUN_ARGS...]

DEVICE `reference`: the reference evaluator runs the kernel on fresh random data (wave-run
prints the seed), writes the outputs, and this script checks that the kernel defined every
element of every output (outputs start poisoned: NaN, or integers of 0xAB bytes), unless the
file says `# E2E-PARTIAL`. Any other DEVICE (emu:gfx942, emu:sm_90, ...): `wave-run --check`
runs the kernel there and compares with the reference evaluator on fresh random data; exit 77
(device not available) is passed through, so CTest reports the case as skipped with the reason,
and so is a kernel that the code generator reports as `[codegen-unsupported]` (the reason is
printed: the case runs as soon as code generation covers the kernel).
"""
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def read_npy(path):
    """(descr, shape, raw bytes) of a C-order little-endian .npy file (wave-run's own output)."""
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    if data[6] == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    header = eval(data[start:start + hlen].decode("latin1"))  # a dict literal we wrote ourselves
    return header["descr"], header["shape"], data[start + hlen:]


def unwritten(descr, raw):
    """How many elements still hold the poison wave-run put there."""
    size = int(descr[2:])
    count = 0
    for off in range(0, len(raw), size):
        chunk = raw[off:off + size]
        if descr[1] == "f":
            fmt = {2: "<e", 4: "<f", 8: "<d"}[size]
            if math.isnan(struct.unpack(fmt, chunk)[0]):
                count += 1
        elif chunk == b"\xab" * size:
            count += 1
    return count


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
            print("SKIP: the code generator does not support this kernel yet (see above)")
            return 77
        if p.returncode != 0 or device != "reference":
            return p.returncode
        outputs = sorted(os.listdir(out_dir))
        if not outputs:
            print("FAIL: the kernel has no outputs")
            return 1
        failed = False
        for name in outputs:
            descr, shape, raw = read_npy(os.path.join(out_dir, name))
            left = unwritten(descr, raw)
            print(f"output {name}: shape {shape}, {left} elements not written")
            if left and "# E2E-PARTIAL" not in text:
                failed = True
        return 1 if failed else 0
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
