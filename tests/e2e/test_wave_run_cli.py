#!/usr/bin/env python3
"""wave-run's command line: inputs and outputs as .npy, checks against expected files, and a
clear error (exit 2, naming the file or the option) for every bad input.

usage: test_wave_run_cli.py WAVE_RUN SOURCE_DIR
"""
import os
import struct
import subprocess
import sys
import tempfile

WAVE_RUN, SRC = sys.argv[1], sys.argv[2]
failures = []

COPY = """
symbol M, N;
kernel copy(a: Memory[M, N, global, f32], b: Memory[M, N, global, f32]) {
  constraints {
    workgroup(M, 4, dim = 1); workgroup(N, 64, dim = 0); wave(M, 4); wave(N, 64);
    hardware(vector_shapes = {M: 1, N: 64});
  }
  write(read(a) * 2.0, b);
}
kernel other(a: Memory[M, N, global, f32], b: Memory[M, N, global, f32]) {
  constraints {
    workgroup(M, 4, dim = 1); workgroup(N, 64, dim = 0); wave(M, 4); wave(N, 64);
  }
  write(read(a), b);
}
"""


def npy_bytes(descr, shape, payload, fortran=False, version=1):
    shape_txt = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape_txt)
    pre = 10 if version == 1 else 12
    header += " " * ((64 - (pre + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + payload


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def floats(vals):
    return struct.pack("<%df" % len(vals), *vals)


def read_floats(path):
    data = open(path, "rb").read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    body = data[10 + hlen:]
    return header, list(struct.unpack("<%df" % (len(body) // 4), body))


def run(args, want_rc, *needles, name):
    p = subprocess.run([WAVE_RUN] + args, capture_output=True, text=True)
    out = p.stdout + p.stderr
    ok = p.returncode == want_rc and all(n in out for n in needles)
    if not ok:
        failures.append(f"{name}: rc {p.returncode} (want {want_rc}), want {needles} in:\n{out}")
    print(("ok   " if ok else "FAIL ") + name)
    return out


with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "k.wave")
    open(src, "w").write(COPY)
    a = os.path.join(d, "a.npy")
    vals = [float(i) - 2.5 for i in range(6)]
    write(a, npy_bytes("<f4", (2, 3), floats(vals)))

    # Good runs: an input file, the output written, an --expect that matches and one that does not.
    out_dir = os.path.join(d, "out")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--output-dir", out_dir], 0,
        "ran on the reference evaluator", name="reference run writes outputs")
    header, got = read_floats(os.path.join(out_dir, "b.npy"))
    if got != [2 * v for v in vals] or "'shape': (2, 3)" not in header or "'<f4'" not in header:
        failures.append(f"output b.npy: {header} {got}")
    good = os.path.join(d, "good.npy")
    write(good, npy_bytes("<f4", (2, 3), floats([2 * v for v in vals]), version=2))
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={good}"], 0,
        "6 elements", "0 mismatches", name="--expect matching (v2.0 header)")
    bad = os.path.join(d, "bad.npy")
    write(bad, npy_bytes("<f4", (2, 3), floats([2 * v for v in vals[:5]] + [99.0])))
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={bad}"], 1,
        "1 mismatches", "first mismatch at [1, 2]", name="--expect mismatch exits 1")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={bad}",
         "--atol", "100"], 0, "0 mismatches", name="--atol widens the check")
    # --rel-norm: ||got - want|| / ||want|| over the tensor. One element off by 1e-3 of ~8.4:
    # 1.2e-4, a mismatch for the per-element f32 check, within --rel-norm 1e-3, not 1e-4.
    near = os.path.join(d, "near.npy")
    write(near, npy_bytes("<f4", (2, 3), floats([2 * v for v in vals[:5]] + [5.001])))
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={near}"], 1,
        "1 mismatches", name="a near miss fails the per-element check")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={near}",
         "--rel-norm", "1e-3"], 0, "rel norm err 0.00012", "(limit 0.001)", "  ok",
        name="--rel-norm passes a near miss")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={near}",
         "--rel-norm", "1e-4"], 1, "rel norm err 0.00012", "FAIL",
        name="--rel-norm fails above its limit")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={bad}",
         "--rel-norm", "0.5"], 1, "FAIL", name="--rel-norm fails a far miss")
    run([src, "--kernel", "copy", "--reference", "--rel-norm", "0"], 2,
        "--rel-norm must be positive", name="--rel-norm 0 is refused")
    run([src, "--kernel", "copy", "--reference", "--rel-norm", "1e-3", "--rtol", "1"], 2,
        "--rel-norm replaces the per-element check", name="--rel-norm with --rtol is refused")
    run([src, "--kernel", "copy", "--reference", "--size", "M=3", "--size", "N=5", "--seed", "7"],
        0, "--seed 7", name="random inputs print their seed")

    # Bad inputs: exit 2 with the file or option named.
    run([src, "--kernel", "copy", "--reference", "--input", f"a={d}/missing.npy"], 2,
        "missing.npy: cannot open", name="missing input file")
    f64 = os.path.join(d, "f64.npy")
    write(f64, npy_bytes("<f8", (2, 3), struct.pack("<6d", *vals)))
    run([src, "--kernel", "copy", "--reference", "--input", f"a={f64}"], 2,
        "f64.npy: dtype '<f8' does not match the kernel's f32", name="wrong dtype")
    rank = os.path.join(d, "rank.npy")
    write(rank, npy_bytes("<f4", (6,), floats(vals)))
    run([src, "--kernel", "copy", "--reference", "--input", f"a={rank}"], 2,
        "rank.npy: rank 1", name="wrong rank")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--expect", f"b={rank}"], 2,
        "rank.npy: shape (6) does not match output 'b'", name="wrong expected shape")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={a}", "--size", "M=3"], 2,
        "a.npy: argument 'a' has shape [2, 3], the kernel expects [3, 3]",
        name="shape disagrees with --size")
    trunc = os.path.join(d, "trunc.npy")
    write(trunc, npy_bytes("<f4", (2, 3), floats(vals)[:-3]))
    run([src, "--kernel", "copy", "--reference", "--input", f"a={trunc}"], 2,
        "trunc.npy: not a valid .npy file: truncated", name="truncated file")
    fort = os.path.join(d, "fortran.npy")
    write(fort, npy_bytes("<f4", (2, 3), floats(vals), fortran=True))
    run([src, "--kernel", "copy", "--reference", "--input", f"a={fort}"], 2,
        "fortran.npy: not a valid .npy file: it is in Fortran order", name="fortran order")
    junk = os.path.join(d, "junk.npy")
    write(junk, b"hello world, not numpy")
    run([src, "--kernel", "copy", "--reference", "--input", f"a={junk}"], 2,
        "junk.npy: not a valid .npy file", name="not an npy file")
    run([src, "--kernel", "nope", "--reference"], 2, "no kernel named 'nope'",
        name="unknown kernel")
    run([src, "--reference", "--size", "M=2", "--size", "N=2"], 2,
        "several kernels (copy, other): choose one with --kernel", name="kernel ambiguous")
    run([src, "--kernel", "copy", "--reference", "--input", f"x={a}"], 2,
        "kernel 'copy' has no parameter 'x' (it has a, b)", name="unknown parameter")
    run([src, "--kernel", "copy", "--reference"], 2,
        "the size of dynamic symbol 'M' is unknown", name="dynamic size missing")
    run([src, "--kernel", "copy", "--reference", "--size", "M=4000000", "--size", "N=4000000"], 2,
        "parameter 'a' of shape [4000000, 4000000] would take", name="huge shape")
    run([src, "--kernel", "copy", "--reference", "--size", "Q=3"], 2,
        "'Q' is not a dynamic symbol", name="unknown --size symbol")
    run([src, "--kernel", "copy", "--device", "nosuch://0", "--size", "M=2", "--size", "N=2"], 2,
        "--device nosuch://0", name="bad device URI")
    run([src, "--kernel", "copy", "--size", "M=2", "--size", "N=2"], 2,
        "give --device URI", name="neither device nor reference")
    run([src, "--kernel", "copy", "--reference", "--check", "--size", "M=2", "--size", "N=2"], 2,
        "--check compares a device run", name="--check needs a device")
    run([os.path.join(d, "nofile.wave"), "--reference"], 2, "nofile.wave: cannot open",
        name="missing .wave file")
    run([src, "--kernel", "copy", "--reference", "--bogus"], 2, "wave-run --help",
        name="unknown option")

    # Devices that are not available here exit 77 with the reason (CTest's "skipped").
    out = subprocess.run([WAVE_RUN, src, "--kernel", "copy", "--device", "emu", "--check",
                          "--size", "M=2", "--size", "N=70"], capture_output=True, text=True)
    if out.returncode == 77:
        ok = "not available" in out.stderr
    else:
        ok = out.returncode == 0 and "0 mismatches" in out.stdout
    print(("ok   " if ok else "FAIL ") + f"emu device (rc {out.returncode})")
    if not ok:
        failures.append("emu device: " + out.stdout + out.stderr)
    if out.returncode == 0:
        # The check can fail: a code object compiled from a subtly different kernel of the same
        # signature (x * 3 instead of x * 2) is launched in place of the right one.
        wavec = os.path.join(os.path.dirname(os.path.abspath(WAVE_RUN)), "wavec")
        wrong = os.path.join(d, "wrong.wave")
        open(wrong, "w").write(COPY.replace("read(a) * 2.0", "read(a) * 3.0"))
        obj = os.path.join(d, "wrong.wemu")
        subprocess.run([wavec, wrong, "--kernel", "copy", "--emit=emu", "-o", obj], check=True)
        run([src, "--kernel", "copy", "--device", "emu", "--check", "--object", obj,
             "--size", "M=3", "--size", "N=70"], 1, "210 mismatches", "FAIL",
            name="--check catches a wrong device result")
        dev_out = os.path.join(d, "dev_out")
        run([src, "--kernel", "copy", "--device", "emu:sm_90", "--input", f"a={a}",
             "--output-dir", dev_out], 0, "copy ran on emu:sm_90", name="device run writes outputs")
        _, got = read_floats(os.path.join(dev_out, "b.npy"))
        if got != [2 * v for v in vals]:
            failures.append(f"device output b.npy: {got}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("all wave-run CLI checks passed")
