"""ctypes bindings of libwave_runtime (runtime/include/wave/runtime.h, wave/kernel_api.h).

Only what the Python package needs: devices, memory, streams (wave_stream_wrap), events, the
tensor descriptor and the kernel description that generated stubs export. Every call goes through
`check`, which turns a failed status into a Python exception carrying wave_last_error()."""

import ctypes
import os
import threading

from .errors import error_for_status

c_void_p = ctypes.c_void_p


class DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class TensorDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class Tensor(ctypes.Structure):
    """wave_tensor_t: layout-compatible with DLPack's DLTensor."""
    _fields_ = [
        ("data", c_void_p),
        ("device", TensorDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class ScratchTensor:
    """A reusable descriptor for the launch fast path: shape and strides of up to 8 dims."""
    MAX_RANK = 8

    def __init__(self):
        self.desc = Tensor()
        self.shape = (ctypes.c_int64 * self.MAX_RANK)()
        self.strides = (ctypes.c_int64 * self.MAX_RANK)()
        self.desc.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        self.desc.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        self.desc.dtype.lanes = 1
        self.desc.device.device_type = 2
        self.pointer = ctypes.pointer(self.desc)

    def fill(self, data, shape, strides, dtype):
        n = len(shape)
        if n > self.MAX_RANK:
            return False
        d = self.desc
        d.data = data
        d.ndim = n
        d.dtype.code, d.dtype.bits = dtype
        sh, st = self.shape, self.strides
        for i in range(n):
            sh[i] = shape[i]
            st[i] = strides[i]
        return True


class ArgInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_char_p),
        ("type", ctypes.c_char_p),
        ("offset", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("is_output", ctypes.c_int),
    ]


class KernelInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("targets", ctypes.c_char_p),
        ("block", ctypes.c_uint32 * 3),
        ("grid", ctypes.c_char_p * 3),
        ("shared_bytes", ctypes.c_uint32),
        ("num_args", ctypes.c_uint32),
        ("args", ctypes.POINTER(ArgInfo)),
        ("args_size", ctypes.c_uint32),
    ]


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("vendor", ctypes.c_int),
        ("ordinal", ctypes.c_int),
        ("backend", ctypes.c_char * 8),
        ("arch", ctypes.c_char * 32),
        ("name", ctypes.c_char * 256),
        ("warp_size", ctypes.c_uint32),
        ("shared_memory_per_block", ctypes.c_uint32),
        ("multiprocessor_count", ctypes.c_uint32),
    ]


VENDOR_NVIDIA, VENDOR_AMD, VENDOR_EMULATOR = 1, 2, 3

_SIGNATURES = {
    "wave_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "wave_last_error": (ctypes.c_char_p, []),
    "wave_device_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(c_void_p)]),
    "wave_device_close": (ctypes.c_int, [c_void_p]),
    "wave_device_info": (ctypes.c_int, [c_void_p, ctypes.POINTER(DeviceInfo)]),
    "wave_device_synchronize": (ctypes.c_int, [c_void_p]),
    "wave_malloc": (ctypes.c_int, [c_void_p, ctypes.c_size_t, ctypes.POINTER(c_void_p)]),
    "wave_free": (ctypes.c_int, [c_void_p, c_void_p]),
    "wave_memcpy_htod": (ctypes.c_int, [c_void_p, c_void_p, c_void_p, ctypes.c_size_t]),
    "wave_memcpy_dtoh": (ctypes.c_int, [c_void_p, c_void_p, c_void_p, ctypes.c_size_t]),
    "wave_memset": (ctypes.c_int, [c_void_p, c_void_p, ctypes.c_int, ctypes.c_size_t]),
    "wave_stream_wrap": (ctypes.c_int, [c_void_p, c_void_p, ctypes.POINTER(c_void_p)]),
    "wave_stream_create": (ctypes.c_int, [c_void_p, ctypes.POINTER(c_void_p)]),
    "wave_stream_destroy": (ctypes.c_int, [c_void_p]),
    "wave_stream_synchronize": (ctypes.c_int, [c_void_p]),
    "wave_event_create": (ctypes.c_int, [c_void_p, ctypes.POINTER(c_void_p)]),
    "wave_event_destroy": (ctypes.c_int, [c_void_p]),
    "wave_event_record": (ctypes.c_int, [c_void_p, c_void_p]),
    "wave_event_synchronize": (ctypes.c_int, [c_void_p]),
    "wave_event_elapsed_ms": (ctypes.c_int, [c_void_p, c_void_p, ctypes.POINTER(ctypes.c_float)]),
}


