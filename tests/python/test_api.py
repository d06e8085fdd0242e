"""The Python package (python/wavec) on the CPU emulator: the samples' copy, elementwise, GEMM
and softmax kernels on aligned and ragged shapes, compared with a float64 numpy reference on fresh
random data with poisoned (NaN) outputs; the default device (`auto` without a GPU runs on an
emulator of an arch the artifact carries); per-target launch facts; the compile cache; events;
the DLPack path; and every error path raising a clear exception. Torch-only checks print why they
are skipped when torch is not installed.

    PYTHONPATH=python WAVEC=build/wavec python3 tests/python/test_api.py"""

import os
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

import wavec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples")
passed = failed = 0


def expect(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok: {what}")
    else:
        failed += 1
        print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""))


def raises(what, exc_type, needle, fn):
    """fn() must raise exc_type whose text contains `needle`."""
    try:
        fn()
    except exc_type as e:
        expect(f"{what}: {type(e).__name__}: {e}".splitlines()[0][:200],
               needle in str(e), f"message lacks {needle!r}: {e}")
        return e
    except Exception as e:  # noqa: BLE001
        expect(what, False, f"raised {type(e).__name__} instead of {exc_type.__name__}: {e}")
        return None
    expect(what, False, f"no exception (wanted {exc_type.__name__} with {needle!r})")
    return None


seed = int(os.environ.get("WAVEC_TEST_SEED", time.time_ns() % 2**32))
print(f"seed {seed} (WAVEC_TEST_SEED={seed} repeats this run)")
rng = np.random.default_rng(seed)


def close(got, want, rtol, atol):
    err = np.abs(got.astype(np.float64) - want)
    bad = ~(err <= atol + rtol * np.abs(want))  # NaN counts as bad
    return int(bad.sum()), float(np.nanmax(err)) if err.size else 0.0


EMUS = ["emu:gfx942", "emu:sm_90"]


def run_case(name, fn):
    try:
        fn()
    except Exception:  # noqa: BLE001
        expect(f"{name} ran without an exception", False, traceback.format_exc())


