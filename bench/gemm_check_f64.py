#!/usr/bin/env python3
"""GEMM correctness through wavec's generated C stub against a float64 reference.

  gemm_check_f64.py RUNTIME_SO VARIANT=STUB_SO[@TAGS] [VARIANT=STUB_SO ...]

Each STUB_SO exports gemm_launch(stream, a, b, c, M, N, K) for C[M, N] (f32) = A[M, K] ·
B[N, K]ᵀ (f16, or bf16 with @bf16). For every shape, twice with fresh random inputs (new
tensors, so new pointers for a stub's cached TMA tensor maps): C poisoned with NaN, checked
against float64 by ||out - ref|| / ||ref|| < 1e-4 (f16 products are exact in the f32
accumulator; what remains is the order of the f32 sums) and no NaN. Then two shapes over one
storage (the same pointer with two shapes: a tensor-map cache keyed by pointer alone would give
the second launch the first shape's map). Shapes respect the sample's assumptions (K > 256,
K % 8 == 0). Prints one line per check and FAIL/PASS last; exits 1 on any failure.
TAGS, joined by `+`: `bf16` (bf16 inputs); `f16c` (C is f16, poisoned with NaN: checked against
float64 by 1e-3 and against the float64 result rounded to f16 by 2e-4, which a misplaced element
fails); `n8` (compiled with assume(N % 8 == 0), as the TMA-stored epilogue needs: SHAPES_N8, the
same raggedness in M and K, N a multiple of 8 but not of the tile).
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
SHAPES_N8 = [(4096, 4096, 4096), (4095, 4104, 4000), (1, 8, 264), (129, 72, 520), (300, 72, 264),
             (1, 264, 4000), (257, 8, 328), (128, 256, 264), (2000, 3000, 264), (1000, 5000, 328),
             (3000, 1000, 1032), (130, 264, 392)]


def main():
    rt, dev, stream, check = open_runtime(sys.argv[1])
    ok = True
    for spec in sys.argv[2:]:
        name, path = spec.split("=", 1)
        path, _, kind = path.partition("@")
        tags = set(kind.split("+"))
        dt = torch.bfloat16 if "bf16" in tags else torch.float16
        f16c = "f16c" in tags
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        lib.gemm_launch.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3

        def run(a, b, M, N, K, label):
            c = torch.full((M, N), float("nan"), device="cuda",
                           dtype=torch.float16 if f16c else torch.float32)
            torch.cuda.synchronize()
            check(lib.gemm_launch(stream, a.data_ptr(), b.data_ptr(), c.data_ptr(), M, N, K),
                  "gemm_launch")
            check(rt.wave_stream_synchronize(stream), "synchronize")
            ref = a.double() @ b.double().T
            nan = int(torch.isnan(c).sum())
            rel = float((c.double() - ref).norm() / ref.norm())
            good = nan == 0 and rel < (1e-3 if f16c else 1e-4)
            extra = ""
            if f16c:
                rounded = float((c.double() - ref.half().double()).norm() / ref.norm())
                good &= rounded < 2e-4
                extra = f" vs f16-rounded {rounded:.2e}"
            print(f"{name} {label} {M}x{N}x{K}: rel {rel:.2e}{extra} NaN {nan} "
                  f"{'ok' if good else 'FAIL'}", flush=True)
            return good

        for (M, N, K) in (SHAPES_N8 if "n8" in tags else SHAPES):
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
