# Opt-in GPU check of the code generator (not run by CTest: needs an NVIDIA GPU and numpy):
#   wavec samples/copy/copy.wave --target=sm_90 -o DIR/copy.ptx (and .cubin; same for
#   samples/elementwise/elementwise.wave), then: python3 bench/cuda_memory_bound.py DIR
# Runs both kernels through the CUDA driver API (ctypes), compares with numpy on random data,
# aligned and unaligned shapes, and times a 1 GiB f16 copy (against torch when installed).
import ctypes, sys, os, time
import numpy as np
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        s = ctypes.c_char_p(); cu.cuGetErrorString(r, ctypes.byref(s)); raise RuntimeError(f"{what}: {r} {s.value}")
ck(cu.cuInit(0), "init")
dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "dev")
ctx = ctypes.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx"); ck(cu.cuCtxSetCurrent(ctx), "cur")
D = sys.argv[1] if len(sys.argv) > 1 else "."
def load(name, ext):
    data = open(os.path.join(D, name + ext), "rb").read() + (b"\0" if ext == ".ptx" else b"")
    m = ctypes.c_void_p(); ck(cu.cuModuleLoadData(ctypes.byref(m), ctypes.c_char_p(data)), "load " + name + ext)
    f = ctypes.c_void_p(); ck(cu.cuModuleGetFunction(ctypes.byref(f), m, name.encode()), "func")
    return f
def alloc(nbytes):
    p = ctypes.c_uint64(); ck(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(max(nbytes, 1))), "alloc"); return p
