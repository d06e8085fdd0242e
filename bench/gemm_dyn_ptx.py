#!/usr/bin/env python3
"""GEMM cubins that need dynamic shared memory above 48 KB, launched straight through the
CUDA driver API (the runtime and stub cannot pass that yet), against torch.matmul in the same
process on the same data.

  gemm_dyn_ptx.py NAME=CUBIN:BM:BN:BX:BY:SMEM_BYTES [...]

Each CUBIN holds a kernel `gemm(a, b, c, M, N, K)` (pointers, then i64 dims) compiled by wavec
for a bigger shared-memory budget, its `.shared` array turned into `.extern .shared` by hand;
grid [ceil(M/BM), ceil(N/BN)], block [BX, BY]. Correctness (NaN-poisoned C, relative error
against torch in f32, TF32 off) first, then the median of 7 batches of 10 launches.
"""
import ctypes
import statistics
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    specs = []
    for spec in sys.argv[1:]:
        fields = spec.split("=", 1)[-1].split(":")
        if "=" not in spec or len(fields) != 6 or not all(f.isdigit() for f in fields[1:]):
            sys.exit(f"gemm_dyn_ptx.py: bad variant '{spec}': want NAME=CUBIN:BM:BN:BX:BY:SMEM")
        specs.append([spec.split("=", 1)[0], fields[0]] + [int(f) for f in fields[1:]])
    import torch  # after the argument checks, which need no GPU

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")
    cu = ctypes.CDLL("libcuda.so.1")

    def ck(r, what):
        if r != 0:
            raise RuntimeError(f"{what}: CUresult {r}")

    kernels = []
    for name, path, bm, bn, bx, by, smem in specs:
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        with open(path, "rb") as f:
            image = f.read()
        ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), name + " load")
        ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"gemm"), name + " function")
        ck(cu.cuFuncSetAttribute(fn, 8, smem), name + " max dynamic shared")
        kernels.append((name, fn, bm, bn, bx, by, smem))
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'shape':>16} {'variant':>22} {'ms':>8} {'TFLOP/s':>8} {'rel.err':>10} "
          f"{'vs cuBLAS':>10}")
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 4000)]:
        torch.manual_seed(0)
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(N, K, device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float().T
        c = torch.empty(M, N, device="cuda", dtype=torch.float32)

        def timed(run):
            for _ in range(3):
                run()
            torch.cuda.synchronize()
            times = []
            for _ in range(7):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(10):
                    run()
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e) / 10)
            return statistics.median(times)

        flop = 2.0 * M * N * K
        t_ref = timed(lambda: torch.matmul(a, b.T))
        print(f"{M}x{N}x{K:>5} {'torch.matmul':>22} {t_ref:8.3f} {flop / t_ref / 1e9:8.1f}")
        for name, fn, bm, bn, bx, by, smem in kernels:
            vals = [ctypes.c_uint64(a.data_ptr()), ctypes.c_uint64(b.data_ptr()),
                    ctypes.c_uint64(c.data_ptr()), ctypes.c_int64(M), ctypes.c_int64(N),
                    ctypes.c_int64(K)]
            params = (ctypes.c_void_p * 6)(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
                                              for v in vals])
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

            def run():
                ck(cu.cuLaunchKernel(fn, (M + bm - 1) // bm, (N + bn - 1) // bn, 1, bx, by, 1,
                                     smem, stream, params, None), name + " launch")
            c.fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            err = ((c - ref).norm() / ref.norm()).item()
            ok = err < 1e-3 and not torch.isnan(c).any().item()
            t = timed(run) if ok else float("nan")
            print(f"{M}x{N}x{K:>5} {name:>22} {t:8.3f} {flop / t / 1e9:8.1f} {err:10.2e} "
                  f"{t_ref / t:9.2f}x{'' if ok else '  WRONG'}")


if __name__ == "__main__":
    main()
