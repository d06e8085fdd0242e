"""Helpers of the exhaustive conversion tests (fp8_exhaustive.py, bf16_exhaustive.py): .npy
files without numpy, bit views of f32/f64 values, the saturating float-to-i32 cast, and running
a file's kernels through wave-run on given inputs."""
import math
import os
import struct
import subprocess

_FMT = {"|u1": "B", "<u1": "B", "<u2": "H", "<f2": "e", "<f4": "f", "<f8": "d", "<i4": "i"}


def npy(path, descr, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), _FMT[descr]), *values))


def read_npy(path):
    data = open(path, "rb").read()
    hlen = struct.unpack("<H", data[8:10])[0]
    descr = data[10:10 + hlen].decode("latin1").split("'descr': '")[1].split("'")[0]
    fmt = _FMT[descr]
    body = data[10 + hlen:]
    return list(struct.unpack("<%d%s" % (len(body) // struct.calcsize(fmt), fmt), body))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_f32_bits(b):
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_f64_bits(b):
    return struct.unpack("<d", struct.pack("<Q", b & 0xFFFFFFFFFFFFFFFF))[0]


def to_i32(v):
    """A float cast to i32 as the language casts: truncated, saturated, NaN to 0."""
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return 2**31 - 1 if v > 0 else -2**31
    return max(-2**31, min(2**31 - 1, math.trunc(v)))


def run_kernels(wave_run, device, src, kernels, inputs, tmp):
    """Runs each (kernel, input names) of `kernels` in `src` on `device` (`reference` or a
    wave-run device) with `inputs` {name: (npy descr, values)}; prints the commands and their
    output. Returns the output folder, or None when wave-run failed."""
    dev = ["--reference"] if device == "reference" else ["--device", device]
    out = os.path.join(tmp, "out")
    for kernel, names in kernels:
        args = []
        for name in names:
            descr, vals = inputs[name]
            path = os.path.join(tmp, name + ".npy")
            npy(path, descr, vals)
            args += ["--input", "%s=%s" % (name, path)]
        cmd = [wave_run, src, "--kernel", kernel] + dev + args + ["--output-dir", out]
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout, end="")
        if p.returncode != 0:
            print("FAIL: wave-run exited %d" % p.returncode)
            return None
    return out
