#!/usr/bin/env python3
"""GEMM through wavec's generated C stub against torch.matmul (cuBLAS), same process, same data.

  gemm_cuda.py RUNTIME_SO VARIANT=STUB_SO [VARIANT=STUB_SO ...] [--quick] [--rounds R]
              [--shapes M,N,K ...]

Each STUB_SO is a shared library built from a `wavec --stub` C file (it exports gemm_launch);
RUNTIME_SO is libwave_runtime.so. For every shape: random f16 A[M,K], B[N,K]; C poisoned with
NaN; C = A·Bᵀ (f32) by the variant, checked against torch in f32 (TF32 off) by
||out-ref||/||ref|| < 1e-3 and no NaN; then both timed (warm-up, then the median of several
batches of back-to-back launches, each batch between synchronizations) and printed as TFLOP/s. --quick times a few launches only (for a profiler run). --rounds R (default
1) times torch and every variant R times in turn, interleaved, and reports per variant the
median time and the median of the per-round ratios (cuBLAS's speed drifts with the card's
clocks and temperature between runs; interleaving compares like with like). With a bf16
variant, torch.matmul is timed in bf16 too (same data rounded to bf16, in the same rounds), and
the bf16 variants' ratios are against it. A variant's tags after `@`, joined by `+`: `bf16`
(bf16 inputs), `f16c` (its C is f16: checked against the same reference, 2e-3), `bf16c` (its
C is bf16: 8e-3, bf16's rounding), `n8` (compiled
with assume(N % 8 == 0): shapes whose N is not a multiple of 8 are skipped).
"""
import ctypes
import statistics
import sys

