#!/usr/bin/env python3
"""The fused GEMM epilogue (samples/gemm_epilogue) against the plain GEMM of the same tiles and
against torch, same process, same data, interleaved rounds.

  gemm_epilogue_cuda.py RUNTIME_SO CONFIG=PLAIN_SO,EPILOGUE_SO [CONFIG=...] [--rounds R]
                        [--shapes M,N,K ...]

PLAIN_SO is a shared library built from the `wavec --stub` of samples/gemm/gemm_portable.wave
(exports gemm_launch: C f32 = A·Bᵀ); EPILOGUE_SO from samples/gemm_epilogue/gemm_epilogue.wave
compiled with the same tiles (exports gemm_bias_relu_launch and gemm_bias_gelu_launch: C f16 =
act(A·Bᵀ + bias)). PLAIN_SO@f16c: that plain GEMM writes f16 C (checked by 2e-3). For every shape: random f16 A[M,K], B[N,K], f32 bias[N]; outputs poisoned
with NaN; each kernel checked against torch in f32 (||out-ref||/||ref|| < 2e-3 for the f16
outputs, 1e-3 for f32, no NaN); then timed (median of batches of back-to-back launches) R times
in turn with the torch versions (torch.matmul; relu(addmm(bias, A, Bᵀ)) and gelu(..., tanh) in
f16). Prints TFLOP/s (2·M·N·K flops) and, per config, the epilogue's time over the plain GEMM's.
"""
import ctypes
import statistics
import sys

import torch
import torch.nn.functional as F
from wave_bench import open_runtime, timer


def main():
    args = sys.argv[1:]
    rounds = 3
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192)]
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = [tuple(int(x) for x in s.split(",")) for s in args[i + 1:]]
        args = args[:i]
    torch.cuda.init()
    rt, dev, stream, check = open_runtime(args[0])
    configs = []
    for spec in args[1:]:
        name, paths = spec.split("=", 1)
        plain_path, epi_path = paths.split(",")
        plain_path, _, plain_kind = plain_path.partition("@")
        plain = ctypes.CDLL(plain_path, mode=ctypes.RTLD_LOCAL)
        epi = ctypes.CDLL(epi_path, mode=ctypes.RTLD_LOCAL)
        plain.gemm_launch.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3
        for f in (epi.gemm_bias_relu_launch, epi.gemm_bias_gelu_launch):
            f.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 3
        configs.append((name, plain, epi, plain_kind == "f16c"))
    print(f"device: {torch.cuda.get_device_name()}")
    torch.backends.cuda.matmul.allow_tf32 = False
    ok = True
    rows = []
    wsync = lambda: check(rt.wave_stream_synchronize(stream), "synchronize")  # noqa: E731
    for (M, N, K) in shapes:
        torch.manual_seed(M * 7 + N * 3 + K)
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(N, K, device="cuda", dtype=torch.float16)
        bias = torch.randn(N, device="cuda", dtype=torch.float32)
        c32 = torch.empty(M, N, device="cuda", dtype=torch.float32)
        c16 = torch.empty(M, N, device="cuda", dtype=torch.float16)
        z = torch.matmul(a.float(), b.float().t()) + bias
        refs = {"plain": z - bias, "relu": torch.relu(z), "gelu": F.gelu(z, approximate="tanh")}
        flop = 2.0 * M * N * K
        bench = timer(max(3, int(2e13 / flop)), 7)
        b16 = bias.half()
        torch_fns = {
            "torch matmul": lambda: torch.matmul(a, b.t()),
            "torch relu(addmm)": lambda: torch.relu(torch.addmm(b16, a, b.t())),
            "torch gelu(addmm)": lambda: F.gelu(torch.addmm(b16, a, b.t()), approximate="tanh"),
        }
        kernels = []  # (label, launch, out, ref kind)
        for name, plain, epi, plain16 in configs:
            cp = c16 if plain16 else c32

            def lp(plain=plain, cp=cp):
                check(plain.gemm_launch(stream, a.data_ptr(), b.data_ptr(), cp.data_ptr(), M, N,
                                        K), "gemm_launch")

            def lr(epi=epi):
                check(epi.gemm_bias_relu_launch(stream, a.data_ptr(), b.data_ptr(),
                                                bias.data_ptr(), c16.data_ptr(), M, N, K),
                      "gemm_bias_relu_launch")

            def lg(epi=epi):
                check(epi.gemm_bias_gelu_launch(stream, a.data_ptr(), b.data_ptr(),
                                                bias.data_ptr(), c16.data_ptr(), M, N, K),
                      "gemm_bias_gelu_launch")
            kernels += [(f"{name} plain", lp, cp, "plain"), (f"{name} +bias+relu", lr, c16, "relu"),
                        (f"{name} +bias+gelu", lg, c16, "gelu")]
        errs = {}
        for label, launch, out, kind in kernels:
            out.fill_(float("nan"))
            torch.cuda.synchronize()
            launch()
            wsync()
            o = out.float()
            nan = int(torch.isnan(o).sum())
            rel = float((o - refs[kind]).norm() / refs[kind].norm())
            good = nan == 0 and rel < (1e-3 if kind == "plain" and out is c32 else 2e-3)
            ok &= good
            errs[label] = f"{rel:.1e}" + ("" if nan == 0 else f" NaN {nan}") + ("" if good else " WRONG")
        times = {label: [] for label in list(torch_fns) + [k[0] for k in kernels]}
        for _ in range(rounds):
            for label, fn in torch_fns.items():
                times[label].append(bench(fn, torch.cuda.synchronize))
            for label, launch, _, _ in kernels:
                times[label].append(bench(launch, wsync))
        for label, ts in times.items():
            t = statistics.median(ts)
            rows.append((f"{M}x{N}x{K}", label, t, flop / t / 1e12, errs.get(label, "")))
        for name, *_ in configs:
            tp = times[f"{name} plain"]
            for act in ("relu", "gelu"):
                te = times[f"{name} +bias+{act}"]
                ratio = statistics.median(x / y for x, y in zip(te, tp))
                print(f"{M}x{N}x{K} {name}: +bias+{act} takes {ratio:.3f}x the plain GEMM's time "
                      f"(median of {rounds} interleaved rounds)")
    print(f"{'shape':>16} {'kernel':>36} {'ms':>8} {'TFLOP/s':>8} {'rel.err':>10}")
    for r in rows:
        print(f"{r[0]:>16} {r[1]:>36} {r[2]*1e3:8.3f} {r[3]:8.1f} {r[4]:>10}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
