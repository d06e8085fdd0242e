"""Tensors as the generated stubs take them: a wave_tensor_t (DLPack's DLTensor layout) built
from a torch tensor (its data pointer, shape, strides and dtype), a numpy array or anything with
the array interface, or any object with __dlpack__ (the DLPack capsule's DLTensor is used as it
is). Host tensors are staged through device memory of the launch's device."""

import ctypes

from . import _runtime
from .errors import ArgumentError, InvalidArgumentError

# DLPack type codes (runtime/include/wave/kernel_api.h): int 0, uint 1, float 2, complex 5,
# bfloat 4, bool 6.
_NUMPY_KINDS = {"f": 2, "i": 0, "u": 1, "b": 6, "c": 5}
_TORCH_DTYPES = {
    "float16": (2, 16), "bfloat16": (4, 16), "float32": (2, 32), "float64": (2, 64),
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64), "uint8": (1, 8),
    "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64), "bool": (6, 8),
    "float8_e4m3fn": (2, 8), "float8_e5m2": (2, 8), "float8_e4m3fnuz": (2, 8),
    "float8_e5m2fnuz": (2, 8), "complex64": (5, 64), "complex128": (5, 128),
}
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM = 1, 2, 3, 10


def _compact(shape, strides):
    expected = 1
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


