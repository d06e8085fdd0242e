"""wavec for Python: compile a .wave file ahead of time and call its kernels on numpy arrays or
torch tensors.

    import wavec
    m = wavec.compile("samples/copy/copy.wave", targets=["gfx942", "sm_90"],
                      defines={"BLOCK_N": 256})
    m.copy(a, b)                       # outputs are passed in, as in the generated C API
    m.copy(a, b, device="emu:gfx942")  # an explicit device (default: the tensors', else auto)

Pure Python over ctypes: `compile` runs the wavec binary (the WAVEC environment variable, else
the one installed beside this package or in the build tree above it, else PATH) to get the
generated header and stub, builds the stub into a shared library with the system C compiler
(CC, else cc) against libwave_runtime, caches that by source, defines, targets and options, and
loads it. A call passes each tensor to the stub's NAME_launch_tensors as a DLPack-compatible
descriptor, so the stub's own checks (dtype, rank, shape, layout, `assume`s) run and a failure
raises an exception carrying the runtime's message. See docs/python.md."""

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

from . import _runtime
from .errors import (ArgumentError, CompileError, DeviceError, InvalidArgumentError,
                     RuntimeCallError, UnsupportedShapeError, WavecError, WavecNotFoundError)
from . import _tensors
from ._tensors import as_tensor

__all__ = [
    "compile", "load", "Module", "Kernel", "find_wavec", "runtime", "Event",
    "WavecError", "WavecNotFoundError", "CompileError", "RuntimeCallError",
    "InvalidArgumentError", "UnsupportedShapeError", "DeviceError", "ArgumentError",
]

__version__ = "0.1.0"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Bumped when what compile() builds changes, so old cache entries are not reused.
_CACHE_FORMAT = "2"


# ---- finding the tools ------------------------------------------------------------------------

def _executable(path):
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def find_wavec(wavec=None):
    """The wavec binary: the argument, else $WAVEC, else one beside this package (an install
    prefix's bin/ or a build tree's build/ above it), else the first on PATH."""
    if wavec:
        found = _executable(wavec) or _executable(shutil.which(wavec) or "")
        if not found:
            raise WavecNotFoundError(f"wavec: no executable wavec at '{wavec}'")
        return os.path.abspath(found)
    env = os.environ.get("WAVEC")
    if env:
        found = _executable(env) or _executable(shutil.which(env) or "")
        if not found:
            raise WavecNotFoundError(f"wavec: WAVEC='{env}' is not an executable file")
        return os.path.abspath(found)
    d = _PACKAGE_DIR
    for _ in range(6):
        d = os.path.dirname(d)
        for candidate in (os.path.join(d, "bin", "wavec"), os.path.join(d, "build", "wavec")):
            if _executable(candidate):
                return candidate
    found = shutil.which("wavec")
    if found:
        return os.path.abspath(found)
    raise WavecNotFoundError(
        "wavec: cannot find the wavec compiler: set WAVEC to its path, put it on PATH, or "
        "install this package with wavec (cmake --install)")


def _runtime_paths(wavec):
    """(include directory, libwave_runtime path) that belong to the wavec binary `wavec`:
    WAVE_RUNTIME_INCLUDE / WAVE_RUNTIME_LIBRARY when set, else its install prefix's, else its
    build tree's."""
    inc = os.environ.get("WAVE_RUNTIME_INCLUDE")
    lib = os.environ.get("WAVE_RUNTIME_LIBRARY")
    if inc and lib and not wavec:
        return inc, os.path.realpath(lib)
    if not wavec:
        wavec = find_wavec()
    bindir = os.path.dirname(os.path.realpath(wavec))
    prefix = os.path.dirname(bindir)
    if not inc:
        candidates = [os.path.join(prefix, "include")]
        cache = os.path.join(bindir, "CMakeCache.txt")
        if os.path.isfile(cache):
            with open(cache, errors="replace") as f:
                m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", f.read(), re.M)
            if m:
                candidates.insert(0, os.path.join(m.group(1).strip(), "runtime", "include"))
        inc = next((c for c in candidates
                    if os.path.isfile(os.path.join(c, "wave", "runtime.h"))), None)
    if not lib:
        dirs = [os.path.join(bindir, "runtime")]
        for sub in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu"),
                    os.path.join("lib", "aarch64-linux-gnu")):
            dirs.append(os.path.join(prefix, sub))
        lib = next((os.path.join(d, "libwave_runtime.so.0") for d in dirs
                    if os.path.isfile(os.path.join(d, "libwave_runtime.so.0"))), None)
    if not inc or not os.path.isfile(os.path.join(inc, "wave", "runtime.h")):
        raise WavecNotFoundError(
            f"wavec: cannot find wave/runtime.h for {wavec} (set WAVE_RUNTIME_INCLUDE)")
    if not lib or not os.path.isfile(lib):
        raise WavecNotFoundError(
            f"wavec: cannot find libwave_runtime.so.0 for {wavec} (set WAVE_RUNTIME_LIBRARY)")
    return inc, os.path.realpath(lib)