# ---- copy -------------------------------------------------------------------------------------
def copy_case():
    m = wavec.compile(os.path.join(SAMPLES, "copy", "copy.wave"), targets=["gfx942", "sm_90"],
                      defines={"BLOCK_N": 256})
    expect("the module lists its kernel", list(m.kernels) == ["copy"], repr(m))
    for dev in EMUS:
        for shape in [(32, 512), (37, 301)]:
            a = rng.standard_normal(shape).astype(np.float16)
            b = np.full(shape, np.nan, np.float16)
            m.copy(a, b, device=dev)
            expect(f"copy {shape} on {dev} equals its input", np.array_equal(a, b))
    # Per-target launch facts: one wave of 64 lanes on gfx942, a warp of 32 on sm_90.
    expect("info('gfx942') states gfx942's block", m.copy.info("gfx942")["block"] == [64, 1, 1],
           m.copy.info("gfx942"))
    expect("info('sm_90') states sm_90's block", m.copy.info("sm_90")["block"] == [32, 1, 1],
           m.copy.info("sm_90"))
    expect("info() is the first target's, naming only the targets it holds for",
           m.copy.info()["targets"] == ["gfx942", "emu:gfx942"], m.copy.info())
    raises("info for a target not built", wavec.DeviceError, "no code object for gfx1100",
           lambda: m.copy.info("gfx1100"))
    with open(m.header_path) as f:
        header = f.read()
    expect("the header states each target's block", "targets: gfx942 emu:gfx942; block [64, 1, 1]"
           in header and "targets: sm_90 emu:sm_90; block [32, 1, 1]" in header, header[:1500])
    expect("the header states each pointer's element type",
           "const void *a /* f16[M, N] */" in header, header[:1500])

    # The cache: the same inputs load the same library without running wavec.
    t0 = time.time()
    again = wavec.compile(os.path.join(SAMPLES, "copy", "copy.wave"), targets=["gfx942", "sm_90"],
                          defines={"BLOCK_N": 256})
    expect("a second compile of the same inputs comes from the cache",
           again.library_path == m.library_path, f"{again.library_path} vs {m.library_path}")
    other = wavec.compile(os.path.join(SAMPLES, "copy", "copy.wave"), targets=["gfx942", "sm_90"],
                          defines={"BLOCK_N": 128})
    expect("other defines are another cache entry", other.library_path != m.library_path)
    print(f"  (cached compile took {time.time() - t0:.2f} s with the BLOCK_N=128 one)")

    # The DLPack path: an object that only speaks DLPack.
    class DLPackOnly:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    if hasattr(np.ndarray, "__dlpack__"):
        a = rng.standard_normal((5, 70)).astype(np.float16)
        b = np.full_like(a, np.nan)
        m.copy(DLPackOnly(a), b, device="emu:sm_90")
        expect("a DLPack-only input crosses by its capsule", np.array_equal(a, b))
    else:
        print("SKIPPED: the DLPack path (this numpy has no __dlpack__)")

    # The default device: `auto` (no GPU here: the emulator), also for an artifact built for
    # sm_90 only, which carries no gfx942 image (the tutorial's case).
    if os.environ.get("WAVE_DEVICE"):
        print("note: WAVE_DEVICE is set; the default-device checks use it")
    sm90 = wavec.compile(os.path.join(SAMPLES, "copy", "copy.wave"), targets=["sm_90"])
    a = rng.standard_normal((9, 260)).astype(np.float16)
    b = np.full_like(a, np.nan)
    sm90.copy(a, b)
    expect("an sm_90-only build runs on the default device", np.array_equal(a, b))
    b2 = np.full_like(a, np.nan)
    m.copy(a, b2)
    expect("a gfx942+sm_90 build runs on the default device", np.array_equal(a, b2))
    # WAVE_DEVICE reaches the runtime's `auto` through a child process (the default device is
    # chosen once per process).
    code = ("import numpy as np, wavec; m = wavec.compile(%r, targets=['sm_90']); "
            "a = np.ones((3, 40), np.float16); b = np.zeros_like(a); m.copy(a, b); "
            "print('copied', bool((a == b).all()))" % os.path.join(SAMPLES, "copy", "copy.wave"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, WAVE_DEVICE="emu:gfx942"))
    expect("WAVE_DEVICE=emu:gfx942 makes an sm_90-only build fail with the runtime's reason",
           p.returncode != 0 and "no code object for the device's arch emu:gfx942" in p.stderr
           and "DeviceError" in p.stderr, p.stderr[-800:])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, WAVE_DEVICE="emu:sm_90"))
    expect("WAVE_DEVICE=emu:sm_90 runs it", p.returncode == 0 and "copied True" in p.stdout,
           p.stdout + p.stderr[-800:])

    # Errors: dtype, rank, shape, layout, device, arguments.
    a = rng.standard_normal((8, 64)).astype(np.float16)
    b = np.zeros_like(a)
    raises("a wrong dtype", wavec.InvalidArgumentError,
           "tensor 'a' must be Memory[M, N, global, f16] (rank 2, f16), got rank 2 with 32-bit "
           "elements of type code 2 (f32)",
           lambda: m.copy(a.astype(np.float32), b, device="emu:gfx942"))
    raises("a wrong rank", wavec.InvalidArgumentError, "rank 2",
           lambda: m.copy(a.reshape(-1), b, device="emu:gfx942"))
    raises("a wrong shape", wavec.InvalidArgumentError, "dim 1 of 'b' is 32 but N is 64",
           lambda: m.copy(a, np.zeros((8, 32), np.float16), device="emu:gfx942"))
    raises("a strided view", wavec.InvalidArgumentError, "compact row-major",
           lambda: m.copy(np.zeros((8, 128), np.float16)[:, ::2], b, device="emu:gfx942"))
    raises("a device the artifact has no code for", wavec.DeviceError,
           "no code object for the device's arch emu:gfx1100",
           lambda: m.copy(a, b, device="emu:gfx1100"))
    raises("an unknown device URI", wavec.InvalidArgumentError, "unknown device URI",
           lambda: m.copy(a, b, device="tpu://0"))
    raises("a GPU that is not there", wavec.RuntimeCallError, "cuda",
           lambda: m.copy(a, b, device="cuda://7"))
    raises("too many arguments", wavec.ArgumentError, "takes 2 arguments",
           lambda: m.copy(a, b, b))
    raises("a missing argument", wavec.ArgumentError, "missing 'b'", lambda: m.copy(a))
    raises("an unknown keyword", wavec.ArgumentError, "no argument 'c'",
           lambda: m.copy(a, c=b))
    raises("a list for a tensor", wavec.ArgumentError, "must be a numpy array",
           lambda: m.copy([[1.0]], b))
    ro = np.zeros_like(a)
    ro.setflags(write=False)
    raises("a read-only output", wavec.ArgumentError, "read-only", lambda: m.copy(a, ro))
    raises("an unknown kernel", AttributeError, "no kernel 'kopy'", lambda: m.kopy)
    expect("b is untouched by the refused launches", not b.any())


