#!/usr/bin/env python3
"""Attention forward through wavec's generated C stub against torch's scaled_dot_product_attention,
same process, same data.

  attention_cuda.py RUNTIME_SO NAME=STUB_SO:D[:causal] [NAME=...] [--shapes B,H,S ...]

Each STUB_SO is a shared library built from `wavec samples/attention/attention.wave -DD=D --stub`
(it exports attention_launch(stream, q, k, v, o, scale, BH, M, K2)); RUNTIME_SO is
libwave_runtime.so. Per shape and head dim: q, k, v = randn f16 [B, H, S, D]; o poisoned with
NaN; first a small shape against a float64 reference, then the big one against torch's f16
result (||out - ref|| / ||ref||, no NaN), then both timed (warm-up, median of 7 batches of
back-to-back launches between synchronizations). TFLOP/s = 4·B·H·S²·D / time. torch's default
SDPA is the peer; its individual backends are timed too where they run (once). With ROUNDS=N
(environment) torch's default and the variants are timed in N interleaved rounds: the table
gives the median time over the rounds and the median of the per-round ratios to torch.
A variant marked `:causal` (samples/attention/attention_causal.wave) is compared with torch's
`is_causal=True` (query i sees keys 0..i); its TFLOP/s count half the products (2·B·H·S²·D),
as FlashAttention's benchmarks do.
"""
import contextlib
import ctypes
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

from wave_bench import open_runtime, timer


def median_time(fn, sync, reps):
    return timer(reps, 7)(fn, sync)


def main():
    args = sys.argv[1:]
    shapes = [(4, 32, 4096)]
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = [tuple(int(x) for x in s.split(",")) for s in args[i + 1:]]
        args = args[:i]
    torch.cuda.init()
    rt, dev, stream, check = open_runtime(args[0])
    variants = []
    for spec in args[1:]:
        name, rest = spec.split("=", 1)
        causal = rest.endswith(":causal")
        path, d = rest.removesuffix(":causal").rsplit(":", 1)
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        lib.attention_launch.argtypes = ([ctypes.c_void_p] * 5 + [ctypes.c_float] +
                                         [ctypes.c_int64] * 3)
        variants.append((name, lib, (int(d), causal)))
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")

    def wsync():
        check(rt.wave_stream_synchronize(stream), "synchronize")

    def run(lib, q, k, v, o):
        B, H, S, D = q.shape
        check(lib.attention_launch(stream, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                   1.0 / math.sqrt(D), B * H, S, k.shape[2]), "attention_launch")

    ok = True
    rows = []
    # Correctness on a small ragged shape against float64.
    for name, lib, (D, causal) in variants:
        torch.manual_seed(D)
        q = torch.randn(2, 3, 333, D, device="cuda", dtype=torch.float16)
        k = torch.randn(2, 3, 250, D, device="cuda", dtype=torch.float16)
        v = torch.randn(2, 3, 250, D, device="cuda", dtype=torch.float16)
        o = torch.full_like(q, float("nan"))
        run(lib, q, k, v, o)
        wsync()
        sc = q.double() @ k.double().transpose(-1, -2) / math.sqrt(D)
        if causal:
            sc = sc.masked_fill(torch.ones(333, 250, device="cuda").tril().logical_not(),
                                float("-inf"))
        ref = F.softmax(sc, -1) @ v.double()
        rel = float((o.double() - ref).norm() / ref.norm())
        good = not bool(torch.isnan(o).any()) and rel < 5e-3
        ok &= good
        print(f"{name} D={D}{' causal' if causal else ''} 2x3x333 (keys 250) vs float64: "
              f"rel.err {rel:.2e} "
              f"{'PASS' if good else 'FAIL'}")
    backends = {}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                    "efficient": SDPBackend.EFFICIENT_ATTENTION}
    except ImportError:
        pass
    for (B, H, S) in shapes:
        for D, causal in sorted({d for _, _, d in variants}):
            torch.manual_seed(B * 1000 + S + D)
            q = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
            k = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
            v = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
            flop = 4.0 * B * H * S * S * D / (2 if causal else 1)
            sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
            reps = max(3, int(5e12 / flop))
            tsync = torch.cuda.synchronize
            ref = sdpa()
            mine = [(name, lib) for name, lib, d in variants if d == (D, causal)]
            # ROUNDS interleaved rounds (torch's default, then each variant, per round): the
            # medians over rounds, and each variant's median per-round ratio to torch.
            rounds = max(1, int(os.environ.get("ROUNDS", "1")))
            outs = {name: torch.full_like(q, float("nan")) for name, _ in mine}
            for name, lib in mine:  # every variant runs once before any timing
                run(lib, q, k, v, outs[name])
            wsync()
            times = {name: [] for name, _ in mine}
            torch_times = []
            for _ in range(rounds):
                torch_times.append(median_time(sdpa, tsync, reps))
                for name, lib in mine:
                    o = outs[name]
                    times[name].append(median_time(lambda: run(lib, q, k, v, o), wsync, reps))
            t_torch = statistics.median(torch_times)
            if rounds > 1:  # per round, TFLOP/s: the spread behind the medians
                for name, ts in [("torch SDPA (default)", torch_times)] + list(times.items()):
                    per = ", ".join(f"{flop / t / 1e12:.0f}" for t in ts)
                    print(f"{B}x{H}x{S}x{D}{'c' if causal else ''} {name} per round: {per}")
            shape = f"{B}x{H}x{S}x{D}{'c' if causal else ''}"
            rows.append((shape, "torch SDPA (default)", t_torch, flop / t_torch / 1e12, "", ""))
            for bname, backend in backends.items():
                try:
                    with sdpa_kernel(backend):
                        sdpa()
                        t = median_time(sdpa, tsync, reps)
                    rows.append((shape, f"torch SDPA {bname}", t, flop / t / 1e12, "", ""))
                except RuntimeError as e:
                    rows.append((shape, f"torch SDPA {bname}", float("nan"), float("nan"),
                                 "n/a", str(e).split("\n")[0][:30]))
            for name, lib in mine:
                o = outs[name]
                o.fill_(float("nan"))
                torch.cuda.synchronize()
                run(lib, q, k, v, o)
                wsync()
                nan = int(torch.isnan(o).sum())
                rel = float((o.float() - ref.float()).norm() / ref.float().norm())
                good = nan == 0 and rel < 5e-3
                ok &= good
                t = statistics.median(times[name])
                ratio = statistics.median(a / b for a, b in zip(torch_times, times[name]))
                rows.append((shape, name, t, flop / t / 1e12,
                             f"{rel:.2e}{'' if nan == 0 else f' NaN {nan}'}",
                             f"{ratio:.2f}x" + ("" if good else " WRONG")))
    print(f"{'BxHxSxD':>16} {'variant':>24} {'ms':>8} {'TFLOP/s':>8} {'rel.err':>10} "
          f"{'vs torch':>10}")
    for r in rows:
        print(f"{r[0]:>16} {r[1]:>24} {r[2]*1e3:8.3f} {r[3]:8.1f} {r[4]:>10} {r[5]:>10}")
    return 0 if ok else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
