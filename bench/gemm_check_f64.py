#!/usr/bin/env python3
"""GEMM correctness through wavec's generated C stub against a float64 reference.

  gemm_check_f64.py RUNTIME_SO VARIANT=STUB_SO[@bf16] [VARIANT=STUB_SO ...]

Each STUB_SO exports gemm_launch(stream, a, b, c, M, N, K) for C[M, N] (f32) = A[M, K] ·
B[N, K]ᵀ (f16, or bf16 with @bf16). For every shape, twice with fresh random inputs (new
tensors, so new pointers for a stub's cached TMA tensor maps): C poisoned with NaN, checked
against float64 by ||out - ref|| / ||ref|| < 1e-4 (f16 products are exact in the f32
accumulator; what remains is the order of the f32 sums) and no NaN. Then two shapes over one
storage (the same pointer with two shapes: a tensor-map cache keyed by pointer alone would give
the second launch the first shape's map). Shapes respect the sample's assumptions (K > 256,
K % 8 == 0). Prints one line per check and FAIL/PASS last; exits 1 on any failure.
"""
import ctypes
import sys

import torch
from wave_bench import open_runtime

SHAPES = [(4096, 4096, 4096), (4095, 4097, 4000), (1, 1, 264), (129, 67, 520), (300, 77, 264),
          (1, 257, 4000), (257, 1, 328), (128, 256, 264),
          # persistent tiles: more tiles than SMs with a K trip count that is not a multiple of
          # the ring's 4 buffers (the phases go on across tiles), and a partial group
          (2000, 3000, 264), (1000, 5000, 328), (3000, 1000, 1032)]


def main():
    rt, dev, stream, check = open_runtime(sys.argv[1])
    ok = True
    for spec in sys.argv[2:]:
        name, path = spec.split("=", 1)
        path, _, kind = path.partition("@")
        dt = torch.bfloat16 if kind == "bf16" else torch.float16
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        lib.gemm_launch.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3

        def run(a, b, M, N, K, label):
            c = torch.full((M, N), float("nan"), device="cuda")
            torch.cuda.synchronize()
            check(lib.gemm_launch(stream, a.data_ptr(), b.data_ptr(), c.data_ptr(), M, N, K),
                  "gemm_launch")
            check(rt.wave_stream_synchronize(stream), "synchronize")
            ref = a.double() @ b.double().T
            nan = int(torch.isnan(c).sum())
            rel = float((c.double() - ref).norm() / ref.norm())
            good = nan == 0 and rel < 1e-4
            print(f"{name} {label} {M}x{N}x{K}: rel {rel:.2e} NaN {nan} {'ok' if good else 'FAIL'}",
                  flush=True)
            return good

        for (M, N, K) in SHAPES:
            for trial in range(2):
                a = torch.randn(M, K, device="cuda", dtype=dt)
                b = torch.randn(N, K, device="cuda", dtype=dt)
                ok &= run(a, b, M, N, K, f"trial {trial}")
        sa = torch.randn(1 << 20, device="cuda", dtype=dt)
        sb = torch.randn(1 << 20, device="cuda", dtype=dt)
        for (M, N, K) in ((512, 512, 512), (256, 1024, 1024), (512, 512, 512)):
            ok &= run(sa[:M * K].view(M, K), sb[:N * K].view(N, K), M, N, K, "shared storage")
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
