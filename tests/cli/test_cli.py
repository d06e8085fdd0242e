#!/usr/bin/env python3
"""Command-line behaviour of wavec: exit codes (0 ok, 1 compile error, 2 usage error), usage
messages, colour control, -Werror, and that failed compilations leave no output file."""
import os
import subprocess
import sys
import tempfile

WAVEC, ROOT = sys.argv[1], sys.argv[2]
GEMM = os.path.join(ROOT, "samples", "gemm", "gemm.wave")
failures = []
passed = 0


def run(args, env=None):
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    if env:
        e.update(env)
    return subprocess.run([WAVEC] + args, capture_output=True, text=True, timeout=60, env=e)


def expect(name, cond, proc=None):
    global passed
    if cond:
        passed += 1
        return
    detail = ""
    if proc is not None:
        detail = f"\n  exit {proc.returncode}\n  stdout: {proc.stdout[:2000]}\n  stderr: {proc.stderr[:2000]}"
    failures.append(name + detail)


tmp = tempfile.mkdtemp(prefix="wavec-cli-")
bad = os.path.join(tmp, "bad.wave")
with open(bad, "w") as f:
    f.write("symbol M;\nkernel k(a: Memory[M, global, f16]) {\n  constraints { workgroup(M, 64, dim = 0); }\n  write(read(a), b);\n}\n")
warn = os.path.join(tmp, "warn.wave")
with open(warn, "w") as f:
    f.write("symbol M, UNUSED;\nkernel k(a: Memory[M, global, f16], b: Memory[M, global, f16]) {\n  constraints { workgroup(M, 64, dim = 0); wave(M, 64); }\n  write(read(a), b);\n}\n")

p = run(["--version"])
expect("--version exits 0 and names wavec and LLVM", p.returncode == 0 and "wavec" in p.stdout and "LLVM" in p.stdout, p)
p = run(["--help"])
expect("--help exits 0 and lists --emit and --target", p.returncode == 0 and "--emit" in p.stdout and "--target" in p.stdout, p)
p = run([])
expect("no input file is a usage error (2)", p.returncode == 2 and "no input file" in p.stderr, p)
p = run([GEMM, "--bogus-flag"])
expect("unknown flag is a usage error (2)", p.returncode == 2 and "bogus" in p.stderr, p)
p = run([GEMM, "--check", "--target=gfx943"])
expect("unknown target is a usage error with a hint", p.returncode == 2 and "did you mean 'gfx942'" in p.stderr, p)
p = run([GEMM, "--emit=bogus"])
expect("bad --emit value is a usage error", p.returncode == 2 and "--emit=bogus" in p.stderr, p)
p = run([GEMM, "--check", "--color=sometimes"])
expect("bad --color value is a usage error", p.returncode == 2, p)
p = run([GEMM, "--check", "-DM"])
expect("-D without a value is a usage error", p.returncode == 2 and "-DSYMBOL=VALUE" in p.stderr, p)
p = run([GEMM, "--check", "-Wno-such-warning"])
expect("unknown -W name is a usage error", p.returncode == 2, p)
p = run(["--print-targets"])
expect("--print-targets lists every target and kind",
       p.returncode == 0 and all(t in p.stdout for t in ["gfx942", "gfx90a", "gfx1100", "sm_80", "sm_90", "sm_90a", "F32_16x8x16_F16", "F32_32x32x8_F16"]), p)
p = run([os.path.join(tmp, "missing.wave"), "--check"])
expect("missing input is a compile error (1) naming the file", p.returncode == 1 and "cannot open" in p.stderr and "missing.wave" in p.stderr, p)
p = run([GEMM, "--check", "-DNOPE=1"])
expect("-D of an unknown symbol is an error", p.returncode == 1 and "[unknown-define]" in p.stderr, p)
p = run([GEMM, "--check", "-DBLOCK_M=abc"])
expect("-D with a bad value is an error", p.returncode == 1 and "[bad-define-value]" in p.stderr, p)
p = run([GEMM, "--check", "--kernel=gemmm"])
expect("--kernel of an unknown kernel is an error with a hint", p.returncode == 1 and "did you mean 'gemm'" in p.stderr, p)
p = run([GEMM, "--check"])
expect("the GEMM sample checks clean", p.returncode == 0 and p.stderr == "", p)