def _c_compiler():
    cc = os.environ.get("CC") or "cc"
    found = shutil.which(cc.split()[0])
    if not found:
        raise WavecNotFoundError(
            f"wavec: no C compiler '{cc}' to build the generated stub (set CC)")
    return cc.split()


def _cache_root(cache_dir):
    if cache_dir:
        return cache_dir
    if os.environ.get("WAVEC_PY_CACHE"):
        return os.environ["WAVEC_PY_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "wavec", "python")


def runtime(wavec=None):
    """The loaded libwave_runtime (wavec._runtime.Runtime) that belongs to `wavec`."""
    _, lib = _runtime_paths(find_wavec(wavec))
    return _runtime.load(lib)


# ---- compile ----------------------------------------------------------------------------------

_compile_lock = threading.Lock()


def _run(command, what, cwd=None):
    try:
        p = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    except OSError as e:
        raise WavecNotFoundError(f"wavec: cannot run {command[0]}: {e}") from None
    if p.returncode != 0:
        raise CompileError(f"{what} failed (exit {p.returncode}):\n{p.stdout.rstrip()}",
                           command=command, output=p.stdout)
    return p.stdout


def compile(source, targets=None, defines=None, options=(), *, wavec=None, cache_dir=None,
            verbose=False):
    """Compiles the .wave file `source` for `targets` (a list such as ["gfx942", "sm_90"];
    None: wavec's default) with `defines` ({"BLOCK_N": 256} -> -DBLOCK_N=256) and extra wavec
    `options`, and returns a Module whose attributes are the file's kernels.

    The result is cached (WAVEC_PY_CACHE, else $XDG_CACHE_HOME/wavec/python, else
    ~/.cache/wavec/python) by the source's bytes, the defines, targets and options, and the
    wavec binary; a second compile of the same inputs only loads the cached library."""
    source = os.fspath(source)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"wavec.compile: no such file: '{source}'")
    if isinstance(targets, str):
        targets = [targets]
    targets = list(targets or [])
    defines = dict(defines or {})
    options = list(options)
    wavec_path = find_wavec(wavec)
    include, libpath = _runtime_paths(wavec_path)
    rt = _runtime.load(libpath)
    with open(source, "rb") as f:
        text = f.read()
    st = os.stat(wavec_path)
    key_parts = [_CACHE_FORMAT, text.hex(), repr(sorted((str(k), str(v)) for k, v in defines.items())),
                 repr(targets), repr(options), wavec_path, str(st.st_size), str(st.st_mtime_ns),
                 libpath]
    key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()[:24]
    stem = re.sub(r"[^A-Za-z0-9_]", "_", os.path.splitext(os.path.basename(source))[0]) or "kernel"
    root = _cache_root(cache_dir)
    entry = os.path.join(root, f"{stem}-{key}")
    library = os.path.join(entry, f"lib{stem}.so")
    header = os.path.join(entry, f"{stem}.h")
    with _compile_lock:
        if not (os.path.isfile(library) and os.path.isfile(header)):
            os.makedirs(root, exist_ok=True)
            work = tempfile.mkdtemp(prefix=f".{stem}-", dir=root)
            try:
                command = [wavec_path, os.path.abspath(source)]
                command += [f"--target={t}" for t in targets]
                command += [f"-D{k}={v}" for k, v in defines.items()]
                command += options
                if len(targets) <= 1:
                    command += ["-o", os.path.join(work, f"{stem}.obj")]
                command += ["--header", os.path.join(work, f"{stem}.h"),
                            "--stub", os.path.join(work, f"{stem}.c")]
                if verbose:
                    print("wavec.compile:", " ".join(command), file=sys.stderr)
                _run(command, "wavec")
                _build_stub(work, stem, include, libpath, verbose)
                try:
                    os.rename(work, entry)
                except OSError:
                    if not os.path.isfile(library):  # not a concurrent compile that won
                        raise
            finally:
                if os.path.isdir(work):
                    shutil.rmtree(work, ignore_errors=True)
    return Module(source, targets, defines, library, header, rt)