class Runtime:
    """libwave_runtime loaded from `path` (RTLD_GLOBAL, so the stubs built against it bind to
    this very copy)."""

    def __init__(self, path):
        self.path = path
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        missing = []
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                missing.append(name)
                continue
            fn.restype = restype
            fn.argtypes = argtypes
        if missing:
            raise ImportError(
                f"wavec: the runtime library {path} lacks {', '.join(missing)} "
                "(a libwave_runtime older than this Python package?)")
        self._devices = {}
        self._streams = {}
        self._lock = threading.Lock()  # for the caches' misses; hits read the dicts lock-free

    def last_error(self):
        return (self.lib.wave_last_error() or b"").decode("utf-8", "replace")

    def status_name(self, status):
        return self.lib.wave_status_name(status).decode()

    def check(self, status, what=None):
        if status != 0:
            message = self.last_error()
            if what:
                message = f"{what}: {message}"
            raise error_for_status(self.status_name(status), message)

    # ---- devices and streams (opened once per process and kept) ----

    def device(self, uri):
        """The handle of `uri`, opened once and kept for the life of the process."""
        handle = self._devices.get(uri)
        if handle is None:
            with self._lock:
                handle = self._devices.get(uri)
                if handle is None:
                    out = c_void_p()
                    self.check(self.lib.wave_device_open(uri.encode(), ctypes.byref(out)))
                    handle = self._devices[uri] = out.value
        return handle

    def device_info(self, device):
        info = DeviceInfo()
        self.check(self.lib.wave_device_info(device, ctypes.byref(info)))
        return info

    def stream(self, device, native=None):
        """A wave_stream_t over the native stream `native` of `device` (None: its default
        stream), made once per (device, native) and kept."""
        key = (device, native or 0)
        handle = self._streams.get(key)
        if handle is None:
            with self._lock:
                handle = self._streams.get(key)
                if handle is None:
                    out = c_void_p()
                    self.check(self.lib.wave_stream_wrap(device, native or None,
                                                         ctypes.byref(out)))
                    handle = self._streams[key] = out.value
        return handle

    def synchronize(self, stream):
        self.check(self.lib.wave_stream_synchronize(stream))

    # ---- memory ----

    def malloc(self, device, nbytes):
        out = c_void_p()
        self.check(self.lib.wave_malloc(device, max(int(nbytes), 1), ctypes.byref(out)))
        return out.value

    def free(self, device, ptr):
        self.check(self.lib.wave_free(device, ptr))

    def htod(self, device, dst, src, nbytes):
        self.check(self.lib.wave_memcpy_htod(device, dst, src, nbytes))

    def dtoh(self, device, dst, src, nbytes):
        self.check(self.lib.wave_memcpy_dtoh(device, dst, src, nbytes))


_runtime = None


def load(path):
    """Loads the runtime once per process; a second, different path is refused (two copies of
    the runtime would not share devices)."""
    global _runtime
    path = os.path.realpath(path)
    if _runtime is None:
        _runtime = Runtime(path)
    elif _runtime.path != path:
        raise ImportError(f"wavec: the runtime {_runtime.path} is loaded already; "
                          f"cannot load a second one from {path}")
    return _runtime
