"""The GPU check of the Python package (docs/python.md): on a CUDA machine with torch but no
wavec, with the stubs scripts/make_devrun_python.sh prepared in devrun/py:
  - torch tensors on cuda through the copy and GEMM stubs, checked against torch (fresh random
    data, poisoned outputs, aligned and ragged shapes);
  - the launch joins torch's current stream (a launch queued behind a sleeping kernel and a
    copy into its input on a side stream must see that copy);
  - wavec.torch.register: the custom op eagerly and inside torch.compile(fullgraph=True);
  - the GEMM called from Python and from C (tests/python/gemm_launch_bench.c): time per launch
    at 4096^3 with events, and the host time of a tiny launch (launch overhead).
    PYTHONPATH=python python3 tests/python/torch_gpu_check.py"""

import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEV = os.path.join(ROOT, "devrun", "py")
os.environ.setdefault("WAVE_RUNTIME_LIBRARY", os.path.join(DEV, "libwave_runtime.so.0"))
os.environ.setdefault("WAVE_RUNTIME_INCLUDE", os.path.join(ROOT, "runtime", "include"))
os.environ.setdefault("WAVEC_PY_CACHE", "/tmp/wavec-py-cache")

import torch  # noqa: E402

import wavec  # noqa: E402
import wavec.torch  # noqa: E402

failed = 0


def expect(what, ok, detail=""):
    global failed
    print(("ok: " if ok else "FAIL: ") + what + (f" ({detail})" if detail else ""), flush=True)
    failed += not ok


def rel(out, ref):
    return float(torch.linalg.norm((out.double() - ref).flatten()) / torch.linalg.norm(ref.flatten()))


print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
copy = wavec.load(os.path.join(DEV, "copy.h"), os.path.join(DEV, "copy.c"))
gemm = wavec.load(os.path.join(DEV, "gemm.h"), os.path.join(DEV, "gemm.c"))
print("gemm:", gemm.gemm.info("sm_90"), flush=True)

# ---- correctness on cuda tensors ----
for shape in [(256, 4096), (1001, 4093)]:
    a = torch.randn(shape, device="cuda", dtype=torch.float16)
    b = torch.full_like(a, float("nan"))
    copy.copy(a, b)
    torch.cuda.synchronize()
    expect(f"copy {shape} on cuda equals its input", torch.equal(a, b))
for M, N, K in [(4096, 4096, 4096), (1000, 777, 515)]:
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
    gemm.gemm(a, b, c)
    ref = a.double() @ b.double().T
    e = rel(c, ref)
    expect(f"gemm {M}x{N}x{K} on cuda: relative error {e:.2e} < 1e-3", e < 1e-3 and not c.isnan().any())
try:
    gemm.gemm(a, b, c.half())
    expect("a wrong dtype on cuda is refused", False)
except wavec.InvalidArgumentError as e:
    expect("a wrong dtype on cuda is refused", "must be" in str(e), str(e)[:120])
try:
    copy.copy(torch.zeros(4, 256, dtype=torch.float16, device="cuda"),
              torch.zeros(4, 256, dtype=torch.float16, device="cuda"), device="emu:sm_90")
    expect("cuda tensors with device=emu:sm_90 are refused", False)
except wavec.ArgumentError as e:
    expect("cuda tensors with device=emu:sm_90 are refused", "is on cuda:0" in str(e), str(e))

# ---- the current stream ----
side = torch.cuda.Stream()
src = torch.randn(2048, 4096, device="cuda", dtype=torch.float16)
a = torch.zeros_like(src)
b = torch.full_like(src, float("nan"))
torch.cuda.synchronize()
with torch.cuda.stream(side):
    torch.cuda._sleep(200_000_000)  # ~0.1 s of spinning on the side stream
    a.copy_(src)                     # a gets its values only after the sleep
    copy.copy(a, b)                  # must run after that copy: on the side stream
torch.cuda.synchronize()
expect("the launch joined torch's current stream (it saw the copy queued before it)",
       torch.equal(b, src))