def load(header, stub, *, cache_dir=None, verbose=False):
    """A Module from a header and stub that wavec generated elsewhere (--header/--stub), for a
    machine without wavec: the stub is built into a shared library against the runtime that
    WAVE_RUNTIME_INCLUDE and WAVE_RUNTIME_LIBRARY name (else the one of a wavec found as
    compile() finds it), cached by the stub's bytes."""
    header, stub = os.fspath(header), os.fspath(stub)
    for f in (header, stub):
        if not os.path.isfile(f):
            raise FileNotFoundError(f"wavec.load: no such file: '{f}'")
    include, libpath = _runtime_paths(None)
    rt = _runtime.load(libpath)
    with open(header, "rb") as f:
        htext = f.read()
    with open(stub, "rb") as f:
        stext = f.read()
    key = hashlib.sha256(b"\0".join([_CACHE_FORMAT.encode(), htext, stext,
                                      libpath.encode()])).hexdigest()[:24]
    stem = re.sub(r"[^A-Za-z0-9_]", "_", os.path.splitext(os.path.basename(stub))[0]) or "kernel"
    root = _cache_root(cache_dir)
    entry = os.path.join(root, f"{stem}-loaded-{key}")
    library = os.path.join(entry, f"lib{stem}.so")
    with _compile_lock:
        if not os.path.isfile(library):
            os.makedirs(root, exist_ok=True)
            work = tempfile.mkdtemp(prefix=f".{stem}-", dir=root)
            try:
                shutil.copy(header, os.path.join(work, os.path.basename(header)))
                shutil.copy(stub, os.path.join(work, f"{stem}.c"))
                _build_stub(work, stem, include, libpath, verbose)
                try:
                    os.rename(work, entry)
                except OSError:
                    if not os.path.isfile(library):
                        raise
            finally:
                if os.path.isdir(work):
                    shutil.rmtree(work, ignore_errors=True)
    return Module(stub, [], {}, library, os.path.join(entry, os.path.basename(header)), rt)


def _build_stub(work, stem, include, libpath, verbose):
    libdir = os.path.dirname(libpath)
    link = _c_compiler() + [
        "-shared", "-fPIC", "-O1", "-std=c99", "-I", include, "-I", work,
        os.path.join(work, f"{stem}.c"), "-o", os.path.join(work, f"lib{stem}.so"),
        "-L", libdir, f"-l:{os.path.basename(libpath)}", f"-Wl,-rpath,{libdir}"]
    if verbose:
        print("wavec:", " ".join(link), file=sys.stderr)
    _run(link, "building the generated stub")


# ---- modules and kernels ----------------------------------------------------------------------

class Module:
    """A compiled .wave file: one attribute per kernel (a Kernel), `kernels` by name."""

    def __init__(self, source, targets, defines, library, header, rt):
        self.source = source
        self.targets = targets
        self.defines = defines
        self.library_path = library
        self.header_path = header
        self._rt = rt
        self._lib = ctypes.CDLL(library)
        with open(header) as f:
            names = re.findall(r"^wave_status_t (\w+)_launch_tensors\(", f.read(), re.M)
        self.kernels = {n: Kernel(self, n) for n in names}

    def __getattr__(self, name):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"{os.path.basename(self.__dict__.get('source', '?'))} has no "
                             f"kernel '{name}' (kernels: {', '.join(kernels) or 'none'})")

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)

    def __repr__(self):
        return f"<wavec.Module {self.source} kernels={list(self.kernels)} targets={self.targets}>"


class Arg:
    """One argument of a kernel: name, kind ("pointer", "scalar" or "dim"), type ("f16", ...)
    and whether the kernel writes it."""

    def __init__(self, info):
        self.name = info.name.decode()
        self.kind = info.kind.decode()
        self.type = info.type.decode()
        self.is_output = bool(info.is_output)

    def __repr__(self):
        return f"Arg({self.name}: {self.kind} {self.type}{' output' if self.is_output else ''})"


_SCALAR_CTYPES = {
    "f16": ctypes.c_float, "bf16": ctypes.c_float, "f32": ctypes.c_float,
    "f64": ctypes.c_double, "i1": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16,
    "i32": ctypes.c_int32, "i64": ctypes.c_int64, "index": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u32": ctypes.c_uint32,
}


def _device_uri(device):
    """A device URI from a string ("emu:gfx942", "cuda://0", "cuda:1", "cpu"...) or a
    torch.device."""
    if device is None:
        return None
    if not isinstance(device, str):
        kind, index = getattr(device, "type", None), getattr(device, "index", None)
        if kind is None:
            raise ArgumentError(f"device must be a URI string or a torch.device, got {device!r}")
        device = kind if index is None else f"{kind}:{index}"
    m = re.fullmatch(r"(cuda|hip)(?::(\d+))?", device)
    if m:
        return f"{m.group(1)}://{m.group(2) or 0}"
    return device


