#!/usr/bin/env python3
"""Inputs that once crashed or ran away (issue 15): long operator chains, deep prefixes and
brackets, huge static sizes. Each is generated here, run through wavec (and wave-run when given)
on an 8 MiB stack, and must end with exit 1 (wave-run: 2, bad input) and the located diagnostic: never a signal (139,
134), never a hang. Chains within the limit must still work.

  test_deep_inputs.py WAVEC [WAVE_RUN]
"""
import os
import resource
import subprocess
import sys
import tempfile

KERNEL = """symbol M, N;
kernel k(a: Memory[M, N, global, f32], b: Memory[M, N, global, f32]) {
  constraints {
    workgroup(M, 1, dim = 1);
    workgroup(N, 64, dim = 0);
    wave(M, 1);
    wave(N, 64);
  }
  v = read(a);
  write(EXPR, b);
}
"""
EXPR_LINE, EXPR_COL = 10, 9  # where EXPR starts in KERNEL

failures = []


def small_stack():
    resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, 8 << 20))


def run(cmd, timeout=120):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           preexec_fn=small_stack)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    return p.returncode, p.stderr


def expect(name, cmd, code, needle=None, timeout=120):
    rc, err = run(cmd, timeout)
    ok = rc == code and (needle is None or needle in err)
    print(("ok:   " if ok else "FAIL: ") + name + f" (exit {rc})")
    if not ok:
        failures.append(name)
        print("   ", " ".join(cmd[:1] + [os.path.basename(c) for c in cmd[1:]])[:300])
        print("   ", (err or "")[:600].replace("\n", "\n    "))


def main():
    wavec = sys.argv[1]
    wave_run = sys.argv[2] if len(sys.argv) > 2 else None
    tmp = tempfile.mkdtemp(prefix="wavec-robust-")

    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    too_deep = "[expression-too-deep]"
    # Symbol chains: the 1025th '+' (col 11 + 2 * 1025) is one level too deep.
    sym = write("sym_chain.wave", "symbol X = " + "+".join(["1"] * 20000) + ";\n")
    neg = write("prefix.wave", "symbol X = " + "-" * 50000 + "1;\n")
    tilde = write("tilde.wave", "symbol X = " + "~-" * 25000 + "1;\n")
    for mode in (["--check"], ["--emit=ast"], ["--emit=ir"]):
        m = mode[0]
        expect(f"20,000-term symbol chain {m}", [wavec, sym] + mode, 1, f":1:2061: fatal error")
        expect(f"50,000 prefix '-' {m}", [wavec, neg] + mode, 1, f":1:1036: fatal error")
        expect(f"50,000 prefix '~-' {m}", [wavec, tilde] + mode, 1, too_deep)

    # Kernel expressions: long chains of * and +, mixed with prefixes and brackets.
    def kernel(name, expr):
        return write(name, KERNEL.replace("EXPR", expr))

    col = EXPR_COL + 2 * 1025 - 1  # the 1025th operator of `v op v op ...`
    for op in "*+-":
        path = kernel(f"chain{ord(op)}.wave", op.join(["v"] * 20000))
        for mode in (["--check"], ["--emit=ast"], ["-o", os.path.join(tmp, "o.hsaco")]):
            expect(f"20,000-term '{op}' chain {mode[0]}", [wavec, path] + mode, 1,
                   f":{EXPR_LINE}:{col}: fatal error")
    nested = kernel("nested.wave", "-(" * 200 + "v" + ")" * 200 + " + " + "+".join(["v"] * 5000))
    expect("prefixes in brackets plus a chain --check", [wavec, nested, "--check"], 1, too_deep)
    brackets = kernel("brackets.wave", "(" * 100000 + "v" + ")" * 100000)
    expect("100,000 brackets --check", [wavec, brackets, "--check"], 1, "[nesting-too-deep]")
    calls = kernel("calls.wave", "exp(" * 250 + "-" * 900 + "v" + ")" * 250)
    expect("prefixes inside calls --check", [wavec, calls, "--check"], 1, too_deep)
    elses = write("elses.wave", KERNEL.replace(
        "write(EXPR, b);",
        "if M > 0 { write(v, b); } " + "else if M > 0 { write(v, b); } " * 5000 +
        "else { write(v, b); }"))
    expect("5,000 'else if' --check", [wavec, elses, "--check"], 1, too_deep)
    # Index expressions: a derived symbol, a mapping and an apply_expr lambda.
    idx = write("index_chain.wave", "symbol M, N;\nsymbol S = " + "+".join(["M"] * 20000) +
                ";\n" + KERNEL.split("\n", 1)[1].replace("EXPR", "v"))
    expect("20,000-term index chain --check", [wavec, idx, "--check"], 1, too_deep)
    lam = kernel("lambda.wave", "v * cast(apply_expr(self_index(N, i32), j => " +
                 "+".join(["j"] * 20000) + "), f32)")
    expect("20,000-term lambda chain --check", [wavec, lam, "--check"], 1, too_deep)

    # Within the limit: 1024 operators are fine, and a 500-term chain compiles.
    ok_sym = write("sym_1024.wave", "symbol X = " + "+".join(["1"] * 1025) + ";\n"
                   "symbol M;\n")
    expect("1,024-operator symbol chain --emit=ast", [wavec, ok_sym, "--emit=ast"], 0)
    ok_neg = write("prefix_1024.wave", "symbol X = " + "-" * 1024 + "1;\n")
    expect("1,024 prefix '-' --emit=ast", [wavec, ok_neg, "--emit=ast"], 0)
    ok_chain = kernel("chain_500.wave", "+".join(["v"] * 500))
    expect("500-term chain compiles for gfx942",
           [wavec, ok_chain, "-o", os.path.join(tmp, "ok.hsaco")], 0)
    expect("500-term chain compiles for sm_90",
           [wavec, ok_chain, "--target=sm_90", "-o", os.path.join(tmp, "ok.ptx")], 0)
    deep_ok = kernel("deep_ok.wave", "-" * 1000 + "v")
    expect("1,000 prefixes compile", [wavec, deep_ok, "--target=sm_90", "-o",
                                      os.path.join(tmp, "deep.ptx")], 0)

    # Huge static sizes: bounded unrolling and overflow-checked sizes, answered at once.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = os.path.join(root, "e2e", "kernels", "copy_rows.wave")
    for n, diag in [("100000", "[unroll-too-large]"), ("1000000000000", "[unroll-too-large]"),
                    ("9223372036854775000", "[size-overflow]"),
                    ("9223372036854775807", "[size-overflow]"),
                    ("0x7fff_ffff_ffff_ffff", "[size-overflow]")]:
        expect(f"copy_rows -DN={n} --check", [wavec, rows, "--check", f"-DN={n}"], 1, diag,
               timeout=30)
        expect(f"copy_rows -DN={n} code", [wavec, rows, f"-DN={n}", "-o",
                                           os.path.join(tmp, "rows.hsaco")], 1, diag, timeout=30)

    if wave_run:
        chain = os.path.join(tmp, "chain43.wave")
        expect("wave-run --reference on a 20,000-term chain",
               [wave_run, chain, "--reference", "--size", "M=2", "--size", "N=3"], 2, too_deep)
        expect("wave-run --reference on 50,000 prefixes",
               [wave_run, neg, "--reference"], 2, too_deep)
        expect("wave-run on copy_rows -DN=9223372036854775807",
               [wave_run, rows, "--reference", "-DN=9223372036854775807", "--size", "M=1"], 2,
               "[size-overflow]", timeout=30)

    if failures:
        print(f"{len(failures)} failed: {', '.join(failures)}")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