out = os.path.join(tmp, "out.txt")
with open(out, "w") as f:
    f.write("precious")
p = run([bad, "--emit=ir", "-o", out])
expect("a failed compilation exits 1", p.returncode == 1, p)
expect("a failed compilation leaves an existing output untouched", open(out).read() == "precious")
out2 = os.path.join(tmp, "never.txt")
p = run([bad, "--emit=ir", "-o", out2])
expect("a failed compilation creates no output file", not os.path.exists(out2), p)
p = run([GEMM, "--emit=ir", "-o", os.path.join(tmp, "no-such-dir", "out.txt")])
expect("an unwritable output is an error naming it", p.returncode == 1 and "[cannot-write-file]" in p.stderr and "no-such-dir" in p.stderr, p)
p = run([GEMM, "--emit=distribution", "-o", out2])
expect("--emit=distribution -o writes the file", p.returncode == 0 and "grid" in open(out2).read(), p)
expect("no temporary files are left behind", sorted(os.listdir(tmp)) == sorted(["bad.wave", "warn.wave", "out.txt", "never.txt"]))

p = run([bad, "--check", "--color=always"])
expect("--color=always colours diagnostics", "\033[" in p.stderr, p)
p = run([bad, "--check", "--color=never"])
expect("--color=never does not", "\033[" not in p.stderr, p)
p = run([bad, "--check"], env={"NO_COLOR": "1"})
expect("NO_COLOR disables colour", "\033[" not in p.stderr, p)
p = run([bad, "--check", "--color=never"])
expect("errors are located with file:line:col, the line and a caret",
       f"{bad}:4:18: error: unknown name 'b'" in p.stderr and "  write(read(a), b);" in p.stderr and "^" in p.stderr, p)

p = run([warn, "--check", "--color=never"])
expect("a warning alone exits 0", p.returncode == 0 and "[unused-symbol]" in p.stderr, p)
p = run([warn, "--check", "-Werror", "--color=never"])
expect("-Werror makes it an error", p.returncode == 1 and "error: symbol 'UNUSED' is never used" in p.stderr, p)
p = run([warn, "--check", "-Wno-unused-symbol", "--color=never"])
expect("-Wno-<id> silences it", p.returncode == 0 and p.stderr == "", p)
p = run([warn, "--check", "-Werror=unused-symbol", "--color=never"])
expect("-Werror=<id> makes that one an error", p.returncode == 1, p)
UNSUPPORTED = os.path.join(ROOT, "tests", "codegen", "inputs", "if_statement.wave")
p = run([UNSUPPORTED, "-o", os.path.join(tmp, "unsupported.hsaco")])
expect("a code object of a kernel the code generator cannot handle yet fails plainly", p.returncode == 1 and "[codegen-unsupported]" in p.stderr and not os.path.exists(os.path.join(tmp, "unsupported.hsaco")), p)

COPY = os.path.join(ROOT, "samples", "copy", "copy.wave")
outs = []
for i in range(2):
    d = os.path.join(tmp, f"api{i}")
    os.mkdir(d)
    p = run([COPY, "--target=sm_90", "-o", os.path.join(d, "copy.ptx"), "--header", os.path.join(d, "copy.h"), "--stub", os.path.join(d, "copy.c")])
    expect("--header/--stub with a PTX output succeeds", p.returncode == 0, p)
    outs.append([open(os.path.join(d, n), "rb").read() if os.path.exists(os.path.join(d, n)) else b"" for n in ("copy.ptx", "copy.h", "copy.c")])
expect("two compilations give byte-identical code object, header and stub", outs[0] == outs[1] and all(outs[0]))
d = os.path.join(tmp, "apifail")
os.mkdir(d)
p = run([bad, "-o", os.path.join(d, "k.hsaco"), "--header", os.path.join(d, "k.h"), "--stub", os.path.join(d, "k.c")])
expect("a failed compilation writes none of code object, header and stub", p.returncode == 1 and os.listdir(d) == [], p)
p = run([COPY, "-o", os.path.join(d, "k.hsaco"), "--header", os.path.join(d, "k.h")])
expect("--header without --stub is an error and writes nothing", p.returncode == 1 and "[host-api-options]" in p.stderr and os.listdir(d) == [], p)

for f in failures:
    print("FAIL:", f)
print(f"{passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