class Kernel:
    """A kernel of a Module. Call it with its tensors and scalars in the order of the kernel's
    parameters (outputs included, as in NAME_launch_tensors), by position or by name:

        m.elementwise(a, b, 1.75, c)             # c is written
        m.elementwise(a, b, alpha=1.75, c=c, device="emu:sm_90")

    Tensors are numpy arrays, torch tensors, or any object with __dlpack__ (DLPack) or the
    array interface. Host tensors (numpy, torch on the CPU) are copied to the device and the
    outputs back, synchronously. Device tensors (torch on cuda) are passed as they are and the
    launch is queued on torch's current stream of their device (or `stream`: a torch stream or
    a native handle), asynchronously like any torch operation. `device` defaults to the device
    tensors' device, else `auto` (WAVE_DEVICE, else the first GPU, else the CPU emulator)."""

    def __init__(self, module, name):
        self.module = module
        self.name = name
        lib = module._lib
        info_fn = getattr(lib, f"{name}_info")
        info_fn.restype = ctypes.POINTER(_runtime.KernelInfo)
        info_fn.argtypes = []
        self._info = info_fn().contents
        self._info_for = getattr(lib, f"{name}_info_for", None)
        if self._info_for is not None:
            self._info_for.restype = ctypes.POINTER(_runtime.KernelInfo)
            self._info_for.argtypes = [ctypes.c_char_p]
        self.args = [Arg(self._info.args[i]) for i in range(self._info.num_args)]
        # The parameters of NAME_launch_tensors: every pointer and scalar (dims come from shapes).
        self.params = [a for a in self.args if a.kind in ("pointer", "scalar")]
        self._launch = getattr(lib, f"{name}_launch_tensors")
        self._launch.restype = ctypes.c_int
        argtypes = [ctypes.c_void_p]
        for a in self.params:
            if a.kind == "pointer":
                argtypes.append(ctypes.POINTER(_runtime.Tensor))
            else:
                argtypes.append(_SCALAR_CTYPES.get(a.type, ctypes.c_uint8))
        self._launch.argtypes = argtypes
        self._nparams = len(self.params)
        self._pointer_flags = [a.kind == "pointer" for a in self.params]
        self._scalar_ctypes = [None if a.kind == "pointer" else
                               _SCALAR_CTYPES.get(a.type, ctypes.c_uint8) for a in self.params]
        self._tls = threading.local()  # per-thread descriptors of the torch fast path
        self.__doc__ = f"{name}({', '.join(f'{a.name}: {a.type}' + (' (output)' if a.is_output else '') for a in self.params)})"

    def info(self, arch=None):
        """The launch facts of the first target, or of the code object for `arch` ("sm_90",
        "emu:gfx942"): a dict of targets, block, grid, shared_bytes, args_size."""
        ptr = self._info_for(arch.encode()) if arch else ctypes.pointer(self._info)
        if not ptr:
            raise DeviceError("WAVE_ERROR_NOT_FOUND",
                              f"{self.name}: no code object for {arch} "
                              f"(built for: {' '.join(self.module.targets) or 'the default target'})")
        i = ptr.contents
        return {"name": i.name.decode(), "targets": i.targets.decode().split(),
                "block": list(i.block), "grid": [g.decode() for g in i.grid],
                "shared_bytes": i.shared_bytes, "args_size": i.args_size}

    def __repr__(self):
        return f"<wavec.Kernel {self.__doc__}>"

    def _bind(self, args, kwargs):
        if len(args) > len(self.params):
            raise ArgumentError(f"{self.name}() takes {len(self.params)} arguments "
                                f"({', '.join(a.name for a in self.params)}), got {len(args)}")
        values = list(args) + [None] * (len(self.params) - len(args))
        given = [True] * len(args) + [False] * (len(self.params) - len(args))
        names = {a.name: i for i, a in enumerate(self.params)}
        for k, v in kwargs.items():
            if k not in names:
                raise ArgumentError(f"{self.name}() has no argument '{k}' "
                                    f"(arguments: {', '.join(names)})")
            if given[names[k]]:
                raise ArgumentError(f"{self.name}() got '{k}' twice")
            values[names[k]] = v
            given[names[k]] = True
        missing = [a.name for a, g in zip(self.params, given) if not g]
        if missing:
            raise ArgumentError(f"{self.name}() is missing {', '.join(repr(m) for m in missing)} "
                                f"(arguments: {', '.join(names)})")
        return values

    def _torch_fast(self, args):
        """The launch of all-positional arguments whose tensors are torch tensors on one CUDA
        device, on its current stream: descriptors reused per thread, no staging. None when the
        arguments need the general path (which also reports every error)."""
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        scratch = getattr(self._tls, "scratch", None)
        if scratch is None:
            scratch = self._tls.scratch = [_runtime.ScratchTensor() for _ in self.params]
        call = [None]
        index = None
        tensor_type = torch.Tensor
        for flag, v, slot, ctype in zip(self._pointer_flags, args, scratch, self._scalar_ctypes):
            if flag:
                if not isinstance(v, tensor_type):
                    return None
                d = v.device
                if d.type != "cuda" or (index is not None and d.index != index):
                    return None
                index = d.index
                dt = _tensors.torch_dtype(v.dtype)
                if dt is None or not slot.fill(v.data_ptr(), v.shape, v.stride(), dt):
                    return None
                call.append(slot.pointer)
            else:
                try:
                    call.append(ctype(v))
                except TypeError:
                    return None
        if index is None:
            return None
        uri = _tensors.torch_device_uri(torch, index)
        rt = self.module._rt
        dev = rt.device(uri)
        call[0] = rt.stream(dev, _tensors.torch_current_stream(torch, index))
        status = self._launch(*call)
        if status != 0:
            rt.check(status)
        return True

    def __call__(self, *args, device=None, stream=None, **kwargs):
        if (not kwargs and device is None and stream is None and len(args) == self._nparams
                and self._torch_fast(args)):
            return None
        rt = self.module._rt
        values = self._bind(args, kwargs)
        tensors = {}
        for a, v in zip(self.params, values):
            if a.kind == "pointer":
                tensors[a.name] = as_tensor(v, a.name, self.name)
        # The device: explicit, else the device tensors' (they must agree), else auto.
        on_device = [(n, t) for n, t in tensors.items() if t.device_uri is not None]
        uri = _device_uri(device)
        if uri is None and on_device:
            uri = on_device[0][1].device_uri
        if uri is None:
            uri = "auto"
        for n, t in on_device:
            if t.device_uri != uri:
                raise ArgumentError(
                    f"{self.name}: tensor '{n}' is on {t.device_name} but the launch is on "
                    f"{uri}" + (f" (tensor '{on_device[0][0]}' is on {on_device[0][1].device_name})"
                                if device is None else ""))
        dev = rt.device(uri)
        native = None
        if stream is not None:
            native = getattr(stream, "cuda_stream", stream)
        elif on_device:
            native = on_device[0][1].current_stream()
        wstream = rt.stream(dev, native)
        staged = []
        try:
            call = [wstream]
            for a, v in zip(self.params, values):
                if a.kind == "pointer":
                    t = tensors[a.name]
                    if t.device_uri is None:
                        t.stage(rt, dev, a.is_output, staged)
                    call.append(ctypes.byref(t.descriptor))
                else:
                    try:
                        call.append(_SCALAR_CTYPES.get(a.type, ctypes.c_uint8)(v))
                    except TypeError:
                        raise ArgumentError(f"{self.name}: scalar '{a.name}' ({a.type}) must be "
                                            f"a number, got {type(v).__name__}") from None
            status = self._launch(*call)
            if status != 0:
                rt.check(status)
            if staged:
                rt.synchronize(wstream)
                for t in staged:
                    t.unstage(rt, dev)
        finally:
            for t in staged:
                t.release(rt, dev)
        return None


class Event:
    """A runtime event (wave_event_*): `record()` it on a device's stream, `elapsed_ms(end)`."""

    def __init__(self, device="auto", rt=None):
        self._rt = rt or runtime()
        self._dev = self._rt.device(_device_uri(device))
        out = ctypes.c_void_p()
        self._rt.check(self._rt.lib.wave_event_create(self._dev, ctypes.byref(out)))
        self._handle = out.value

    def record(self, stream=None):
        native = getattr(stream, "cuda_stream", stream)
        self._rt.check(self._rt.lib.wave_event_record(self._handle,
                                                      self._rt.stream(self._dev, native)))
        return self

    def synchronize(self):
        self._rt.check(self._rt.lib.wave_event_synchronize(self._handle))

    def elapsed_ms(self, end):
        ms = ctypes.c_float()
        end.synchronize()
        self._rt.check(self._rt.lib.wave_event_elapsed_ms(self._handle, end._handle,
                                                          ctypes.byref(ms)))
        return ms.value

    def __del__(self):
        try:
            self._rt.lib.wave_event_destroy(self._handle)
        except Exception:
            pass