import torch
from wave_bench import open_runtime, timer


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    if quick:
        args.remove("--quick")
    rounds = 1
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 4000)]
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = [tuple(int(x) for x in s.split(",")) for s in args[i + 1:]]
        args = args[:i]
    torch.cuda.init()
    rt, dev, stream, check = open_runtime(args[0])
    torch.backends.cuda.matmul.allow_tf32 = False
    variants = []
    ok = True
    for spec in args[1:]:
        name, path = spec.split("=", 1)
        path, _, kind = path.partition("@")
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        if kind == "batched":  # correctness only: bgemm(a, b, c, BATCH, M, N, K)
            lib.bgemm_launch.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 4
            for (B, M, N, K) in ((3, 250, 130, 192), (2, 256, 256, 256), (5, 65, 129, 200)):
                a = torch.randn(B, M, K, device="cuda", dtype=torch.float16)
                b = torch.randn(B, N, K, device="cuda", dtype=torch.float16)
                c = torch.full((B, M, N), float("nan"), device="cuda")
                check(lib.bgemm_launch(stream, a.data_ptr(), b.data_ptr(), c.data_ptr(), B, M, N, K),
                      "bgemm_launch")
                check(rt.wave_stream_synchronize(stream), "synchronize")
                ref = torch.bmm(a.float(), b.float().transpose(1, 2))
                rel = float((c - ref).norm() / ref.norm())
                good = not bool(torch.isnan(c).any()) and rel < 1e-3
                ok &= good
                print(f"{name} batched {B}x{M}x{N}x{K}: rel.err {rel:.2e} {'PASS' if good else 'FAIL'}")
            continue
        lib.gemm_launch.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3
        tags = set(kind.split("+"))
        variants.append((name, lib, torch.bfloat16 if "bf16" in tags else torch.float16, tags))
    print(f"device: {torch.cuda.get_device_name()}")
    rows = []
    for (M, N, K) in shapes:
        torch.manual_seed(M * 7 + N * 3 + K)
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(N, K, device="cuda", dtype=torch.float16)
        c32 = torch.empty(M, N, device="cuda", dtype=torch.float32)
        c16 = torch.empty(M, N, device="cuda", dtype=torch.float16)
        cbf = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        ref = torch.matmul(a.float(), b.float().t())
        a16, b16, ref16 = a, b, ref
        abf, bbf = a.bfloat16(), b.bfloat16()
        refbf = torch.matmul(abf.float(), bbf.float().t())
        flop = 2.0 * M * N * K
        reps = 2 if quick else max(3, int(2e13 / flop))
        batches = 1 if quick else 7

        bench = timer(reps, batches)

        tsync = torch.cuda.synchronize
        torch_fn = lambda: torch.matmul(a16, b16.t())  # noqa: E731
        torch_bf = lambda: torch.matmul(abf, bbf.t())  # noqa: E731
        any_bf = any(dtype == torch.bfloat16 for _, _, dtype, _ in variants)
        timed = []  # (name, launch, sync, rel text, good)
        for name, lib, dtype, tags in variants:
            a, b, ref = (a16, b16, ref16) if dtype == torch.float16 else (abf, bbf, refbf)
            if K % 8 and "async" in name:
                continue  # compiled with assume(K % 8 == 0)
            if N % 8 and "n8" in tags:
                continue  # compiled with assume(N % 8 == 0)
            c = cbf if "bf16c" in tags else c16 if "f16c" in tags else c32

            def launch(lib=lib, a=a, b=b, c=c):
                check(lib.gemm_launch(stream, a.data_ptr(), b.data_ptr(), c.data_ptr(), M, N, K),
                      "gemm_launch")

            def wsync():
                check(rt.wave_stream_synchronize(stream), "synchronize")

            c.fill_(float("nan"))
            torch.cuda.synchronize()
            launch()
            wsync()
            nan = int(torch.isnan(c).sum())
            rel = float((c.float() - ref).norm() / ref.norm())
            good = nan == 0 and rel < (8e-3 if "bf16c" in tags else
                                       2e-3 if "f16c" in tags else 1e-3)
            ok &= good
            timed.append((name, launch, wsync, f"{rel:.2e}{'' if nan == 0 else f' NaN {nan}'}",
                          good))
        t_torch, t_tbf, t_var = [], [], {name: [] for name, *_ in timed}
        for _ in range(rounds):
            t_torch.append(bench(torch_fn, tsync))
            if any_bf:
                t_tbf.append(bench(torch_bf, tsync))
            for name, launch, wsync, _, _ in timed:
                t_var[name].append(bench(launch, wsync))
        tt = statistics.median(t_torch)
        rows.append((f"{M}x{N}x{K}", "torch.matmul", tt, flop / tt / 1e12, "", ""))
        if any_bf:
            tb = statistics.median(t_tbf)
            rows.append((f"{M}x{N}x{K}", "torch.matmul bf16", tb, flop / tb / 1e12, "",
                         f"{statistics.median(x / y for x, y in zip(t_torch, t_tbf)):.2f}x"))
        bf_names = {name for name, _, dtype, _ in variants if dtype == torch.bfloat16}
        for name, _, _, rel, good in timed:
            t = statistics.median(t_var[name])
            base = t_tbf if name in bf_names else t_torch
            ratio = statistics.median(x / y for x, y in zip(base, t_var[name]))
            rows.append((f"{M}x{N}x{K}", name, t, flop / t / 1e12, rel,
                         f"{ratio:.2f}x" + ("" if good else " WRONG")))
        if rounds > 1:
            per = ", ".join(f"{flop / x / 1e12:.0f}" for x in t_torch)
            print(f"{M}x{N}x{K}: torch.matmul per round: {per} TFLOP/s")
            if any_bf:
                per = ", ".join(f"{flop / x / 1e12:.0f}" for x in t_tbf)
                print(f"{M}x{N}x{K}: torch.matmul bf16 per round: {per} TFLOP/s")
            for name, *_ in timed:
                per = ", ".join(f"{flop / x / 1e12:.0f}" for x in t_var[name])
                print(f"{M}x{N}x{K}: {name} per round: {per} TFLOP/s")
    print(f"{'shape':>16} {'variant':>22} {'ms':>8} {'TFLOP/s':>8} {'rel.err':>10} {'vs cuBLAS':>10}")
    for r in rows:
        print(f"{r[0]:>16} {r[1]:>22} {r[2]*1e3:8.3f} {r[3]:8.1f} {r[4]:>10} {r[5]:>10}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
