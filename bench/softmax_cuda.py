#!/usr/bin/env python3
"""Row softmax through wavec's generated C stubs against torch.softmax, same process, same data.

  softmax_cuda.py RUNTIME_SO VARIANT=STUB_SO@KIND [VARIANT=STUB_SO@KIND ...] [--size M,N]

Each STUB_SO is a shared library built from a `wavec --stub` C file; RUNTIME_SO is
libwave_runtime.so. KIND says which launch functions the stub exports, and `:N` that it was compiled for rows of
length N (-DN=N: the launch then takes no N):
  softmax[:N]  softmax_launch / softmax_f16_launch: samples/softmax/softmax.wave
  rows:N       softmax_rows_launch / softmax_rows_f16_launch: samples/softmax/softmax_rows.wave
  online       online_softmax_launch (x, y, lse, M, N): samples/softmax/online_softmax.wave
The launches go to a wave stream, a blocking CUDA stream, which orders itself with torch's
(legacy default) stream, so torch's events around them time them.

Correctness first, for every variant and dtype: fresh torch.randn inputs (plus unaligned shapes
for the kinds that take any N), the output poisoned with NaN, compared with torch.softmax of the
input in float64 by ||out - ref|| / ||ref|| and the largest element error (no NaN allowed).
Then timing at M x N (default 8192 x 8192) in f16 and f32: torch.softmax and each variant on the
same tensors, warm-up, then the median over 15 batches of 20 back-to-back launches (events
around each batch); GB/s counts one read of x and one write of y.
"""
import ctypes
import statistics
import sys

import torch

from wave_bench import open_runtime


def main():
    args = sys.argv[1:]
    M, N = 8192, 8192
    if "--size" in args:
        i = args.index("--size")
        M, N = (int(v) for v in args[i + 1].split(","))
        del args[i:i + 2]
    torch.cuda.init()
    rt, dev, stream, check = open_runtime(args[0])
    P, I64 = ctypes.c_void_p, ctypes.c_int64

    # (name, dtype, row length it was compiled for or None, launch(x, y, M, N))
    families = {"softmax": (("softmax_launch", torch.float32), ("softmax_f16_launch", torch.float16)),
                "rows": (("softmax_rows_launch", torch.float32),
                         ("softmax_rows_f16_launch", torch.float16)),
                "online": (("online_softmax_launch", torch.float32),)}
    variants, lse_out = [], {}
    for spec in args[1:]:
        name, path = spec.split("=", 1)
        path, _, kind = path.partition("@")
        family, _, bound = kind.partition(":")
        rows_n = int(bound) if bound else None
        if family not in families:
            raise SystemExit(f"unknown kind '{kind}' in {spec}")
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        for fn, dt in families[family]:
            f = getattr(lib, fn)
            lse = family == "online"
            f.argtypes = [P, P, P] + ([P] if lse else []) + [I64] + ([] if rows_n else [I64])

            def launch(x, y, m, n, f=f, lse=lse, rows_n=rows_n):
                # the log-sum-exp output: one buffer per row count, kept for the whole run
                extra = [lse_out.setdefault(m, torch.empty(m, device="cuda")).data_ptr()] if lse else []
                dims = [m] if rows_n else [m, n]
                return f(stream, x.data_ptr(), y.data_ptr(), *extra, *dims)
            variants.append((name, dt, rows_n, launch))

    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    ok = True
    tol = {torch.float32: 1e-5, torch.float16: 2e-3}
    # Correctness on fresh random data, aligned and unaligned shapes.
    for name, dt, rows_n, launch in variants:
        shapes = [(M, N)] if rows_n is None else [(M, rows_n)]
        if rows_n is None:
            shapes += [(1000, 3001), (7, 5), (3, 70001)]
        else:
            shapes += [(77, rows_n)]
        for (m, n) in shapes:
            x = torch.randn(m, n, device="cuda", dtype=dt) * 3
            y = torch.full_like(x, float("nan"))
            torch.cuda.synchronize()
            check(launch(x, y, m, n), name)
            check(rt.wave_stream_synchronize(stream), "synchronize")
            ref = torch.softmax(x.double(), dim=1)
            nan = int(torch.isnan(y).sum())
            rel = float((y.double() - ref).norm() / ref.norm())
            worst = float((y.double() - ref).abs().max())
            good = nan == 0 and rel < tol[dt]
            ok &= good
            print(f"check {name:>14} {str(dt)[6:]:>7} {m}x{n}: rel.err {rel:.2e}, max abs err "
                  f"{worst:.2e}{'' if nan == 0 else f', {nan} NaN'} {'PASS' if good else 'FAIL'}")

    def timed(fn):
        """Median seconds per call over batches of back-to-back calls."""
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(15):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(20):
                fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 20 * 1e-3)
        return statistics.median(times), min(times), max(times)

    rows = []
    for dt in (torch.float16, torch.float32):
        x = torch.randn(M, N, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        t_copy = timed(lambda: y.copy_(x))
        rows.append((str(dt)[6:], "copy_ (ceiling)", t_copy, nbytes, None))
        t_torch = timed(lambda: torch.softmax(x, dim=1))
        rows.append((str(dt)[6:], "torch.softmax", t_torch, nbytes, None))
        for name, vdt, rows_n, launch in variants:
            if vdt != dt or (rows_n is not None and rows_n != N):
                continue
            t = timed(lambda: check(launch(x, y, M, N), name))
            rows.append((str(dt)[6:], name, t, nbytes, t_torch[0] / t[0]))
    print(f"\nsoftmax {M}x{N}: median (min-max) of 15 batches of 20 launches")
    print(f"{'dtype':>8} {'variant':>16} {'ms':>8} {'min':>8} {'max':>8} {'GB/s':>8} {'vs torch':>9}")
    for dt, name, (med, lo, hi), nbytes, ratio in rows:
        print(f"{dt:>8} {name:>16} {med*1e3:8.4f} {lo*1e3:8.4f} {hi*1e3:8.4f} "
              f"{nbytes / med / 1e9:8.1f} {'' if ratio is None else f'{ratio:8.2f}x':>9}")
    print("ALL CORRECT" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