class HostOrDeviceTensor:
    """One tensor argument of a launch."""

    def __init__(self, name, kernel, data, shape, strides, code, bits, device_uri=None,
                 device_name="the host", writeable=True, keepalive=None, stream_fn=None):
        self.name = name
        self.kernel = kernel
        self.host_ptr = data
        self.shape = [int(s) for s in shape]
        self.strides = None if strides is None else [int(s) for s in strides]
        self.device_uri = device_uri
        self.device_name = device_name
        self.writeable = writeable
        self.keepalive = keepalive
        self._stream_fn = stream_fn
        self.itemsize = max(bits // 8, 1)
        self._device_ptr = None
        ndim = len(self.shape)
        self._shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        self._strides = None
        if self.strides is not None:
            self._strides = (ctypes.c_int64 * max(ndim, 1))(*self.strides)
        d = _runtime.Tensor()
        d.data = data
        d.device.device_type = _DL_CPU if device_uri is None else _DL_CUDA
        d.ndim = ndim
        d.dtype.code, d.dtype.bits, d.dtype.lanes = code, bits, 1
        d.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            d.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        d.byte_offset = 0
        self.descriptor = d

    def current_stream(self):
        return self._stream_fn() if self._stream_fn else None

    @property
    def nbytes(self):
        n = self.itemsize
        for s in self.shape:
            n *= s
        return n

    def stage(self, rt, device, is_output, staged):
        """Copies a host tensor to fresh device memory of `device` and points the descriptor at
        it; the caller copies outputs back (unstage) and frees (release)."""
        if self.strides is not None and not _compact(self.shape, self.strides):
            raise InvalidArgumentError(
                "WAVE_ERROR_INVALID_ARGUMENT",
                f"{self.kernel}_launch_tensors: tensor '{self.name}' must be compact row-major "
                f"(C-contiguous); its strides are {self.strides} elements for shape "
                f"{self.shape} [WAVE_ERROR_INVALID_ARGUMENT]")
        if is_output and not self.writeable:
            raise ArgumentError(f"{self.kernel}: output '{self.name}' is a read-only array")
        self.is_output = is_output
        if not self.host_ptr:
            return  # the stub reports the NULL tensor
        self._device_ptr = rt.malloc(device, self.nbytes)
        staged.append(self)
        if self.nbytes:
            rt.htod(device, self._device_ptr, self.host_ptr, self.nbytes)
        self.descriptor.data = self._device_ptr

    def unstage(self, rt, device):
        if self.is_output and self.nbytes:
            rt.dtoh(device, self.host_ptr, self._device_ptr, self.nbytes)

    def release(self, rt, device):
        if self._device_ptr:
            rt.free(device, self._device_ptr)
            self._device_ptr = None
        self.descriptor.data = self.host_ptr


_torch_dtypes_by_object = {}
_torch_uris = {}


def torch_dtype(dtype):
    """(DLPack code, bits) of a torch dtype object, None for one no Wave type matches."""
    hit = _torch_dtypes_by_object.get(dtype)
    if hit is None:
        hit = _TORCH_DTYPES.get(str(dtype).replace("torch.", ""))
        if hit is not None:
            _torch_dtypes_by_object[dtype] = hit
    return hit


def torch_device_uri(torch, index):
    uri = _torch_uris.get(index)
    if uri is None:
        scheme = "hip" if getattr(torch.version, "hip", None) else "cuda"
        uri = _torch_uris[index] = f"{scheme}://{index}"
    return uri


def torch_current_stream(torch, index):
    """The native handle of torch's current stream on device `index`."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(index)
    return torch.cuda.current_stream(index).cuda_stream


def _from_torch(t, name, kernel):
    import torch  # only reached for torch tensors, so torch is installed
    dtype = str(t.dtype).replace("torch.", "")
    if dtype not in _TORCH_DTYPES:
        raise ArgumentError(f"{kernel}: tensor '{name}' has dtype {t.dtype}, which no Wave "
                            "element type matches")
    code, bits = _TORCH_DTYPES[dtype]
    dev = t.device
    if dev.type == "cpu":
        uri, stream_fn = None, None
    elif dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        scheme = "hip" if getattr(torch.version, "hip", None) else "cuda"
        uri = f"{scheme}://{index}"
        stream_fn = lambda: torch.cuda.current_stream(index).cuda_stream  # noqa: E731
    else:
        raise ArgumentError(f"{kernel}: tensor '{name}' is on {dev}; wavec runs on cuda (or "
                            "ROCm) tensors and host tensors")
    return HostOrDeviceTensor(name, kernel, t.data_ptr(), t.shape, t.stride(), code, bits,
                              device_uri=uri, device_name=str(dev), keepalive=t,
                              stream_fn=stream_fn)


def _from_array_interface(x, name, kernel):
    ai = x.__array_interface__
    typestr = ai["typestr"]
    kind, size = typestr[1], int(typestr[2:])
    descr_name = getattr(getattr(x, "dtype", None), "name", "")
    if descr_name == "bfloat16":
        code = 4
    elif kind in _NUMPY_KINDS:
        code = _NUMPY_KINDS[kind]
    else:
        raise ArgumentError(f"{kernel}: tensor '{name}' has element type '{typestr}' "
                            f"({descr_name or kind}), which no Wave element type matches")
    shape = ai["shape"]
    strides = ai.get("strides")
    if strides is not None:  # bytes -> elements; -1 (never compact) when not a multiple
        strides = [st // size if st % size == 0 else -1 for st in strides]
    data, readonly = ai["data"]
    return HostOrDeviceTensor(name, kernel, data, shape, strides, code, size * 8,
                              writeable=not readonly, keepalive=x)


class _DLManagedTensorHead(ctypes.Structure):
    _fields_ = [("dl_tensor", _runtime.Tensor)]


def _from_dlpack(x, name, kernel):
    kind, device_id = x.__dlpack_device__()
    capsule = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(capsule, b"dltensor")
    dl = ctypes.cast(ptr, ctypes.POINTER(_DLManagedTensorHead)).contents.dl_tensor
    shape = [dl.shape[i] for i in range(dl.ndim)]
    strides = [dl.strides[i] for i in range(dl.ndim)] if dl.strides else None
    data = (dl.data or 0) + dl.byte_offset
    if dl.dtype.lanes != 1:
        raise ArgumentError(f"{kernel}: tensor '{name}' has vector elements ({dl.dtype.lanes} "
                            "lanes)")
    if kind in (_DL_CPU, _DL_CUDA_HOST):
        uri, dname = None, "the host"
    elif kind == _DL_CUDA:
        uri, dname = f"cuda://{device_id}", f"cuda:{device_id}"
    elif kind == _DL_ROCM:
        uri, dname = f"hip://{device_id}", f"rocm:{device_id}"
    else:
        raise ArgumentError(f"{kernel}: tensor '{name}' is on DLPack device type {kind}; wavec "
                            "runs on CUDA, ROCm and host tensors")
    return HostOrDeviceTensor(name, kernel, data, shape, strides, dl.dtype.code, dl.dtype.bits,
                              device_uri=uri, device_name=dname, keepalive=(x, capsule))


def as_tensor(x, name, kernel):
    """The launch's view of the argument `x` for the kernel's tensor parameter `name`."""
    module = type(x).__module__ or ""
    if module.startswith("torch") and hasattr(x, "data_ptr") and hasattr(x, "stride"):
        return _from_torch(x, name, kernel)
    if hasattr(x, "__array_interface__"):
        return _from_array_interface(x, name, kernel)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return _from_dlpack(x, name, kernel)
    raise ArgumentError(f"{kernel}: tensor '{name}' must be a numpy array, a torch tensor or a "
                        f"DLPack tensor, got {type(x).__name__}")
