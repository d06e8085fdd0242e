#!/usr/bin/env python3
"""Command-line behaviour of wavec: exit codes (0 ok, 1 compile error, 2 usage error), usage
messages, colour control, -Werror, that failed compilations leave no output file, and the output
file rules of src/driver/files.h (no output is an input, a directory or another output; special
files are written through; symlinks are followed; all outputs or none; stdout errors count), for
wavec and wave-run."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

WAVEC, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
GEMM = os.path.join(ROOT, "samples", "gemm", "gemm.wave")
failures = []
passed = 0


def run(args, env=None, cwd=None, stdout=None, tool=None):
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    if env:
        e.update(env)
    if stdout is None:
        return subprocess.run([tool or WAVEC] + args, capture_output=True, text=True, timeout=60, env=e, cwd=cwd)
    return subprocess.run([tool or WAVEC] + args, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, env=e, cwd=cwd)


def expect(name, cond, proc=None):
    global passed
    if cond:
        passed += 1
        return
    detail = ""
    if proc is not None:
        detail = f"\n  exit {proc.returncode}\n  stdout: {(proc.stdout or '')[:2000]}\n  stderr: {proc.stderr[:2000]}"
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
expect("a code object of a kernel the code generator cannot handle yet fails plainly", p.returncode == 1 and "[unsupported-if]" in p.stderr and "[codegen-unsupported]" not in p.stderr and not os.path.exists(os.path.join(tmp, "unsupported.hsaco")), p)
p = run([UNSUPPORTED, "--check"], env=dict(os.environ, WAVEC_CHECK_NO_CODEGEN="1"))
expect("--check refuses it without the code generator's MLIR step (the legalize pass)", p.returncode == 1 and "[unsupported-if]" in p.stderr, p)

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


# ---- output files (src/driver/files.h) ----------------------------------------------------------
def snapshot(path):
    st = os.stat(path)
    return (open(path, "rb").read(), st.st_mtime_ns, st.st_ino)


def refused(name, p, dirpath, before_listing, src, src_before, code=1, words="[cannot-write-file]"):
    expect(name + ": refused with exit %d and a message" % code, p.returncode == code and words in p.stderr, p)
    expect(name + ": the input is untouched (bytes, mtime, inode)", snapshot(src) == src_before, p)
    expect(name + ": nothing is created or left behind", sorted(os.listdir(dirpath)) == before_listing,
           p if p.returncode else None)


files = os.path.join(tmp, "files")
os.mkdir(files)
src = os.path.join(files, "src.wave")
shutil.copy(COPY, src)
os.utime(src, ns=(1_000_000_000, 1_000_000_000))
os.symlink("src.wave", os.path.join(files, "link.wave"))
os.link(src, os.path.join(files, "hard.wave"))
os.mkdir(os.path.join(files, "adir"))
with open(os.path.join(files, "precious.hsaco"), "w") as f:
    f.write("precious")
src_before = snapshot(src)
listing = sorted(os.listdir(files))
J = lambda *n: os.path.join(files, *n)
collisions = [
    ("-o the input", [src, "--emit=ir", "-o", src]),
    ("-o the input spelled differently", [src, "--emit=ir", "-o", J("adir", "..", ".", "src.wave")]),
    ("-o the input, relative to the working directory", ["src.wave", "--emit=ir", "-o", "./src.wave"]),
    ("-o a symlink to the input", [src, "--emit=ir", "-o", J("link.wave")]),
    ("-o a hard link to the input", [src, "--emit=ir", "-o", J("hard.wave")]),
    ("input through a symlink, -o the file", [J("link.wave"), "--emit=ir", "-o", src]),
    ("a code object -o the input", [src, "-o", src]),
    ("--header the input", [src, "-o", J("k.hsaco"), "--header", src, "--stub", J("k.c")]),
    ("--stub the input", [src, "-o", J("k.hsaco"), "--header", J("k.h"), "--stub", J("hard.wave")]),
    ("-MF the input", [src, "-o", J("k.hsaco"), "-MF", src]),
    ("-MF a symlink to the input", [src, "-o", J("k.hsaco"), "-MF", J("link.wave")]),
    ("--header and --stub the same file", [src, "-o", J("k.hsaco"), "--header", J("k.x"), "--stub", J("k.x")]),
    ("--header and --stub the same file, spelled differently", [src, "-o", J("k.hsaco"), "--header", J("k.x"), "--stub", J("adir", "..", "k.x")]),
    ("--header and --stub the same existing file", [src, "-o", J("k.hsaco"), "--header", J("precious.hsaco"), "--stub", J("precious.hsaco")]),
    ("-o and --header the same file", [src, "-o", J("precious.hsaco"), "--header", J("precious.hsaco"), "--stub", J("k.c")]),
    ("-MF and --stub the same file", [src, "-o", J("k.hsaco"), "--header", J("k.h"), "--stub", J("k.c"), "-MF", J("k.c")]),
    ("-o and its derived depfile the same file", [src, "--emit=ir", "-o", J("k.d"), "-MD"]),
    ("several targets, --header and --stub the same file", [src, "--target=gfx942,sm_90", "--header", J("k.x"), "--stub", J("k.x")]),
    ("a directory as -o", [src, "--emit=ir", "-o", J("adir")]),
    ("a directory as a code object's -o", [src, "-o", J("adir")]),
    ("a directory as --header", [src, "-o", J("k.hsaco"), "--header", J("adir"), "--stub", J("k.c")]),
    ("a directory as --stub", [src, "-o", J("k.hsaco"), "--header", J("k.h"), "--stub", J("adir")]),
    ("a directory as -MF", [src, "-o", J("k.hsaco"), "--header", J("k.h"), "--stub", J("k.c"), "-MF", J("adir")]),
    ("a trailing slash on -o", [src, "--emit=ir", "-o", J("newdir") + "/"]),
    ("a directory as --dump-dir's file", [src, "--emit=ir", "-o", J("k.ir"), "--dump-dir", J("adir", "..", "precious.hsaco")]),
]
for name, args in collisions:
    p = run(args, cwd=files)
    refused(name, p, files, listing, src, src_before)
    expect(name + ": an existing output is untouched", open(J("precious.hsaco")).read() == "precious")
p = run([src, "--emit=ir", "-o", src], cwd=files)
expect("the message says the output would overwrite the input", "would overwrite the input" in p.stderr, p)
p = run([src, "-o", J("k.hsaco"), "--header", J("k.x"), "--stub", J("k.x")], cwd=files)
expect("the message names both flags", "--header and --stub name the same file" in p.stderr, p)
p = run([src, "-o", J("adir")], cwd=files)
expect("the message says it is a directory", "is a directory" in p.stderr, p)
# Without -o, the code object goes to the input's stem + .hsaco: never onto the input itself.
shutil.copy(src, J("k.hsaco"))
os.utime(J("k.hsaco"), ns=(1_000_000_000, 1_000_000_000))
k_before = snapshot(J("k.hsaco"))
p = run(["k.hsaco"], cwd=files)
refused("the default output is the input", p, files, sorted(listing + ["k.hsaco"]), J("k.hsaco"), k_before)
os.remove(J("k.hsaco"))

for flag in (["-o", ""], ["--emit=ir", "-o", ""], ["-o", J("k.hsaco"), "--header", "", "--stub", J("k.c")],
             ["-o", J("k.hsaco"), "--header", J("k.h"), "--stub", ""], ["-o", J("k.hsaco"), "-MF", ""]):
    p = run([src] + flag, cwd=files)
    refused("an empty file name " + " ".join(repr(a) for a in flag if not a.startswith("/")), p, files, listing,
            src, src_before, code=2, words="needs a file name")

p = run([J("adir"), "--check"])
expect("a directory as input is an error naming it", p.returncode == 1 and "adir" in p.stderr and "is a directory" in p.stderr, p)
p = run([J("adir"), "--emit=ir", "-o", J("k.ir")])
expect("a directory as input writes nothing", p.returncode == 1 and not os.path.exists(J("k.ir")), p)

# Special files are written through, never replaced.
for args in (["--emit=ir", "-o", "/dev/null"], ["-o", "/dev/null"], ["-o", "/dev/null", "--header", "/dev/null", "--stub", "/dev/null"]):
    p = run([src] + args)
    expect("%s succeeds" % " ".join(args), p.returncode == 0, p)
    expect("%s leaves /dev/null a character device" % " ".join(args), stat.S_ISCHR(os.stat("/dev/null").st_mode))
    expect("%s leaves /dev/null where it was (no temporary file in /dev)" % " ".join(args),
           not any(n.startswith(".null") for n in os.listdir("/dev")))
fifo = J("fifo")
os.mkfifo(fifo)
reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
p = run([src, "--emit=ir", "-o", fifo])
got = os.read(reader, 1 << 16)
os.close(reader)
expect("-o a FIFO writes through it", p.returncode == 0 and b"kernel copy" in got and stat.S_ISFIFO(os.stat(fifo).st_mode), p)
os.remove(fifo)

# Symlinks are followed: the target is written and the link stays.
links = os.path.join(tmp, "links")
os.mkdir(links)
with open(os.path.join(links, "real.ir"), "w") as f:
    f.write("old")
os.symlink("real.ir", os.path.join(links, "out.ir"))
os.symlink("made.ir", os.path.join(links, "dangling.ir"))
p = run([src, "--emit=ir", "-o", os.path.join(links, "out.ir")])
expect("-o a symlink succeeds", p.returncode == 0, p)
expect("-o a symlink keeps the link", os.path.islink(os.path.join(links, "out.ir")) and os.readlink(os.path.join(links, "out.ir")) == "real.ir")
expect("-o a symlink writes its target", "kernel copy" in open(os.path.join(links, "real.ir")).read())
p = run([src, "--emit=ir", "-o", os.path.join(links, "dangling.ir")])
expect("-o a dangling symlink creates its target and keeps the link",
       p.returncode == 0 and os.path.islink(os.path.join(links, "dangling.ir")) and "kernel copy" in open(os.path.join(links, "made.ir")).read(), p)
expect("symlink outputs leave no temporary file", sorted(os.listdir(links)) == ["dangling.ir", "made.ir", "out.ir", "real.ir"])

# All or nothing: an output that fails late (a write error on /dev/full, written through after
# the regular files' temporary files) leaves none of the others and no temporary file.
if os.path.exists("/dev/full"):
    allornone = os.path.join(tmp, "allornone")
    os.mkdir(allornone)
    A = lambda n: os.path.join(allornone, n)
    p = run([src, "-o", A("k.hsaco"), "--header", A("k.h"), "--stub", "/dev/full", "-MF", A("k.d")])
    expect("a write error on one output is an error naming it", p.returncode == 1 and "/dev/full" in p.stderr and "[cannot-write-file]" in p.stderr, p)
    expect("a write error on one output leaves no other output and no temporary file", os.listdir(allornone) == [], p)
    p = run([src, "--emit=ir", "-o", "/dev/full"])
    expect("-o /dev/full is an error", p.returncode == 1 and "No space left" in p.stderr, p)
    expect("/dev/full stays a character device", stat.S_ISCHR(os.stat("/dev/full").st_mode))
    # Standard output: a write error is an error, not a silent success.
    for args in ([src, "--emit=mlir"], [src, "--emit=ir"], [src, "--emit=ir", "-o", "-"], ["--help"], ["--print-targets"]):
        with open("/dev/full", "w") as full:
            p = run(args, stdout=full)
        expect("%s > /dev/full exits non-zero with a message" % " ".join(os.path.basename(a) for a in args),
               p.returncode != 0 and ("No space left on device" in p.stderr or "write error" in p.stderr), p)
    with open("/dev/full", "w") as full:
        p = run([src, "--emit=ir"], stdout=full)
    expect("a stdout write error is reported once", p.stderr.count("cannot write") == 1 and p.returncode == 1, p)

# wave-run: --output-dir follows the same rules (exit 2 for a bad command line or input, 1 for a
# write that fails; docs/user-guide.md).
WAVE_RUN = os.path.join(os.path.dirname(WAVEC), "wave-run")
if os.path.exists(WAVE_RUN):
    wr = os.path.join(tmp, "waverun")
    os.mkdir(wr)
    W = lambda *n: os.path.join(wr, *n)
    shutil.copy(COPY, W("copy.wave"))
    size = ["--reference", "--size", "M=3", "--size", "N=5", "--seed", "1"]
    p = run([W("copy.wave")] + size + ["--output-dir", W("out")], tool=WAVE_RUN)
    expect("wave-run --output-dir writes every output", p.returncode == 0 and os.listdir(W("out")) == ["b.npy"], p)
    shutil.copy(W("out", "b.npy"), W("a.npy"))
    os.utime(W("a.npy"), ns=(1_000_000_000, 1_000_000_000))
    a_before = snapshot(W("a.npy"))
    os.remove(W("out", "b.npy"))
    os.symlink("../a.npy", W("out", "b.npy"))
    wr_listing = sorted(os.listdir(W("out")))
    p = run([W("copy.wave"), "--reference", "--input", "a=" + W("a.npy"), "--output-dir", W("out")], tool=WAVE_RUN)
    refused("wave-run: an output that is an --input (through a symlink)", p, W("out"), wr_listing, W("a.npy"), a_before,
            code=2, words="would overwrite the input")
    os.remove(W("out", "b.npy"))
    shutil.copy(W("a.npy"), W("b.npy"))
    b_before = snapshot(W("b.npy"))
    p = run([W("copy.wave"), "--reference", "--input", "a=" + W("a.npy"), "--output-dir", wr, "--expect", "b=" + W("b.npy")], tool=WAVE_RUN)
    expect("wave-run: an output that is an --expect file is refused", p.returncode == 2 and "would overwrite the input" in p.stderr
           and snapshot(W("b.npy")) == b_before, p)
    os.remove(W("b.npy"))
    os.symlink("/dev/null", W("out", "b.npy"))
    p = run([W("copy.wave"), "--reference", "--input", "a=" + W("a.npy"), "--output-dir", W("out")], tool=WAVE_RUN)
    expect("wave-run: an output symlinked to /dev/null writes through it",
           p.returncode == 0 and os.path.islink(W("out", "b.npy")) and stat.S_ISCHR(os.stat("/dev/null").st_mode)
           and sorted(os.listdir(W("out"))) == ["b.npy"], p)
    p = run([W("copy.wave")] + size + ["--output-dir", W("a.npy")], tool=WAVE_RUN)
    expect("wave-run: --output-dir a file is refused", p.returncode == 2 and "not a directory" in p.stderr and snapshot(W("a.npy")) == a_before, p)
    p = run([W("copy.wave")] + size + ["--output-dir", ""], tool=WAVE_RUN)
    expect("wave-run: --output-dir '' is refused", p.returncode == 2 and "needs a directory" in p.stderr, p)
    p = run([W("out")] + size, tool=WAVE_RUN)
    expect("wave-run: a directory as the .wave file is refused", p.returncode == 2 and "is a directory" in p.stderr, p)
    p = run([W("copy.wave"), "--reference", "--input", "a=" + W("out")], tool=WAVE_RUN)
    expect("wave-run: a directory as an --input is refused", p.returncode == 2 and "is a directory" in p.stderr, p)
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            p = run([W("copy.wave")] + size, tool=WAVE_RUN, stdout=full)
        expect("wave-run > /dev/full exits non-zero with a message", p.returncode == 1 and "standard output" in p.stderr, p)
    expect("wave-run leaves no temporary file", sorted(os.listdir(wr)) == ["a.npy", "copy.wave", "out"]
           and sorted(os.listdir(W("out"))) == ["b.npy"])

for f in failures:
    print("FAIL:", f)
if not failures:
    shutil.rmtree(tmp)
print(f"{passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