def h2d(p, arr): ck(cu.cuMemcpyHtoD_v2(p, arr.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(arr.nbytes)), "h2d")
def d2h(arr, p): ck(cu.cuMemcpyDtoH_v2(arr.ctypes.data_as(ctypes.c_void_p), p, ctypes.c_size_t(arr.nbytes)), "d2h")
def launch(f, grid, block, args):
    holders = [a for a in args]
    ptrs = (ctypes.c_void_p * len(holders))(*[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
    ck(cu.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, None, ptrs, None), "launch")
def cdiv(a, b): return (a + b - 1) // b
ok = True
for ext in (".ptx", ".cubin"):
    fcopy = load("copy", ext); few = load("elementwise", ext)
    for M, N in ((4096, 4096), (4093, 1021), (1, 7), (17, 255)):
        a = np.random.rand(M, N).astype(np.float16)
        pa, pb = alloc(a.nbytes), alloc(a.nbytes)
        h2d(pa, a); h2d(pb, np.zeros_like(a))
        launch(fcopy, (cdiv(N, 256), cdiv(M, 16), 1), (32, 1, 1), [pa, pb, ctypes.c_int64(M), ctypes.c_int64(N)])
        ck(cu.cuCtxSynchronize(), "sync"); out = np.empty_like(a); d2h(out, pb)
        good = np.array_equal(out, a); ok &= good
        print(f"copy{ext} {M}x{N}: {'OK' if good else 'MISMATCH'}")
        x = np.random.rand(M, N).astype(np.float32); b = np.random.rand(N).astype(np.float32); alpha = np.float32(1.75)
        px, pbb, pc = alloc(x.nbytes), alloc(b.nbytes), alloc(x.nbytes)
        h2d(px, x); h2d(pbb, b)
        launch(few, (cdiv(N, 256), cdiv(M, 4), 1), (32, 1, 1), [px, pbb, ctypes.c_float(alpha), pc, ctypes.c_int64(M), ctypes.c_int64(N)])
        ck(cu.cuCtxSynchronize(), "sync"); c = np.empty_like(x); d2h(c, pc)
        ref = x * alpha + b[None, :]
        good = np.allclose(c, ref, rtol=1e-6, atol=1e-6); ok &= good
        print(f"elementwise{ext} {M}x{N}: {'OK' if good else 'MISMATCH max err %g' % np.abs(c - ref).max()}")
        for p in (pa, pb, px, pbb, pc): cu.cuMemFree_v2(p)
# math built-ins (tests/codegen/inputs/math.wave), when DIR has math.ptx
if os.path.exists(os.path.join(D, "math.ptx")):
    fm = load("math", ".ptx")
    M, N = 3, 1000
    x = (np.random.rand(M, N) * 2 + 0.05).astype(np.float32)
    px, pb = alloc(x.nbytes), alloc(x.nbytes)
    h2d(px, x)
    launch(fm, (cdiv(N, 256), M, 1), (32, 1, 1), [px, pb, ctypes.c_int64(M), ctypes.c_int64(N)])
    ck(cu.cuCtxSynchronize(), "sync"); y = np.empty_like(x); d2h(y, pb)
    r = (np.exp(x) + np.exp2(x) + np.log(x) + np.log2(x) + np.sqrt(x) + 1 / np.sqrt(x) + 1 / x + np.abs(-x)
         + np.tanh(x) + np.sin(x) + np.cos(x) + np.maximum(x, 0.5) + np.minimum(x, 0.25)
         + x.astype(np.float16).astype(np.float32) + np.where(x > 0.5, x, -x))
    good = np.allclose(y, r, rtol=2e-5, atol=2e-5); ok &= good
    print(f"math {M}x{N}: {'OK' if good else 'MISMATCH max err %g' % np.abs(y - r).max()}")
# bandwidth: 1 GiB f16 copy (16384 x 32768)
fcopy = load("copy", ".cubin")
M, N = 16384, 32768
nbytes = M * N * 2
pa, pb = alloc(nbytes), alloc(nbytes)
args = [pa, pb, ctypes.c_int64(M), ctypes.c_int64(N)]
for _ in range(3): launch(fcopy, (cdiv(N, 256), cdiv(M, 16), 1), (32, 1, 1), args)
ck(cu.cuCtxSynchronize(), "sync")
e0, e1 = ctypes.c_void_p(), ctypes.c_void_p(); cu.cuEventCreate(ctypes.byref(e0), 0); cu.cuEventCreate(ctypes.byref(e1), 0)
cu.cuEventRecord(e0, None)
R = 20
for _ in range(R): launch(fcopy, (cdiv(N, 256), cdiv(M, 16), 1), (32, 1, 1), args)
cu.cuEventRecord(e1, None); cu.cuEventSynchronize(e1)
ms = ctypes.c_float(); cu.cuEventElapsedTime(ctypes.byref(ms), e0, e1)
print(f"copy 1 GiB f16: {ms.value / R:.3f} ms/iter, {2 * nbytes / (ms.value / R * 1e-3) / 1e9:.1f} GB/s (read+write)")
try:
    import torch
    ta = torch.empty(M, N, dtype=torch.float16, device="cuda"); tb = torch.empty_like(ta)
    for _ in range(3): tb.copy_(ta)
    torch.cuda.synchronize(); s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(R): tb.copy_(ta)
    e.record(); torch.cuda.synchronize()
    t = s.elapsed_time(e) / R
    print(f"torch copy_ 1 GiB f16: {t:.3f} ms/iter, {2 * nbytes / (t * 1e-3) / 1e9:.1f} GB/s")
except Exception as ex:
    print("torch not available:", ex)
# elementwise c = a * alpha + b over 1 GiB of f32 (16384 x 16384)
few = load("elementwise", ".cubin")
M = N = 16384
pa, pb, pc = alloc(M * N * 4), alloc(N * 4), alloc(M * N * 4)
args = [pa, pb, ctypes.c_float(1.5), pc, ctypes.c_int64(M), ctypes.c_int64(N)]
grid = (cdiv(N, 256), cdiv(M, 4), 1)
for _ in range(3): launch(few, grid, (32, 1, 1), args)
cu.cuEventRecord(e0, None)
for _ in range(R): launch(few, grid, (32, 1, 1), args)
cu.cuEventRecord(e1, None); cu.cuEventSynchronize(e1)
cu.cuEventElapsedTime(ctypes.byref(ms), e0, e1)
print(f"elementwise 1 GiB f32: {ms.value / R:.3f} ms/iter, {2 * M * N * 4 / (ms.value / R * 1e-3) / 1e9:.1f} GB/s")
try:
    import torch
    ta = torch.empty(M, N, dtype=torch.float32, device="cuda"); tb = torch.empty(N, dtype=torch.float32, device="cuda")
    tc = torch.empty_like(ta)
    for _ in range(3): torch.add(tb, ta, alpha=1.5, out=tc)
    torch.cuda.synchronize(); s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(R): torch.add(tb, ta, alpha=1.5, out=tc)
    e.record(); torch.cuda.synchronize()
    t = s.elapsed_time(e) / R
    print(f"torch add(b, a, alpha) 1 GiB f32: {t:.3f} ms/iter, {2 * M * N * 4 / (t * 1e-3) / 1e9:.1f} GB/s")
except Exception as ex:
    print("torch not available:", ex)
print("ALL OK" if ok else "FAILURES")
sys.exit(0 if ok else 1)
