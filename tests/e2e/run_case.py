#!/usr/bin/env python3
"""Runs one end-to-end case: a kernel through wave-run on a device or the reference evaluator.

usage: run_case.py WAVE_RUN FILE DEVICE [WAVE_RUN_ARGS...]

DEVICE `reference`: the reference evaluator runs the kernel on fresh random data (wave-run
prints the seed) and writes the outputs; this script checks that the kernel defined every
element of every output (wave-run prints, per output, how many elements the evaluator saw
written), unless the file says `# E2E-PARTIAL`, and that every output file has that shape. A kernel file may also carry `# ORACLE:` lines, one per
output, each an independent definition of the output (not derived from wavec's parser or IR):
`# ORACLE: b[m, n] = a(m + DM, n + DN)`: the output and one index name per dim, then a Python
expression in those names, the file's symbols (their defaults, -D and --size values), and the
kernel's tensors called as functions (0 outside the tensor); `SKIP` leaves an element unchecked.
For those kernels this script writes the inputs itself (random, fixed seed) and compares each
output element with the expression (f16: 1e-3 relative and absolute; f32: 1e-6). Any other DEVICE (emu:gfx942, emu:sm_90, ...): `wave-run --check`
runs the kernel there and compares with the reference evaluator on fresh random data; exit 77
(device not available) is passed through for a GPU device, so CTest reports the case as
skipped with the reason, and is a failure for the emulator (`emu:*`), which is always there.
A kernel the code generator cannot generate yet (an `[unsupported-*]` refusal of the legalize
pass or of the code generator) fails, unless its file has a
`# CODEGEN-PENDING: reason` line (then the case skips with that reason).
"""
import itertools
import math
from fractions import Fraction
import os
import random
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
        if p.returncode != 0 and re.search(r"\[unsupported-[a-z0-9-]+\]", p.stdout):
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
        if failed:
            return 1
        return run_oracles(wave_run, path, text, extra)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


# ---- independent oracles (`# ORACLE:` lines) -----------------------------------------------

NPY_CODES = {"f16": ("<f2", "e", 2), "f32": ("<f4", "f", 4), "i32": ("<i4", "i", 4)}


def npy_write(path, shape, dtype, values):
    descr, code, _ = NPY_CODES[dtype]
    dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape))
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as fh:
        fh.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        fh.write(struct.pack(f"<{len(values)}{code}", *values))


def npy_read(path):
    data = open(path, "rb").read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode("latin1")
    descr = re.search(r"'descr': '([^']+)'", header).group(1)
    code = {v[0]: v[1] for v in NPY_CODES.values()}.get(descr)
    if code is None:
        raise ValueError(f"{path}: dtype {descr} has no oracle support")
    n = math.prod(npy_shape(path))
    return list(struct.unpack_from(f"<{n}{code}", data, 10 + hlen))


def kernel_signature(text, extra):
    """The file's symbol values (defaults, then -D and --size) and its tensors: name -> (dim
    names, dtype). Only files with one kernel whose dims are plain symbols."""
    syms = {}
    for decl in re.findall(r"^symbol\s+([^;]+);", text, re.M):
        for part in decl.split(","):
            m = re.match(r"\s*(\w+)\s*(?:=\s*(-?\d+))?\s*$", part)
            if m and m.group(2) is not None:
                syms[m.group(1)] = int(m.group(2))
    it = iter(extra)
    for a in it:
        m = re.match(r"-D(\w+)=(-?\d+)$", a)
        if not m and a == "--size":
            m = re.match(r"(\w+)=(-?\d+)$", next(it, ""))
        if m:
            syms[m.group(1)] = int(m.group(2))
    kernels = re.findall(r"^kernel\s+\w+\s*\(([^)]*)\)", text, re.M)
    if len(kernels) != 1:
        raise ValueError("an ORACLE needs a file with exactly one kernel")
    tensors = {}
    for name, inside in re.findall(r"(\w+)\s*:\s*Memory\[([^\]]*)\]", kernels[0]):
        parts = [p.strip() for p in inside.split(",")]
        dims, dtype = parts[:-2], parts[-1]
        for d in dims:
            if d not in syms:
                syms[d] = dim_extent(name, d, syms)
        tensors[name] = (dims, dtype)
    return syms, tensors


