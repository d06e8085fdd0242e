"""What the bench scripts share: libwave_runtime opened through ctypes, a CUDA device and a
stream on it, and a status check that raises with the runtime's message."""
import ctypes
import statistics
import time


def open_runtime(path, device=b"cuda://0"):
    """Returns (rt, dev, stream, check): check(status, what) raises on a non-zero status."""
    rt = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    rt.wave_last_error.restype = ctypes.c_char_p

    def check(st, what):
        if st != 0:
            raise RuntimeError(f"{what}: status {st}: {rt.wave_last_error().decode()}")

    dev, stream = ctypes.c_void_p(), ctypes.c_void_p()
    check(rt.wave_device_open(device, ctypes.byref(dev)), "device_open")
    check(rt.wave_stream_create(dev, ctypes.byref(stream)), "stream_create")
    return rt, dev, stream, check


def timer(reps, batches):
    """bench(fn, sync): the median over `batches` of the time per call of `reps` back-to-back
    calls of fn, each batch between two sync() calls, after one warm-up call."""
    def bench(fn, sync):
        fn()
        sync()
        times = []
        for _ in range(batches):
            sync()
            t = time.perf_counter()
            for _ in range(reps):
                fn()
            sync()
            times.append((time.perf_counter() - t) / reps)
        return statistics.median(times)
    return bench