# ---- elementwise ------------------------------------------------------------------------------
def elementwise_case():
    m = wavec.compile(os.path.join(SAMPLES, "elementwise", "elementwise.wave"),
                      targets=["gfx942", "sm_90"])
    for dev in EMUS:
        for M, N in [(8, 512), (13, 300)]:
            a = rng.standard_normal((M, N)).astype(np.float32)
            b = rng.standard_normal(N).astype(np.float32)
            c = np.full((M, N), np.nan, np.float32)
            alpha = float(rng.uniform(0.5, 2.0))
            m.elementwise(a, b, alpha, c, device=dev)
            want = a.astype(np.float64) * np.float64(np.float32(alpha)) + b.astype(np.float64)
            bad, worst = close(c, want, 1e-6, 1e-6)
            expect(f"elementwise {M}x{N} on {dev} matches the float64 reference",
                   bad == 0, f"{bad} wrong, max error {worst}")
    a = np.zeros((4, 256), np.float32)
    c = np.zeros_like(a)
    m.elementwise(a=a, b=np.ones(256, np.float32), alpha=2.0, c=c, device="emu:gfx942")
    expect("arguments by name", np.all(c == 1.0))
    raises("a scalar that is no number", wavec.ArgumentError, "scalar 'alpha'",
           lambda: m.elementwise(a, np.ones(256, np.float32), "x", c))
    raises("a broadcast operand of the wrong length", wavec.InvalidArgumentError, "'b'",
           lambda: m.elementwise(a, np.ones(255, np.float32), 1.0, c, device="emu:gfx942"))