def dim_extent(tensor, dim, syms):
    """The extent of a dim that is an expression of symbols (`N / 2`, `2 * N`): `/` exact, `//`
    floor, as the language reads them (language.md section 9)."""
    if not re.fullmatch(r"[\w\s+*/()-]+", dim):
        raise ValueError(f"tensor {tensor}: dim {dim} is not an index expression")
    names = set(re.findall(r"[A-Za-z_]\w*", dim))
    if not names <= set(syms):
        raise ValueError(f"tensor {tensor}: dim {dim} needs the values of {sorted(names - set(syms))}")
    value = eval(dim, {"__builtins__": {}}, {n: Fraction(syms[n]) for n in names})
    if Fraction(value).denominator != 1:
        raise ValueError(f"tensor {tensor}: dim {dim} is not exact for the given sizes")
    return int(value)


class Tensor:
    """A tensor the oracle reads: t(i, j) is its element, 0 outside it."""

    def __init__(self, shape, values):
        self.shape, self.values = shape, values

    def __call__(self, *idx):
        off = 0
        for i, n in zip(idx, self.shape):
            if not 0 <= i < n:
                return 0.0
            off = off * n + i
        return self.values[off]


def run_oracles(wave_run, path, text, extra):
    """Runs the reference evaluator on inputs of our own and checks every `# ORACLE:` line."""
    oracles = re.findall(r"^# ORACLE:\s*(\w+)\[([^\]]*)\]\s*=\s*(.+)$", text, re.M)
    if not oracles:
        return 0
    syms, tensors = kernel_signature(text, extra)
    outputs = {o[0] for o in oracles}
    rng = random.Random(1234)
    work = tempfile.mkdtemp(prefix="wave-oracle.")
    try:
        env, args = {"SKIP": None, "min": min, "max": max, "abs": abs, "math": math}, []
        env.update(syms)
        for name, (dims, dtype) in tensors.items():
            if dtype not in NPY_CODES:
                raise ValueError(f"tensor {name}: dtype {dtype} has no oracle support")
            shape = [syms[d] for d in dims]
            n = math.prod(shape)
            if dtype == "i32":
                vals = [rng.randint(-1000, 1000) for _ in range(n)]
            else:
                # Values exactly representable in f16, so that both sides start from the same.
                vals = [rng.randint(-2048, 2048) / 1024 for _ in range(n)]
            f = os.path.join(work, name + ".in.npy")
            npy_write(f, shape, dtype, vals)
            args += ["--input", f"{name}={f}"]
            env[name] = Tensor(shape, vals)
        out_dir = os.path.join(work, "out")
        os.mkdir(out_dir)
        cmd = [wave_run, path, "--reference", "--output-dir", out_dir] + extra + args
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout, end="", flush=True)
        if p.returncode != 0:
            return p.returncode
        failed = False
        for out, idx, expr in oracles:
            dims, dtype = tensors[out]
            shape = [syms[d] for d in dims]
            names = [x.strip() for x in idx.split(",")]
            got = npy_read(os.path.join(out_dir, out + ".npy"))
            tol = 1e-3 if dtype == "f16" else 1e-6
            code = compile(expr, "ORACLE", "eval")
            bad, checked, first = 0, 0, None
            for k, point in enumerate(itertools.product(*[range(n) for n in shape])):
                env.update(zip(names, point))
                want = eval(code, env)
                if want is None:
                    continue
                checked += 1
                g = got[k]
                if not (abs(g - want) <= tol + tol * abs(want)):
                    bad += 1
                    first = first or (point, g, want)
            print(f"oracle {out}: {checked} elements checked against `{expr}`, {bad} wrong"
                  + (f"; first at {first[0]}: {first[1]}, want {first[2]}" if first else ""))
            failed |= bad > 0
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
