#!/usr/bin/env python3
"""fp8 e4m3 GEMM through wavec's generated stub against torch._scaled_mm, same process, same data.

  gemm_fp8_cuda.py RUNTIME_SO NAME=STUB_SO [NAME=STUB_SO ...] [--rounds R] [--shapes M,N,K ...]

Each STUB_SO is a shared library built from a `wavec --stub` of bench/gemm_fp8.wave (or a
variant of it; it exports gemm_fp8_launch(stream, a, b, sa, sb, c, M, N, K)); RUNTIME_SO is
libwave_runtime.so. For every
shape: A[M, K] and B[N, K] random f8e4m3fn (values drawn from a normal distribution, then
rounded), scales sa, sb; C (f16) poisoned with NaN; C = (A Bᵀ) sa sb by the stub and by
torch._scaled_mm (out_dtype f16), both checked against float64 (the fp8 inputs upcast) by
||out - ref|| / ||ref|| (bar 1e-3; the f16 output's own rounding gives about 2.4e-4) with no NaN; then both timed (warm-up, then the
median of several batches of back-to-back launches between synchronizations), R rounds
interleaved with torch._scaled_mm (its default, use_fast_accum=False, the ratios' base) and
torch._scaled_mm(use_fast_accum=True), and reported as TFLOP/s with the median of the
per-round ratios.
"""
import ctypes
import statistics
import sys

import torch
from wave_bench import open_runtime, timer


def main():
    args = sys.argv[1:]
    rounds = 1
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    shapes = [(8192, 8192, 8192), (4096, 4096, 4096), (4095, 4097, 4000), (1, 1, 528)]
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = [tuple(int(x) for x in s.split(",")) for s in args[i + 1:]]
        args = args[:i]
    torch.cuda.init()
    rt, dev, stream, check = open_runtime(args[0])
    libs = []
    for spec in args[1:]:
        name, path = spec.split("=", 1)
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        lib.gemm_fp8_launch.argtypes = ([ctypes.c_void_p] * 3 + [ctypes.c_float] * 2 +
                                        [ctypes.c_void_p] + [ctypes.c_int64] * 3)
        libs.append((name, lib))
    print(f"device: {torch.cuda.get_device_name()}")
    ok = True
    rows = []
    for (M, N, K) in shapes:
        torch.manual_seed(M * 7 + N * 3 + K)
        a = (torch.randn(M, K, device="cuda") * 2).to(torch.float8_e4m3fn)
        b = (torch.randn(N, K, device="cuda") * 2).to(torch.float8_e4m3fn)
        sa, sb = 0.37, 1.9
        sa_t = torch.tensor(sa, device="cuda")
        sb_t = torch.tensor(sb, device="cuda")
        ref = (a.double() @ b.double().t()) * (float(torch.tensor(sa)) * float(torch.tensor(sb)))
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)

        def wsync():
            check(rt.wave_stream_synchronize(stream), "synchronize")

        def torch_fn(fast=False):
            return torch._scaled_mm(a, b.t(), scale_a=sa_t, scale_b=sb_t,
                                    out_dtype=torch.float16, use_fast_accum=fast)

        def err(out):
            nan = int(torch.isnan(out).sum())
            rel = float((out.double() - ref).norm() / ref.norm())
            return rel, nan

        try:
            trel, _ = err(torch_fn())
            torch_ok = True
        except RuntimeError as e:  # torch._scaled_mm wants dims that are multiples of 16
            print(f"{M}x{N}x{K}: torch._scaled_mm: {str(e).splitlines()[0]}")
            trel, torch_ok = float("nan"), False
        timed = []
        for name, lib in libs:
            def launch(lib=lib):
                check(lib.gemm_fp8_launch(stream, a.data_ptr(), b.data_ptr(), sa, sb,
                                          c.data_ptr(), M, N, K), "gemm_fp8_launch")

            c.fill_(float("nan"))
            torch.cuda.synchronize()
            launch()
            wsync()
            rel, nan = err(c)
            good = nan == 0 and rel < 1e-3
            ok &= good
            print(f"{M}x{N}x{K}: {name} rel.err {rel:.2e}{f' NaN {nan}' if nan else ''} "
                  f"{'PASS' if good else 'FAIL'}; torch._scaled_mm rel.err {trel:.2e}")
            timed.append((name, launch, rel, good))
        if M * N * K < 2 ** 30 or not torch_ok:
            continue
        flop = 2.0 * M * N * K
        bench = timer(max(3, int(2e13 / flop)), 7)
        tsync = torch.cuda.synchronize
        t_torch, t_fast, t_var = [], [], {name: [] for name, *_ in timed}
        frel, _ = err(torch_fn(True))
        for _ in range(rounds):
            t_torch.append(bench(torch_fn, tsync))
            t_fast.append(bench(lambda: torch_fn(True), tsync))
            for name, launch, _, _ in timed:
                t_var[name].append(bench(launch, wsync))
        tt = statistics.median(t_torch)
        print(f"{M}x{N}x{K}: per round TFLOP/s torch {', '.join(f'{flop / x / 1e12:.0f}' for x in t_torch)}")
        rows.append((f"{M}x{N}x{K}", "torch._scaled_mm", tt, flop / tt / 1e12, f"{trel:.2e}", ""))
        tf = statistics.median(t_fast)
        fratio = statistics.median(x / y for x, y in zip(t_torch, t_fast))
        rows.append((f"{M}x{N}x{K}", "torch fast_accum", tf, flop / tf / 1e12, f"{frel:.2e}",
                     f"{fratio:.2f}x"))
        for name, _, rel, good in timed:
            tw = statistics.median(t_var[name])
            ratio = statistics.median(x / y for x, y in zip(t_torch, t_var[name]))
            print(f"{M}x{N}x{K}: per round TFLOP/s {name} "
                  f"{', '.join(f'{flop / x / 1e12:.0f}' for x in t_var[name])}")
            rows.append((f"{M}x{N}x{K}", name, tw, flop / tw / 1e12, f"{rel:.2e}",
                         f"{ratio:.2f}x" + ("" if good else " WRONG")))
    print(f"{'shape':>16} {'variant':>22} {'ms':>8} {'TFLOP/s':>8} {'rel.err':>10} {'vs torch':>9}")
    for r in rows:
        print(f"{r[0]:>16} {r[1]:>22} {r[2]*1e3:8.3f} {r[3]:8.1f} {r[4]:>10} {r[5]:>9}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