# ---- GEMM -------------------------------------------------------------------------------------
def gemm_case():
    m = wavec.compile(os.path.join(SAMPLES, "gemm", "gemm_portable.wave"),
                      targets=["gfx942", "sm_90"])
    for dev in EMUS:
        for M, N, K in [(128, 128, 256), (100, 70, 190)]:
            a = rng.standard_normal((M, K)).astype(np.float16)
            b = rng.standard_normal((N, K)).astype(np.float16)
            c = np.full((M, N), np.nan, np.float32)
            m.gemm(a, b, c, device=dev)
            want = a.astype(np.float64) @ b.astype(np.float64).T
            bad, worst = close(c, want, 1e-3, 1e-3 * np.sqrt(K))
            expect(f"gemm {M}x{N}x{K} on {dev} matches the float64 reference",
                   bad == 0, f"{bad} wrong, max error {worst}")
    a = np.zeros((64, 64), np.float16)
    b = np.zeros((64, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    raises("sizes that break an assume", wavec.UnsupportedShapeError,
           "the assumption 'K > BLOCK_K * 4' does not hold (K = 64)",
           lambda: m.gemm(a, b, c, device="emu:gfx942"))
    raises("K of a and b disagree", wavec.InvalidArgumentError, "'b'",
           lambda: m.gemm(np.zeros((64, 256), np.float16), np.zeros((64, 192), np.float16), c,
                          device="emu:gfx942"))


# ---- softmax ----------------------------------------------------------------------------------
def softmax_case():
    m = wavec.compile(os.path.join(SAMPLES, "softmax", "softmax.wave"),
                      targets=["gfx942", "sm_90"])
    expect("a file with two kernels gives both", set(m.kernels) == {"softmax", "softmax_f16"},
           m.kernels)
    for dev in EMUS:
        for M, N in [(4, 256), (7, 301)]:
            x = (rng.standard_normal((M, N)) * 3).astype(np.float32)
            y = np.full_like(x, np.nan)
            m.softmax(x, y, device=dev)
            x64 = x.astype(np.float64)
            e = np.exp(x64 - x64.max(axis=1, keepdims=True))
            want = e / e.sum(axis=1, keepdims=True)
            bad, worst = close(y, want, 1e-5, 1e-7)
            expect(f"softmax {M}x{N} on {dev} matches the float64 reference",
                   bad == 0, f"{bad} wrong, max error {worst}")


# ---- events, compile errors, a missing wavec ---------------------------------------------------
def misc_case():
    start, end = wavec.Event("emu:gfx942"), wavec.Event("emu:gfx942")
    start.record()
    time.sleep(0.02)
    end.record()
    ms = start.elapsed_ms(end)
    expect(f"events time 20 ms of host sleep on the emulator ({ms:.1f} ms)", 15 <= ms < 10000)

    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.wave")
        with open(bad, "w") as f:
            with open(os.path.join(SAMPLES, "elementwise", "elementwise.wave")) as src:
                f.write(src.read().replace("read(a)", "read(aa)"))
        e = raises("a kernel with an error", wavec.CompileError, "unknown name 'aa'",
                   lambda: wavec.compile(bad))
        expect("the compile error carries wavec's located diagnostic",
               e is not None and "bad.wave:" in str(e) and "did you mean 'a'" in str(e), str(e))
    raises("a missing source", FileNotFoundError, "no such file",
           lambda: wavec.compile("/nonexistent/k.wave"))
    copy = os.path.join(SAMPLES, "copy", "copy.wave")
    raises("wavec= that is not there", wavec.WavecNotFoundError, "/nonexistent/wavec",
           lambda: wavec.compile(copy, wavec="/nonexistent/wavec"))
    saved = os.environ.get("WAVEC")
    os.environ["WAVEC"] = "/nonexistent/wavec"
    try:
        raises("WAVEC that is not there", wavec.WavecNotFoundError,
               "WAVEC='/nonexistent/wavec'", lambda: wavec.compile(copy))
    finally:
        if saved is None:
            del os.environ["WAVEC"]
        else:
            os.environ["WAVEC"] = saved
    # No wavec anywhere: the package copied away from any build tree, nothing on PATH.
    with tempfile.TemporaryDirectory() as tmp:
        import shutil
        shutil.copytree(os.path.dirname(wavec.__file__), os.path.join(tmp, "wavec"))
        env = {"PATH": "/nonexistent", "PYTHONPATH": tmp, "HOME": tmp}
        p = subprocess.run([sys.executable, "-c", "import wavec; wavec.compile(%r)" % copy],
                           capture_output=True, text=True, env=env)
        expect("no wavec anywhere: WavecNotFoundError saying how to point at one",
               p.returncode != 0 and "WavecNotFoundError" in p.stderr and "set WAVEC" in p.stderr,
               p.stderr[-600:])
    # load(): a header and stub made elsewhere, built against the runtime the environment names.
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([wavec.find_wavec(), copy, "--target=sm_90", "-o", f"{tmp}/c.ptx",
                        "--header", f"{tmp}/c.h", "--stub", f"{tmp}/c.c"], check=True)
        loaded = wavec.load(f"{tmp}/c.h", f"{tmp}/c.c", cache_dir=f"{tmp}/cache")
        a = rng.standard_normal((6, 90)).astype(np.float16)
        b = np.full_like(a, np.nan)
        loaded.copy(a, b, device="emu:sm_90")
        expect("wavec.load builds a pre-generated stub and runs it", np.array_equal(a, b))
        raises("load of a missing stub", FileNotFoundError, "no such file",
               lambda: wavec.load(f"{tmp}/c.h", f"{tmp}/missing.c"))
    raises("a target wavec does not know", wavec.CompileError, "gfx9999",
           lambda: wavec.compile(copy, targets=["gfx9999"]))


# ---- torch ------------------------------------------------------------------------------------
def torch_case():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: torch checks (torch is not installed; they run where it is, e.g. "
              "tests/python/torch_gpu_check.py on a GPU machine)")
        return
    import torch
    m = wavec.compile(os.path.join(SAMPLES, "copy", "copy.wave"), targets=["gfx942", "sm_90"])
    a = torch.randn(33, 300, dtype=torch.float16)
    b = torch.full_like(a, float("nan"))
    m.copy(a, b, device="emu:sm_90")
    expect("torch CPU tensors on the emulator", torch.equal(a, b))
    raises("a torch tensor of the wrong dtype", wavec.InvalidArgumentError, "(f32)",
           lambda: m.copy(a.float(), b, device="emu:sm_90"))
    import wavec.torch as wt
    op = wt.register(m.copy, name="wavec_test::copy_cpu")
    b = torch.full_like(a, float("nan"))
    op(a, b)
    expect("the registered op runs eagerly", torch.equal(a, b))


for case in (copy_case, elementwise_case, gemm_case, softmax_case, misc_case, torch_case):
    run_case(case.__name__, case)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