rt = copy._rt
expect("the side stream's handle was wrapped for the launch",
       any(native == side.cuda_stream for (_, native) in rt._streams), str(list(rt._streams)))

# ---- torch.library and torch.compile ----
op = wavec.torch.register(copy.copy, name="wavec_check::copy")
a = torch.randn(512, 1024, device="cuda", dtype=torch.float16)
b = torch.empty_like(a)
op(a, b)
torch.cuda.synchronize()
expect("the registered op runs eagerly", torch.equal(a, b))


@torch.compile(fullgraph=True)
def f(a, b):
    op(a, b)
    return b * 2


b = torch.full_like(a, float("nan"))
t0 = time.time()
out = f(a, b)
torch.cuda.synchronize()
expect(f"the op inside torch.compile(fullgraph=True) ({time.time() - t0:.1f} s to compile and run)",
       torch.equal(b, a) and torch.equal(out, a * 2))

# ---- launch overhead: Python vs C ----
M = N = K = 4096
a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(N, K, device="cuda", dtype=torch.float16)
c = torch.empty(M, N, device="cuda", dtype=torch.float32)
x = torch.zeros(1, 256, device="cuda", dtype=torch.float16)
y = torch.empty_like(x)


def py_gemm_round(iters=50):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        gemm.gemm(a, b, c)
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / iters


def py_tiny_round(iters=20000, **kw):
    t0 = time.perf_counter()
    for _ in range(iters):
        copy.copy(x, y, **kw)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) * 1e6 / iters, (t2 - t0) * 1e6 / iters


for _ in range(5):
    gemm.gemm(a, b, c)
for _ in range(100):
    copy.copy(x, y)
torch.cuda.synchronize()
bench = "/tmp/gemm_launch_bench"
cc = ["cc", "-O2", "-std=c99", "-I", os.path.join(ROOT, "runtime", "include"), "-I", DEV,
      os.path.join(ROOT, "tests", "python", "gemm_launch_bench.c"), os.path.join(DEV, "gemm.c"),
      os.path.join(DEV, "copy.c"), "-L", DEV, "-l:libwave_runtime.so.0", f"-Wl,-rpath,{DEV}",
      "-lm", "-o", bench]
subprocess.run(cc, check=True)
py_gemm, py_tiny, py_general, c_lines = [], [], [], []
for round_ in range(3):  # interleaved: Python, C, Python, C, ...
    py_gemm += [py_gemm_round() for _ in range(3)]
    py_tiny += [py_tiny_round() for _ in range(3)]
    py_general += [py_tiny_round(5000, stream=torch.cuda.current_stream()) for _ in range(3)]
    p = subprocess.run([bench], capture_output=True, text=True)
    print(p.stdout + p.stderr, end="", flush=True)
    c_lines += p.stdout.splitlines()
c_gemm = [float(l.split(": ")[1].split()[0]) for l in c_lines if l.startswith("C gemm")]
c_tiny = [float(l.split(": ")[1].split()[0]) for l in c_lines if l.startswith("C tiny")]
pg, cg = statistics.median(py_gemm), statistics.median(c_gemm)
print(f"GEMM 4096^3 per launch, median: Python {pg:.4f} ms ({2 * M * N * K / pg / 1e9:.1f} TFLOP/s), "
      f"C {cg:.4f} ms ({2 * M * N * K / cg / 1e9:.1f} TFLOP/s); Python/C = {pg / cg:.4f}")
pt = statistics.median(t[0] for t in py_tiny)
pd = statistics.median(t[1] for t in py_tiny)
ct = statistics.median(c_tiny)
pgen = statistics.median(t[0] for t in py_general)
print(f"tiny copy launch, host time per call, median: Python {pt:.2f} us (until done {pd:.2f} us; "
      f"{pgen:.2f} us through the general path, stream= given), C {ct:.2f} us")
expect(f"the GEMM from Python is within 2% of the same kernel from C ({pg / cg:.4f})",
       abs(pg / cg - 1) <= 0.02)
print("FAILED" if failed else "ALL PASSED", flush=True)
sys.exit(1 if failed else 0)
