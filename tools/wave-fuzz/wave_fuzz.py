#!/usr/bin/env python3
"""wave-fuzz: random valid Wave kernels, run differentially.

Each program is built from a small description of our own (class Prog below: tensors,
constraints, statements as expression trees). For every program the tool

  1. renders it as a .wave file and asks `wavec --check` whether it is valid,
  2. computes the expected outputs with numpy from the description alone (class Oracle:
     float64 arithmetic rounded to the element type after every operation, docs/language.md
     section 11), with a per-element error bound derived from the operations, the element
     types and the accumulation lengths,
  3. runs wavec's reference evaluator (`wave-run --reference`) and every emulated target
     (`wave-run --device emu:TARGET`) on the same .npy inputs, the outputs pre-filled with a
     sentinel so that an unwritten element is told apart from a computed NaN,
  4. compares all of them with the oracle, and classifies the program as match, mismatch,
     refused (a located diagnostic), invalid (the generator's own fault: `--check` refused),
     or crash (a signal, a timeout, an unlocated internal error).

A mismatch is shrunk (statements, subexpressions, sizes, constraint fields, targets) while it
persists, and written to --out as a .wave file in the format of tests/e2e/kernels/*.wave
(`# TARGETS:`, `# RUN-<CASE>:`), with its inputs and a run script.

usage: wave_fuzz.py --wave-run PATH --seed S --count N [--targets T...] [--families F...]
                    [--dtypes bf16] [--out DIR] [--jobs J] [--timeout SEC]
Exit status: 0 when no program mismatched or crashed, 1 otherwise, 2 on a bad command line.
docs/reliability.md describes the tool, its families and the long run.
"""
import argparse
import copy
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures import wait as futures_wait

try:
    import numpy as np
except ImportError:  # the Debian python3-numpy of scripts/install-deps.sh lives in /usr/bin
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3" \
            and not os.environ.get("WAVE_FUZZ_REEXEC"):
        os.environ["WAVE_FUZZ_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.stderr.write("wave-fuzz: needs numpy (python3-numpy)\n")
    sys.exit(2)

ALL_TARGETS = ["gfx942", "gfx90a", "gfx1100", "sm_80", "sm_90"]
WAVE_SIZE = {"gfx942": 64, "gfx90a": 64, "gfx1100": 32, "sm_80": 32, "sm_90": 32}
ALL_FAMILIES = ["copy", "elementwise", "broadcast", "transpose", "reduce", "mapping", "gemm",
                "if"]

# bf16 tensors are stored as their bits (uint16) in the .npy files, as wave-run reads them.
NP_DTYPE = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "bf16": np.uint16}
SENTINEL = {"f32": -12344.0, "f16": -12344.0, "i32": 0x5A5A5A5A, "bf16": -12352.0}
EPS = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
# Math built-ins on a device may be approximations: a relative error allowed per call.
FN_EPS = {"f32": 2.0 ** -19, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
ATOL = {"f32": 1e-6, "f16": 2.0 ** -14, "i32": 0, "bf16": 2.0 ** -120}
FLOATS = ("f32", "f16", "bf16")
# Element types beyond f32, f16 and i32 that programs may use (--dtypes): empty by default, so
# that a seed and index give the same program as before the option existed.
EXTRA_DTYPES = []
FLOAT_LITS = [0.5, 2.0, 1.5, 0.25, 3.0, 1.0, 0.125, 10.0]
INT_LITS = [1, 2, 3, 5, 7, 100]


# ---- the program description ----------------------------------------------------------------
class Tensor:
    def __init__(self, name, dims, dtype, space="global", out=False):
        self.name, self.dims, self.dtype, self.space, self.out = name, list(dims), dtype, space, out


class Prog:
    """One random program: everything the renderer and the oracle need.

    dims: name -> size of this run; static: dims bound by -D (the others are dynamic);
    tensors: parameters in order; scalars: (name, dtype, value) parameters;
    cons: wg {dim: (tile, axis)}, wave {dim: tile}, tiling {dim: tile}, wpb list or None,
          vs {dim: int or 'SELF'} or None (None: no vector_shapes field), hw (bool: a hardware
          constraint at all), assume [strings];
    mappings: name -> (iterators, inputs {dim: expr}, outputs {dim: expr}, eval info);
    stmts: ('write', expr, tensor, mapping or None) | ('gemm', ...) handled by the family.
    """

    def __init__(self, family):
        self.family = family
        self.dims = {}
        self.static = set()
        self.tensors = []
        self.scalars = []
        self.cons = {"wg": {}, "wave": {}, "tiling": {}, "wpb": None, "vs": None, "hw": True,
                     "assume": []}
        self.mappings = {}
        self.stmts = []

    def tensor(self, name):
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def scalar(self, name):
        for s in self.scalars:
            if s[0] == name:
                return s
        raise KeyError(name)


# Expressions are tuples:
#   ('read', tensor, ept or None, mapping or None)   ('scalar', name)   ('lit', value)
#   ('bin', op, a, b)   ('un', fn, a)   ('cast', a, dtype)   ('cmp', op, a, b)
#   ('select', c, a, b)   ('bcast', a, [dims])   ('permute', a, [dims])
#   ('red', kind, a, dim, init or None)   ('mma', a, b, acc)   ('var', name)
#   ('if', pred, a, b)  pred: ('sym', text, python-callable-of-sizes) or ('i1', scalar name)


def expr_type(p, e, env=None):
    """(dtype, dims) of an expression; a literal is (None, [])."""
    k = e[0]
    if k == "read":
        t = p.tensor(e[1])
        if e[3]:
            return t.dtype, list(p.mappings[e[3]]["reg_dims"])
        return t.dtype, list(t.dims)
    if k == "scalar":
        return p.scalar(e[1])[1], []
    if k == "lit":
        return None, []
    if k == "var":  # the GEMM family's iterate result
        return (env or {"result": ("f32", ["M", "N"])})[e[1]]
    if k in ("bin",):
        ta, da = expr_type(p, e[2], env)
        tb, db = expr_type(p, e[3], env)
        return (ta or tb), (da if len(da) >= len(db) else db)
    if k == "un":
        return expr_type(p, e[2], env)
    if k == "cast":
        return e[2], expr_type(p, e[1], env)[1]
    if k == "cmp":
        _, da = expr_type(p, e[2], env)
        _, db = expr_type(p, e[3], env)
        return "i1", (da if len(da) >= len(db) else db)
    if k == "select":
        _, dc = expr_type(p, e[1], env)
        ta, da = expr_type(p, e[2], env)
        tb, db = expr_type(p, e[3], env)
        dims = max([dc, da, db], key=len)
        return (ta or tb), dims
    if k == "bcast":
        return expr_type(p, e[1], env)[0], list(e[2])
    if k == "permute":
        return expr_type(p, e[1], env)[0], list(e[2])
    if k == "red":
        t, d = expr_type(p, e[2], env)
        return t, [x for x in d if x != e[3]]
    if k == "mma":
        return expr_type(p, e[3], env)
    if k == "if":
        return expr_type(p, e[2], env)
    raise ValueError(k)


# ---- rendering ------------------------------------------------------------------------------
def lit_text(v, dtype):
    if dtype in FLOATS:
        return repr(float(v))
    return str(int(v))


def render_expr(p, e, ctx_dtype=None):
    k = e[0]
    if k == "read":
        args = [e[1]]
        if e[2]:
            args.append(f"elements_per_thread = {e[2]}")
        if e[3]:
            args.append(f"mapping = {e[3]}")
        return f"read({', '.join(args)})"
    if k == "scalar":
        return e[1]
    if k == "var":
        return e[1]
    if k == "lit":
        return lit_text(e[1], ctx_dtype)
    if k == "bin":
        ta = expr_type(p, e[2])[0]
        tb = expr_type(p, e[3])[0]
        a = render_expr(p, e[2], tb)
        b = render_expr(p, e[3], ta)
        if e[1] in ("maximum", "minimum"):
            return f"{e[1]}({a}, {b})"
        return f"({a} {e[1]} {b})"
    if k == "un":
        a = render_expr(p, e[2])
        if e[1] == "neg":
            return f"(-{a})"
        return f"{e[1]}({a})"
    if k == "cast":
        return f"cast({render_expr(p, e[1])}, {e[2]})"
    if k == "cmp":
        ta = expr_type(p, e[2])[0]
        tb = expr_type(p, e[3])[0]
        return f"({render_expr(p, e[2], tb)} {e[1]} {render_expr(p, e[3], ta)})"
    if k == "select":
        ta = expr_type(p, e[2])[0]
        tb = expr_type(p, e[3])[0]
        return (f"select({render_expr(p, e[1])}, {render_expr(p, e[2], tb)}, "
                f"{render_expr(p, e[3], ta)})")
    if k == "bcast":
        return f"broadcast({render_expr(p, e[1])}, [{', '.join(e[2])}])"
    if k == "permute":
        return f"permute({render_expr(p, e[1])}, [{', '.join(e[2])}])"
    if k == "red":
        t = expr_type(p, e[2])[0]
        s = f"{e[1]}({render_expr(p, e[2])}, dim = {e[3]}"
        if e[4] is not None:
            s += f", init = {render_expr(p, e[4], t)}"
        return s + ")"
    raise ValueError(k)


def render(p):
    """The .wave text of a program (without the header comment lines)."""
    syms = [d for d in p.dims]
    tiles = []
    out = [f"symbol {', '.join(syms)};"]
    for name, m in p.mappings.items():
        its = ", ".join(m["iters"])
        ins = ", ".join(f"{k}: {v}" for k, v in m["inputs"].items())
        outs = ", ".join(f"{k}: {v}" for k, v in m["outputs"].items())
        out.append(f"mapping {name}({its}) {{\n  inputs  {{ {ins} }}\n  outputs {{ {outs} }}\n}}")
    params = []
    for t in p.tensors:
        params.append(f"{t.name}: Memory[{', '.join(t.dims)}, {t.space}, {t.dtype}]")
    for s in p.scalars:
        params.append(f"{s[0]}: {s[1]}")
    out.append(f"kernel fuzz({', '.join(params)}) {{")
    out.append("  constraints {")
    c = p.cons
    for d, (tile, axis) in c["wg"].items():
        out.append(f"    workgroup({d}, {tile}, dim = {axis});")
    for d, tile in c["tiling"].items():
        out.append(f"    tiling({d}, {tile});")
    for d, tile in c["wave"].items():
        out.append(f"    wave({d}, {tile});")
    hw = []
    if c["wpb"]:
        hw.append(f"waves_per_block = [{', '.join(str(x) for x in c['wpb'])}]")
    if c["vs"]:
        hw.append("vector_shapes = {" + ", ".join(
            f"{d}: {d if v == 'SELF' else v}" for d, v in c["vs"].items()) + "}")
    if c["hw"] and hw:
        out.append(f"    hardware({', '.join(hw)});")
    for a in c["assume"]:
        out.append(f"    assume({a});")
    out.append("  }")
    for st in p.stmts:
        out.extend(render_stmt(p, st))
    out.append("}")
    return "\n".join(out) + "\n"


def render_stmt(p, st):
    k = st[0]
    if k == "write":
        s = f"  write({render_expr(p, st[1], p.tensor(st[2]).dtype)}, {st[2]}"
        if st[3]:
            s += f", mapping = {st[3]}"
        return [s + ");"]
    if k == "gemm":
        _, a, b, dim, epi, outname = st
        lines = ["  acc0 = Register[M, N, f32](0.0);",
                 f"  result = iterate {dim} (acc = acc0) {{",
                 f"    yield mma(read({a}), read({b}), acc);",
                 "  }"]
        lines.append(f"  write({render_expr(p, epi, p.tensor(outname).dtype)}, {outname});")
        return lines
    if k == "ifval":
        _, pred, ea, eb, outname = st
        t = p.tensor(outname).dtype
        return [f"  y = if {pred[1]} {{ yield {render_expr(p, ea, t)}; }} else "
                f"{{ yield {render_expr(p, eb, t)}; }};",
                f"  write(y, {outname});"]
    raise ValueError(k)


def run_args(p):
    """-D and --size arguments of a program's run."""
    args = []
    for d, n in p.dims.items():
        args.append(f"-D{d}={n}" if d in p.static else f"--size={d}={n}")
    for s in p.scalars:
        args.append(f"--input={s[0]}={lit_text(s[2], s[1])}")
    return args


# ---- the oracle -----------------------------------------------------------------------------
class Val:
    """A value over named dims: v (float64 or int64 array in dims order), err (an absolute
    error bound per element), frag (elements whose result can flip with rounding: a compare
    of nearly equal values, a float-to-int cast near an integer)."""

    def __init__(self, v, dims, dtype, err=None, frag=None):
        self.v, self.dims, self.dtype = v, list(dims), dtype
        self.err = np.zeros(v.shape) if err is None else err
        self.frag = np.zeros(v.shape, bool) if frag is None else frag


def bf16_bits(x):
    """float64 values rounded to bf16 (to nearest even, one rounding: through f32 rounded to
    odd), as uint16 bits."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float64)
        f = x.astype(np.float32)
        back = f.astype(np.float64)
        b = f.reshape(-1).view(np.uint32).reshape(f.shape).astype(np.int64)
        inexact = (back != x) & ~np.isnan(x)
        b = np.where(inexact & (np.abs(back) > np.abs(x)), b - 1, b)
        b = np.where(inexact, b | 1, b)
        r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
        return np.where(np.isnan(x), 0x7FC0, r).astype(np.uint16)


def bf16_value(bits):
    b = np.asarray(bits).astype(np.uint32)
    w = (b << np.uint32(16)).astype(np.uint32).reshape(-1)
    return w.view(np.float32).reshape(b.shape).astype(np.float64)


def rnd(x, dt):
    with np.errstate(all="ignore"):
        if dt == "bf16":
            return bf16_value(bf16_bits(x))
        if dt == "f32":
            return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)
        if dt == "f16":
            return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)
        if dt == "i32":
            return ((np.asarray(x).astype(np.int64) + 2 ** 31) % 2 ** 32) - 2 ** 31
        if dt == "i1":
            return np.asarray(x).astype(np.int64) & 1
    raise ValueError(dt)


def align(a, dims, sizes):
    """Array `a` over a.dims placed over `dims` (a superset), broadcast."""
    def one(arr):
        src = list(a.dims)
        order = [src.index(d) for d in dims if d in src]
        arr = np.transpose(arr, order) if order else arr
        shape = [sizes[d] if d in src else 1 for d in dims]
        return np.broadcast_to(arr.reshape(shape), [sizes[d] for d in dims])
    return one(a.v), one(a.err), one(a.frag)


class Oracle:
    def __init__(self, p, inputs):
        self.p, self.inputs = p, inputs
        self.sizes = dict(p.dims)
        self.env = {}

    def ev(self, e, ctx=None):
        p, k = self.p, e[0]
        if k == "read":
            t = p.tensor(e[1])
            arr = self.inputs[e[1]].astype(np.float64 if t.dtype in FLOATS else np.int64)
            if e[3]:
                return self.mapped_read(t, arr, p.mappings[e[3]])
            return Val(arr, t.dims, t.dtype)
        if k == "scalar":
            s = p.scalar(e[1])
            v = np.array(rnd(s[2], s[1]), np.float64 if s[1] in FLOATS else np.int64)
            return Val(v, [], s[1])
        if k == "var":
            return self.env[e[1]]
        if k == "lit":
            v = np.array(rnd(e[1], ctx), np.float64 if ctx in FLOATS else np.int64)
            return Val(v, [], ctx)
        if k == "bin":
            ta = expr_type(p, e[2])[0]
            tb = expr_type(p, e[3])[0]
            a, b = self.ev(e[2], tb), self.ev(e[3], ta)
            return self.binary(e[1], a, b)
        if k == "un":
            return self.unary(e[1], self.ev(e[2]))
        if k == "cast":
            return self.cast(self.ev(e[1]), e[2])
        if k == "cmp":
            ta = expr_type(p, e[2])[0]
            tb = expr_type(p, e[3])[0]
            a, b = self.ev(e[2], tb), self.ev(e[3], ta)
            dims = a.dims if len(a.dims) >= len(b.dims) else b.dims
            av, ae, af = align(a, dims, self.sizes)
            bv, be, bf = align(b, dims, self.sizes)
            ops = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                   "==": np.equal, "!=": np.not_equal}
            r = ops[e[1]](av, bv).astype(np.int64)
            frag = af | bf
            if a.dtype in FLOATS:
                frag = frag | (np.abs(av - bv) <= 4 * (ae + be))
            return Val(r, dims, "i1", None, frag)
        if k == "select":
            ta = expr_type(p, e[2])[0]
            tb = expr_type(p, e[3])[0]
            c, a, b = self.ev(e[1]), self.ev(e[2], tb), self.ev(e[3], ta)
            dims = max([c.dims, a.dims, b.dims], key=len)
            cv, _, cf = align(c, dims, self.sizes)
            av, ae, af = align(a, dims, self.sizes)
            bv, be, bf = align(b, dims, self.sizes)
            cb = cv.astype(bool)
            return Val(np.where(cb, av, bv), dims, a.dtype, np.where(cb, ae, be),
                       cf | np.where(cb, af, bf))
        if k == "bcast":
            a = self.ev(e[1])
            v, er, fr = align(a, e[2], self.sizes)
            return Val(v.copy(), e[2], a.dtype, er.copy(), fr.copy())
        if k == "permute":
            a = self.ev(e[1])
            v, er, fr = align(a, e[2], self.sizes)
            return Val(v.copy(), e[2], a.dtype, er.copy(), fr.copy())
        if k == "red":
            return self.reduce(e)
        raise ValueError(k)

    def mapped_read(self, t, arr, m):
        """Register element it = tensor element f(it); outside the tensor: 0."""
        reg = m["reg_dims"]
        grids = np.meshgrid(*[np.arange(self.sizes[d]) for d in reg], indexing="ij")
        it = dict(zip(m["iters_of"], grids))  # iterator name -> index grid
        idx, ok = [], np.ones([self.sizes[d] for d in reg], bool)
        for d in t.dims:
            ix = m["f_in"][d](it, self.sizes)
            ok &= (ix >= 0) & (ix < self.sizes[d])
            idx.append(np.where(ok, ix, 0))
        if arr.size == 0:
            v = np.zeros(ok.shape)
        else:
            idx = [np.clip(i, 0, max(self.sizes[d] - 1, 0)) for i, d in zip(idx, t.dims)]
            v = np.where(ok, arr[tuple(idx)], 0)
        v = v.astype(np.float64 if t.dtype in FLOATS else np.int64)
        return Val(v, reg, t.dtype)

    def binary(self, op, a, b):
        dims = a.dims if len(a.dims) >= len(b.dims) else b.dims
        dt = a.dtype
        av, ae, af = align(a, dims, self.sizes)
        bv, be, bf = align(b, dims, self.sizes)
        frag = af | bf
        with np.errstate(all="ignore"):
            if dt in FLOATS:
                if op == "+":
                    r = av + bv
                    err = ae + be
                elif op == "-":
                    r = av - bv
                    err = ae + be
                elif op == "*":
                    r = av * bv
                    err = np.abs(av) * be + np.abs(bv) * ae + ae * be
                elif op == "/":
                    r = av / bv
                    err = (ae + np.abs(r) * be) / np.maximum(np.abs(bv) - be, 1e-30)
                elif op == "maximum":
                    r = np.maximum(av, bv)
                    err = np.maximum(ae, be)
                elif op == "minimum":
                    r = np.minimum(av, bv)
                    err = np.maximum(ae, be)
                else:
                    raise ValueError(op)
                r = rnd(r, dt)
                err = err + EPS[dt] * np.abs(r)
                return Val(r, dims, dt, err, frag)
            av, bv = av.astype(np.int64), bv.astype(np.int64)
            if op == "+":
                r = av + bv
            elif op == "-":
                r = av - bv
            elif op == "*":
                r = av * bv
            elif op == "&":
                r = av & bv
            elif op == "|":
                r = av | bv
            elif op == "^":
                r = av ^ bv
            elif op == "//":
                r = np.floor_divide(av, bv)
            elif op == "%":
                r = np.mod(av, bv)
            elif op == "/":
                r = np.sign(av) * (np.abs(av) // np.abs(bv)) * np.sign(bv)
            elif op == "maximum":
                r = np.maximum(av, bv)
            elif op == "minimum":
                r = np.minimum(av, bv)
            else:
                raise ValueError(op)
            return Val(rnd(r, dt), dims, dt, None, frag)

    def unary(self, fn, a):
        dt = a.dtype
        if dt not in FLOATS:
            if fn == "abs":
                return Val(rnd(np.abs(a.v), dt), a.dims, dt, None, a.frag)
            if fn == "neg":
                return Val(rnd(-a.v, dt), a.dims, dt, None, a.frag)
            raise ValueError(fn)
        if fn == "abs":
            return Val(np.abs(a.v), a.dims, dt, a.err, a.frag)
        if fn == "neg":
            return Val(-a.v, a.dims, dt, a.err, a.frag)
        f = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
             "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": lambda x: 1 / x,
             "tanh": np.tanh, "sin": np.sin, "cos": np.cos}[fn]
        with np.errstate(all="ignore"):
            r = rnd(f(a.v), dt)
            lo_arg = a.v - a.err
            if fn in ("log", "log2", "sqrt", "rsqrt", "reciprocal"):
                lo_arg = np.maximum(lo_arg, 0 if fn == "sqrt" else 1e-30)
            hi, lo = f(a.v + a.err), f(lo_arg)
            err = np.maximum(np.abs(hi - r), np.abs(lo - r))
            err = np.nan_to_num(err, nan=np.inf) + FN_EPS[dt] * np.abs(r) + EPS[dt] * np.abs(r)
            # Range reduction (sin, cos) and tanh through exponentials (which cancels near 0:
            # an f16 tanh of -0.0889 gives -0.0879 on every emulated target) make these
            # approximations absolutely, not relatively, accurate.
            if fn in ("sin", "cos", "tanh"):
                err = err + FN_EPS[dt]
        return Val(r, a.dims, dt, err, a.frag)

    def cast(self, a, to):
        with np.errstate(all="ignore"):
            if a.dtype == to:
                return a
            if a.dtype in FLOATS and to in FLOATS:
                r = rnd(a.v, to)
                return Val(r, a.dims, to, a.err + EPS[to] * np.abs(r), a.frag)
            if a.dtype in FLOATS:  # to an integer: truncate, saturate, NaN -> 0
                x = np.nan_to_num(a.v, nan=0.0)
                r = np.clip(np.trunc(x), -2 ** 31, 2 ** 31 - 1).astype(np.int64)
                dist = np.abs(x - np.round(x))
                frag = a.frag | ((dist <= 4 * a.err) & (a.err > 0))
                return Val(r, a.dims, to, None, frag)
            # integer (or i1) to float: exact rounding
            r = rnd(a.v.astype(np.float64), to)
            frag = a.frag
            if to == "f16":
                frag = frag | (np.abs(a.v) > 60000)
            return Val(r, a.dims, to, EPS[to] * np.abs(r), frag)

    def reduce(self, e):
        _, kind, xe, dim, inite = e
        x = self.ev(xe)
        dt = x.dtype
        ax = x.dims.index(dim)
        rdims = [d for d in x.dims if d != dim]
        L = self.sizes[dim]
        with np.errstate(all="ignore"):
            if kind == "sum":
                r = np.sum(x.v, axis=ax)
                err = np.sum(x.err, axis=ax)
                if dt in FLOATS:
                    err = err + EPS[dt] * max(L, 1) * np.sum(np.abs(x.v), axis=ax)
            elif kind == "max":
                ident = -np.inf if dt in FLOATS else -2 ** 31
                r = np.max(x.v, axis=ax, initial=ident)
                err = np.max(x.err, axis=ax, initial=0)
            else:
                ident = np.inf if dt in FLOATS else 2 ** 31 - 1
                r = np.min(x.v, axis=ax, initial=ident)
                err = np.max(x.err, axis=ax, initial=0)
            frag = np.any(x.frag, axis=ax)
            if inite is not None:
                iv = self.ev(inite, dt)
                ivv, ive, ivf = align(iv, rdims, self.sizes)
                if kind == "sum":
                    r = r + ivv
                elif kind == "max":
                    r = np.maximum(r, ivv)
                else:
                    r = np.minimum(r, ivv)
                err = err + ive
                frag = frag | ivf
            if dt not in FLOATS:
                r = r.astype(np.int64)
            r = rnd(r, dt)
            if dt in FLOATS:
                err = err + EPS[dt] * np.abs(r)
        return Val(np.asarray(r), rdims, dt, np.asarray(err), np.asarray(frag))

    def write(self, outs, val, t, mapping):
        """Stores val into outs[t.name] = (values, err, frag, written)."""
        ov, oe, of, ow = outs[t.name]
        if mapping is None:
            v, er, fr = align(val, t.dims, self.sizes)
            ov[...] = v
            oe[...] = er
            of[...] = fr
            ow[...] = True
            return
        m = self.p.mappings[mapping]
        reg = m["reg_dims"]
        v, er, fr = align(val, reg, self.sizes)
        grids = np.meshgrid(*[np.arange(self.sizes[d]) for d in reg], indexing="ij")
        it = dict(zip(m["iters_of"], grids))
        idx, ok = [], np.ones(v.shape, bool)
        for d in t.dims:
            ix = m["f_out"][d](it, self.sizes)
            ok &= (ix >= 0) & (ix < self.sizes[d])
            idx.append(ix)
        sel = tuple(i[ok] for i in idx)
        ov[sel] = v[ok]
        oe[sel] = er[ok]
        of[sel] = fr[ok]
        ow[sel] = True

    def run(self):
        """Expected outputs: name -> (values float64/int64, err, frag, written)."""
        p = self.p
        outs = {}
        for t in p.tensors:
            if t.out:
                shape = [self.sizes[d] for d in t.dims]
                fill = np.full(shape, SENTINEL[t.dtype],
                               np.float64 if t.dtype in FLOATS else np.int64)
                outs[t.name] = (fill, np.zeros(shape), np.zeros(shape, bool), np.zeros(shape, bool))
        for st in p.stmts:
            if st[0] == "write":
                self.write(outs, self.ev(st[1], p.tensor(st[2]).dtype), p.tensor(st[2]), st[3])
            elif st[0] == "gemm":
                _, an, bn, dim, epi, outname = st
                a = self.inputs[an].astype(np.float64)
                b = self.inputs[bn].astype(np.float64)
                bt = p.tensor(bn)
                if bt.dims[0] == "K":  # b: [K, N]
                    b = b.T
                r = rnd(a @ b.T, "f32")
                err = EPS["f32"] * (max(self.sizes["K"], 1) + 2) * (np.abs(a) @ np.abs(b).T)
                err = err + EPS["f32"] * np.abs(r)
                self.env["result"] = Val(r, ["M", "N"], "f32", err)
                self.write(outs, self.ev(epi, p.tensor(outname).dtype), p.tensor(outname), None)
            elif st[0] == "ifval":
                _, pred, ea, eb, outname = st
                t = p.tensor(outname).dtype
                self.write(outs, self.ev(ea if pred[2](self.sizes) else eb, t),
                           p.tensor(outname), None)
        return outs


# ---- generation -----------------------------------------------------------------------------
def pick_size(rng, big=False, allow_zero=True):
    r = rng.random()
    if allow_zero and r < 0.03:
        return 0
    if r < 0.12:
        return 1
    small = [2, 3, 5, 7, 8, 13, 16, 31, 32, 33]
    large = [63, 64, 97, 100, 127, 128, 129, 200, 257, 300, 511, 512, 1000]
    if big and rng.random() < 0.6:
        return rng.choice(large)
    return rng.choice(small + large[:6])


def cap_sizes(rng, p, limit=40000):
    """Keeps the element count of the largest tensor below `limit`."""
    while True:
        total = 1
        for n in p.dims.values():
            total *= max(n, 1)
        if total <= limit:
            return
        d = max(p.dims, key=lambda x: p.dims[x])
        p.dims[d] = max(1, p.dims[d] // 3)


def gen_layout_constraints(rng, p, dims, wave_size=64):
    """Random workgroup/wave/hardware constraints for a plain (non-reduction, non-GEMM)
    kernel over `dims` (outermost first)."""
    c = p.cons
    axes = [0, 1, 2]
    rng.shuffle(axes)
    # Mostly Wave's convention: the innermost dim on axis 0.
    order = list(reversed(dims))
    free_axes = [0, 1, 2]
    for i, d in enumerate(order):
        if rng.random() < 0.12:
            continue  # no workgroup constraint: the dim is covered whole
        if rng.random() < 0.75 and free_axes[0] == 0 and i == 0:
            axis = 0
        else:
            axis = rng.choice(free_axes)
        free_axes.remove(axis)
        if i == 0:
            tile = rng.choice([1, 2, 4, 16, 32, 48, 64, 64, 100, 128, 256, 256, 512])
        else:
            tile = rng.choice([1, 1, 1, 2, 3, 4, 8, 16])
        c["wg"][d] = (tile, axis)
        if rng.random() < 0.8:
            divs = [w for w in range(1, tile + 1) if tile % w == 0]
            if i == 0:
                w = rng.choice([tile, tile, tile] + divs)
            else:
                w = rng.choice([tile, tile, 1] + divs)
            c["wave"][d] = w
    # Waves per block along each axis: workgroup tile / wave tile.
    waves = 1
    for d, (tile, axis) in c["wg"].items():
        if d in c["wave"]:
            waves *= tile // c["wave"][d]
    if waves > 16:  # block-too-large: drop the wave constraints
        c["wave"] = {}
    if rng.random() < 0.1:
        c["wpb"] = [rng.choice([1, 2, 4]), 1, 1]
    if rng.random() < 0.85:
        vs = {}
        for d in dims:
            if rng.random() < 0.1:
                continue
            tile = c["wave"].get(d) or (c["wg"][d][0] if d in c["wg"] else None)
            opts = [1, 64, 32]
            if tile:
                opts += [tile, tile, tile, max(1, tile // 2), 3 if tile > 3 else tile]
            else:
                opts += [p.dims[d]] if d in p.static else ["SELF"]
            if d == dims[-1]:
                opts += [48, 100, 128, 256]
            vs[d] = rng.choice(opts)
        c["vs"] = vs
    c["hw"] = bool(c["wpb"] or c["vs"])


def new_inputs_dtype(rng):
    return rng.choice(["f32", "f32", "f16", "f16", "i32"] + EXTRA_DTYPES * 2)


class TreeGen:
    """Random elementwise trees over the program's input tensors."""

    def __init__(self, rng, p, dims, inputs):
        self.rng, self.p, self.dims, self.inputs = rng, p, dims, inputs

    def leaf(self, dt, dims):
        rng, p = self.rng, self.p
        cands = [t for t in p.tensors if not t.out and t.dims == dims]
        same = [t for t in cands if t.dtype == dt]
        r = rng.random()
        if r < 0.08 and dims and any(True for s in p.scalars if s[1] == dt):
            return ("scalar", rng.choice([s[0] for s in p.scalars if s[1] == dt]))
        sub = [t for t in p.tensors if not t.out and set(t.dims) < set(dims) and t.dims
               and t.dtype == dt]
        if r < 0.2 and sub:
            t = rng.choice(sub)
            return ("bcast", ("read", t.name, None, None), list(dims))
        if same and (r < 0.85 or not cands):
            t = rng.choice(same)
            ept = rng.choice([None] * 8 + [1, 2, 4, 8])
            return ("read", t.name, ept, None)
        if cands:
            t = rng.choice(cands)
            x = ("read", t.name, None, None)
            if t.dtype in FLOATS and dt == "i32":
                x = ("bin", "*", x, ("lit", rng.choice([10.0, 100.0, 3.0])))
            return ("cast", x, dt)
        return None

    def tree(self, dt, depth):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            lf = self.leaf(dt, self.dims)
            if lf is not None:
                return lf
        r = rng.random()
        if dt in FLOATS:
            if r < 0.4:
                op = rng.choice(["+", "-", "*", "maximum", "minimum", "/"])
                a = self.tree(dt, depth - 1)
                if op == "/":
                    b = ("bin", "+", ("un", "abs", self.tree(dt, depth - 1)), ("lit", 1.0))
                elif rng.random() < 0.35:
                    b = ("lit", rng.choice(FLOAT_LITS))
                else:
                    b = self.tree(dt, depth - 1)
                return ("bin", op, a, b) if rng.random() < 0.8 else ("bin", op, b, a) \
                    if b[0] != "lit" or op in ("+", "*", "-") else ("bin", op, a, b)
            if r < 0.65:
                fn = rng.choice(["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "reciprocal",
                                 "tanh", "sin", "cos", "abs", "neg"])
                a = self.tree(dt, depth - 1)
                if fn in ("exp", "exp2"):
                    a = ("un", "tanh", a)
                elif fn in ("log", "log2", "rsqrt", "reciprocal"):
                    a = ("bin", "+", ("un", "abs", a), ("lit", 0.5))
                elif fn == "sqrt":
                    a = ("un", "abs", a)
                return ("un", fn, a)
            if r < 0.8:
                return self.select(dt, depth)
            src = rng.choice([x for x in ["f32", "f16", "i32"] + EXTRA_DTYPES if x != dt])
            return ("cast", self.tree(src, depth - 1), dt)
        # i32
        if r < 0.5:
            op = rng.choice(["+", "-", "*", "&", "|", "^", "maximum", "minimum", "//", "%", "/"])
            a = self.tree(dt, depth - 1)
            if op in ("//", "%", "/"):
                b = ("lit", rng.choice([3, 5, 7, 16]))
            elif rng.random() < 0.3:
                b = ("lit", rng.choice(INT_LITS))
            else:
                b = self.tree(dt, depth - 1)
            return ("bin", op, a, b)
        if r < 0.6:
            return ("un", rng.choice(["abs", "neg"]), self.tree(dt, depth - 1))
        if r < 0.75:
            return self.select(dt, depth)
        src = rng.choice(["f32", "f16"] + EXTRA_DTYPES)
        x = self.tree(src, depth - 1)
        return ("cast", ("bin", "*", x, ("lit", rng.choice([10.0, 100.0]))), dt)

    def select(self, dt, depth):
        rng = self.rng
        ct = rng.choice(["f32", "f16", "i32"] + EXTRA_DTYPES)
        a = self.tree(ct, depth - 1)
        b = ("lit", rng.choice(FLOAT_LITS if ct in FLOATS else INT_LITS)) \
            if rng.random() < 0.5 else self.tree(ct, depth - 1)
        cond = ("cmp", rng.choice(["<", "<=", ">", ">=", "==", "!="]), a, b)
        return ("select", cond, self.tree(dt, depth - 1), self.tree(dt, depth - 1))


def gen_dims(rng, p, names, big_inner=True):
    for i, d in enumerate(names):
        inner = i == len(names) - 1
        p.dims[d] = pick_size(rng, big=inner and big_inner)
        if rng.random() < 0.3:
            p.static.add(d)
    cap_sizes(rng, p)


def gen_plain(rng, family):
    """copy, elementwise, broadcast, transpose."""
    p = Prog(family)
    ndim = rng.choice([1, 2, 2, 2, 3]) if family != "transpose" else 2
    names = {1: ["N"], 2: ["M", "N"], 3: ["B", "M", "N"]}[ndim]
    gen_dims(rng, p, names)
    if family == "copy":
        dt = new_inputs_dtype(rng)
        p.tensors = [Tensor("a", names, dt), Tensor("b", names, dt, out=True)]
        ept = rng.choice([None] * 6 + [1, 2, 4, 8])
        p.stmts = [("write", ("read", "a", ept, None), "b", None)]
    elif family == "transpose":
        dt = new_inputs_dtype(rng)
        p.tensors = [Tensor("a", names, dt), Tensor("b", list(reversed(names)), dt, out=True)]
        x = ("read", "a", None, None)
        if rng.random() < 0.5 and dt in FLOATS:
            x = ("bin", "*", x, ("lit", 2.0))
        if rng.random() < 0.3:
            x = ("permute", x, list(reversed(names)))
        p.stmts = [("write", x, "b", None)]
    else:
        nin = rng.choice([1, 2, 2, 3])
        for i in range(nin):
            p.tensors.append(Tensor("abc"[i], names, new_inputs_dtype(rng)))
        if family == "broadcast" or rng.random() < 0.3:
            for sub in ([names[-1]], [names[0]]) if ndim > 1 else ():
                if rng.random() < 0.7:
                    p.tensors.append(Tensor("r" + sub[0].lower(), sub,
                                            rng.choice(["f32", "f16", "i32"])))
        if rng.random() < 0.4:
            st = rng.choice(["f32", "f16", "i32"])
            p.scalars.append(("alpha", st, rng.choice([0.5, 2.0, -1.5]) if st in FLOATS
                              else rng.choice([3, -7])))
        nout = rng.choice([1, 1, 2])
        tg = TreeGen(rng, p, names, None)
        for j in range(nout):
            odt = new_inputs_dtype(rng)
            e = tg.tree(odt, rng.choice([1, 2, 3]))
            p.tensors.append(Tensor(f"o{j}", names, odt, out=True))
            p.stmts.append(("write", e, f"o{j}", None))
    gen_layout_constraints(rng, p, names)
    return p


def gen_reduce(rng):
    p = Prog("reduce")
    names = ["M", "N"]
    D = rng.choice(["N", "N", "M"])
    R = "M" if D == "N" else "N"
    p.dims[R] = pick_size(rng)
    p.dims[D] = pick_size(rng, big=True)
    for d in names:
        if rng.random() < 0.3:
            p.static.add(d)
    cap_sizes(rng, p)
    dt = rng.choice(["f32", "f32", "f16", "i32"] + EXTRA_DTYPES)
    p.tensors = [Tensor("x", names, dt)]
    kind = rng.choice(["sum", "sum", "max", "min"])
    tg = TreeGen(rng, p, names, None)
    x = tg.tree(dt, rng.choice([0, 0, 1, 2]))
    init = None
    r = rng.random()
    if r < 0.3:
        init = ("lit", rng.choice(FLOAT_LITS if dt in FLOATS else INT_LITS))
    elif r < 0.45:
        p.tensors.append(Tensor("i", [R], dt))
        init = ("read", "i", None, None)
    p.tensors.append(Tensor("s", [R], dt, out=True))
    p.stmts.append(("write", ("red", kind, x, D, init), "s", None))
    if rng.random() < 0.25 and dt in FLOATS:
        p.tensors.append(Tensor("y", names, dt, out=True))
        p.stmts.append(("write", ("bin", "-", x, ("bcast", ("red", kind, x, D, None), names)),
                        "y", None))
    c = p.cons
    # The non-reduced dim: workgroups along it.
    raxis, daxis = (1, 0) if rng.random() < 0.7 else (0, 1)
    if D == "M" and rng.random() < 0.5:
        raxis, daxis = 0, 1
    rt = rng.choice([1, 1, 2, 4])
    c["wg"][R] = (rt, raxis)
    if rng.random() < 0.7:
        c["wave"][R] = rng.choice([rt, 1]) if rt % 1 == 0 else rt
    vs = {R: 1}
    if rng.random() < 0.5:
        # D split into waves of one workgroup, the whole row in it.
        tile = rng.choice([64, 128, 256, 512, 1024])
        w = rng.choice([t for t in (32, 64, 128, 256, 512)
                        if t <= tile and tile % t == 0 and tile // t <= 8])
        c["wg"][D] = (tile, daxis)
        c["wave"][D] = w
        vs[D] = w
        c["assume"].append(f"{D} <= {tile}")
        if p.dims[D] > tile:
            p.dims[D] = tile
    else:
        opt = rng.random()
        if opt < 0.4 and D not in p.static:
            vs[D] = "SELF"  # the whole row, whatever its length
        else:
            v = rng.choice([32, 64, 128, 256, 512])
            vs[D] = v
            if D in p.static:
                p.dims[D] = min(p.dims[D], v) if rng.random() < 0.7 else p.dims[D]
            else:
                c["assume"].append(f"{D} <= {v}")
                p.dims[D] = min(p.dims[D], v)
        if rng.random() < 0.2:
            c["wpb"] = [rng.choice([2, 4]), 1, 1]
    c["vs"] = vs
    c["hw"] = True
    return p


def shift_map(p, name, reg, mem_dims, exprs_in, funcs_in, out_side, reg_first=True):
    """Registers a mapping. reg: register dims (== iterators' dims, in order); for a read
    the register side is `outputs`, for a write `inputs`."""
    iters = ["i", "j", "k"][:len(reg)]
    reg_side = {d: it for d, it in zip(reg, iters)}
    mem_side = dict(zip(mem_dims, exprs_in))
    m = {"iters": iters, "reg_dims": list(reg), "iters_of": iters}
    if out_side == "read":
        m["inputs"], m["outputs"] = mem_side, reg_side
        m["f_in"] = dict(zip(mem_dims, funcs_in))
    else:
        m["inputs"], m["outputs"] = reg_side, mem_side
        m["f_out"] = dict(zip(mem_dims, funcs_in))
    p.mappings[name] = m


def gen_mapping(rng):
    p = Prog("mapping")
    kind = rng.choice(["shift_read", "shift_write", "transpose_read", "stride_read"])
    two = rng.random() < 0.7
    dt = rng.choice(["f32", "f16", "i32"] + EXTRA_DTYPES)
    reg = ["M", "N"] if two else ["N"]
    mem = ["M", "K"] if two else ["K"]
    for d in reg + ["K"]:
        p.dims[d] = pick_size(rng, big=(d != "M"))
        if rng.random() < 0.3:
            p.static.add(d)
    cap_sizes(rng, p)
    S = rng.choice([-7, -3, -1, 1, 2, 3, 8])
    inner_txt = f"j - {S}" if S > 0 else f"j + {-S}"
    if kind == "shift_read":
        f = (lambda it, sz, S=S: it["j"] - S)
        exprs = (["i", inner_txt] if two else [inner_txt.replace("j", "i")])
        funcs = ([lambda it, sz: it["i"], f] if two else [lambda it, sz, S=S: it["i"] - S])
        shift_map(p, "m", reg, mem, exprs, funcs, "read")
        p.tensors = [Tensor("a", mem, dt), Tensor("b", reg, dt, out=True)]
        p.stmts = [("write", ("read", "a", None, "m"), "b", None)]
    elif kind == "stride_read":
        st = rng.choice([2, 3])
        exprs = (["i", f"{st} * j"] if two else [f"{st} * i"])
        funcs = ([lambda it, sz: it["i"], lambda it, sz, st=st: st * it["j"]] if two
                 else [lambda it, sz, st=st: st * it["i"]])
        shift_map(p, "m", reg, mem, exprs, funcs, "read")
        p.tensors = [Tensor("a", mem, dt), Tensor("b", reg, dt, out=True)]
        p.stmts = [("write", ("read", "a", None, "m"), "b", None)]
    elif kind == "shift_write":
        wtxt = f"j + {S}" if S > 0 else f"j - {-S}"
        exprs = (["i", wtxt] if two else [wtxt.replace("j", "i")])
        funcs = ([lambda it, sz: it["i"], lambda it, sz, S=S: it["j"] + S] if two
                 else [lambda it, sz, S=S: it["i"] + S])
        shift_map(p, "m", reg, mem, exprs, funcs, "write")
        p.tensors = [Tensor("a", reg, dt), Tensor("b", mem, dt, out=True)]
        p.stmts = [("write", ("read", "a", None, None), "b", "m")]
    else:  # transpose read: a[K, N] read as a register [N, K]
        p.dims.pop("M", None)
        p.static.discard("M")
        reg = ["N", "K"]
        mem = ["K", "N"]
        m = {"iters": ["i", "j"], "reg_dims": reg, "iters_of": ["i", "j"],
             "inputs": {"K": "j", "N": "i"}, "outputs": {"N": "i", "K": "j"},
             "f_in": {"K": lambda it, sz: it["j"], "N": lambda it, sz: it["i"]}}
        p.mappings["m"] = m
        p.tensors = [Tensor("a", mem, dt), Tensor("b", reg, dt, out=True)]
        p.stmts = [("write", ("read", "a", None, "m"), "b", None)]
        two = True
    # Constraints over the register dims of the access.
    regdims = p.mappings["m"]["reg_dims"]
    gen_layout_constraints(rng, p, regdims)
    for d in list(p.cons["wg"]):
        if d not in regdims:
            del p.cons["wg"][d]
    if p.cons["vs"]:
        p.cons["vs"] = {d: v for d, v in p.cons["vs"].items() if d in regdims}
    return p


def gen_gemm(rng):
    p = Prog("gemm")
    for d, n in (("M", rng.choice([1, 5, 16, 31, 64, 100, 128])),
                 ("N", rng.choice([1, 7, 16, 33, 64, 70, 128])),
                 ("K", rng.choice([0, 1, 15, 16, 17, 32, 64, 100, 190]))):
        p.dims[d] = n
        if rng.random() < 0.3:
            p.static.add(d)
    sp = rng.choice(["global", "shared"])
    bkn = rng.random() < 0.2
    idt = rng.choice(["f16"] + EXTRA_DTYPES) if EXTRA_DTYPES else "f16"
    p.tensors = [Tensor("a", ["M", "K"], idt, sp),
                 Tensor("b", ["K", "N"] if bkn else ["N", "K"], idt, sp)]
    odt = rng.choice(["f32", "f32", "f16"])
    p.tensors.append(Tensor("c", ["M", "N"], odt, out=True))
    epi = ("var", "result")
    r = rng.random()
    if r < 0.3:
        p.tensors.insert(2, Tensor("bias", ["N"], "f32"))
        epi = ("bin", "+", ("bin", "*", epi, ("lit", 0.5)),
               ("bcast", ("read", "bias", None, None), ["M", "N"]))
    if odt == "f16":
        epi = ("cast", epi, "f16")
    c = p.cons
    wm, wn = rng.choice([16, 32, 64]), rng.choice([16, 32, 64])
    bm, bn = wm * rng.choice([1, 2]), wn * rng.choice([1, 2])
    am = rng.choice([0, 1])
    c["wg"] = {"M": (bm, am), "N": (bn, 1 - am)}
    c["tiling"] = {"K": rng.choice([16, 32, 64])}
    c["wave"] = {"M": wm, "N": wn}
    c["hw"] = False
    p.stmts = [("gemm", "a", "b", "K", epi, "c")]
    return p


def gen_if(rng):
    p = gen_plain(rng, "elementwise")
    p.family = "if"
    # Replace the first write by an `if` over a predicate on a symbol.
    st = p.stmts[0]
    t = p.tensor(st[2])
    d = rng.choice(list(p.dims))
    thr = rng.choice([0, 1, 4, 64])
    pred = ("sym", f"{d} > {thr}", lambda sz, d=d, thr=thr: sz[d] > thr)
    tg = TreeGen(rng, p, t.dims, None)
    other = tg.tree(t.dtype, 1)
    if expr_type(p, other)[1] != t.dims:  # both branches must yield the same type
        other = ("bin", "*", st[1], ("lit", 2.0 if t.dtype in FLOATS else 2))
    p.stmts[0] = ("ifval", pred, st[1], other, st[2])
    return p


def generate(seed, index, families):
    rng = random.Random(f"{seed}:{index}")
    fam = families[index % len(families)] if rng.random() < 0.5 else rng.choice(families)
    for _ in range(50):
        if fam in ("copy", "elementwise", "broadcast", "transpose"):
            p = gen_plain(rng, fam)
        elif fam == "reduce":
            p = gen_reduce(rng)
        elif fam == "mapping":
            p = gen_mapping(rng)
        elif fam == "gemm":
            p = gen_gemm(rng)
        else:
            p = gen_if(rng)
        if all(used_tensor(p, t.name) for t in p.tensors):
            break
    prune(p)
    p.seed = rng.randrange(2 ** 31)
    return p


def exprs_of(p):
    for st in p.stmts:
        if st[0] == "write":
            yield st[1]
        elif st[0] == "gemm":
            yield st[4]
        elif st[0] == "ifval":
            yield st[2]
            yield st[3]


def walk(e):
    yield e
    if isinstance(e, tuple):
        for x in e[1:]:
            if isinstance(x, tuple):
                yield from walk(x)


def used_tensor(p, name):
    for st in p.stmts:
        if st[0] == "write" and st[2] == name:
            return True
        if st[0] == "gemm" and name in (st[1], st[2], st[5]):
            return True
        if st[0] == "ifval" and st[4] == name:
            return True
    for e in exprs_of(p):
        for x in walk(e):
            if x[0] == "read" and x[1] == name:
                return True
    return False


def used_scalar(p, name):
    return any(x[0] == "scalar" and x[1] == name for e in exprs_of(p) for x in walk(e))


def make_inputs(p):
    rs = np.random.default_rng(p.seed)
    data = {}
    for t in p.tensors:
        shape = [p.dims[d] for d in t.dims]
        if t.dtype == "bf16":
            v = np.full(shape, SENTINEL[t.dtype]) if t.out else rs.uniform(-1, 1, shape)
            data[t.name] = bf16_bits(v)
        elif t.out:
            data[t.name] = np.full(shape, SENTINEL[t.dtype], NP_DTYPE[t.dtype])
        elif t.dtype in FLOATS:
            data[t.name] = rs.uniform(-1, 1, shape).astype(NP_DTYPE[t.dtype])
        else:
            data[t.name] = rs.integers(-100, 101, shape).astype(np.int32)
    return data


# ---- running --------------------------------------------------------------------------------
class Runner:
    def __init__(self, wave_run, timeout):
        self.wave_run = os.path.abspath(wave_run)
        self.wavec = os.environ.get("WAVEC") or os.path.join(os.path.dirname(self.wave_run),
                                                             "wavec")
        self.timeout = timeout
        self.env = dict(os.environ)

    def use_cache(self, path):
        """wavec's compile cache for this run only: a long run would otherwise leave an entry per
        program and target in the user's cache (docs/user-guide.md, "Compile cache")."""
        self.env["WAVEC_CACHE_DIR"] = path

    # The binaries being replaced while a build runs (the compiler's build directory can be
    # rebuilt under a long run): wait and retry (WAVE_FUZZ_RETRIES times, default 60, 5 s
    # apart) instead of reporting a finding.
    TRANSIENT = re.compile(r"codegen-unavailable|file too short|cannot execute|cannot run the "
                           r"compiler|Text file busy|No such file or directory: '.*wave")

    def call(self, cmd, cwd):
        """(status, code, output): status 'ok', 'fail' (exit code), 'signal', 'timeout'."""
        for _ in range(int(os.environ.get("WAVE_FUZZ_RETRIES", "60")) + 1):
            st, rc, out = self.call_once(cmd, cwd)
            if st == "ok" or not self.TRANSIENT.search(out):
                return st, rc, out
            time.sleep(5)
        return st, rc, out

    def call_once(self, cmd, cwd):
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, env=self.env,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as ex:
            return "fail", -1, str(ex)
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            out, _ = proc.communicate()
            return "timeout", None, out.decode("utf-8", "replace")
        text = out.decode("utf-8", "replace")
        if proc.returncode < 0 or proc.returncode >= 128:
            return "signal", proc.returncode, text
        return ("ok" if proc.returncode == 0 else "fail"), proc.returncode, text


LOCATED = re.compile(r"\.wave:\d+:\d+: error: .*\[([a-z0-9-]+)\]")
LOCATED_MSG = re.compile(r"\.wave:\d+:\d+: error: (.*?)\s*\[([a-z0-9-]+)\]")


def failure_kind(out):
    """What a failed device run that gave no located diagnostic reports."""
    if "out-of-bounds" in out:
        return "out-of-bounds-access"
    if re.search(r"\brace\b", out):
        return "race"
    if "does not parse" in out or "a wavec bug" in out:
        return "codegen-internal-error"
    return "internal-error"
INTERNAL = re.compile(r"a wavec bug|internal error|assert|Assertion|LLVM ERROR|terminate", re.I)


def write_case(p, d):
    """Writes prog.wave and the .npy inputs into directory d; returns the input arguments."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "prog.wave"), "w") as f:
        f.write(render(p))
    data = make_inputs(p)
    args = []
    for t in p.tensors:
        np.save(os.path.join(d, t.name + ".npy"), data[t.name])
        args.append(f"--input={t.name}={t.name}.npy")
    return data, args


def values(a, dtype):
    """The values of a tensor as stored in its .npy file (bf16: its bits)."""
    if dtype == "bf16":
        return bf16_value(a)
    return a.astype(np.float64 if dtype in FLOATS else np.int64)


def load_out(path, t):
    return values(np.load(path), t.dtype)


def compare(p, expected, got_dir):
    """Per-output comparison; returns (ok, detail, kinds) where kinds is a set of
    'unwritten', 'stray', 'wrong'."""
    kinds, lines = set(), []
    for t in p.tensors:
        if not t.out:
            continue
        ev, ee, ef, ew = expected[t.name]
        path = os.path.join(got_dir, t.name + ".npy")
        if not os.path.exists(path):
            return False, f"{t.name}: no output file", {"no-output"}
        g = load_out(path, t)
        if g.shape != ev.shape:
            return False, f"{t.name}: shape {g.shape} != {ev.shape}", {"shape"}
        sent = SENTINEL[t.dtype]
        if t.dtype in FLOATS:
            ulp = EPS[t.dtype] * 2 * np.abs(ev)
            tol = 4 * ee + ATOL[t.dtype] + ulp
            with np.errstate(all="ignore"):
                close = (np.abs(g - ev) <= tol) | (np.isnan(g) & np.isnan(ev)) | (g == ev)
        else:
            close = g == ev
        bad = ~close & ~ef
        unwritten = bad & (g == sent) & ew
        stray = bad & ~ew
        wrong = bad & ~unwritten & ~stray
        nb = int(bad.sum())
        if nb:
            for name, m in (("unwritten", unwritten), ("stray", stray), ("wrong", wrong)):
                if m.any():
                    kinds.add(name)
            first = tuple(int(x) for x in np.argwhere(bad)[0])
            lines.append(f"{t.name}: {nb} of {bad.size} elements differ (unwritten "
                         f"{int(unwritten.sum())}, stray {int(stray.sum())}, wrong "
                         f"{int(wrong.sum())}); first at {list(first)}: got {g[first]}, "
                         f"expected {ev[first]}")
    return not lines, "; ".join(lines), kinds


class Result:
    def __init__(self, index, prog):
        self.index, self.prog = index, prog
        self.outcome = None       # match mismatch refused invalid crash
        self.detail = []
        self.failing = {}         # side -> kinds
        self.refused = {}         # side -> diagnostic id
        self.check_accepted_codegen_refused = False
        self.signature = None


def run_program(runner, p, targets, workdir, index=0):
    res = Result(index, p)
    d = tempfile.mkdtemp(prefix=f"p{index}.", dir=workdir)
    try:
        data, in_args = write_case(p, d)
        ra = run_args(p)
        st, rc, out = runner.call([runner.wavec, "prog.wave", "--check"] +
                                  [a for a in ra if a.startswith("-D")], d)
        if st != "ok":
            if st in ("signal", "timeout"):
                res.outcome = "crash"
                res.detail.append(f"wavec --check: {st} {rc}: {out[-400:]}")
                res.signature = ("crash", "check", st)
                return res
            ids = LOCATED.findall(out)
            res.outcome = "invalid"
            res.detail.append(f"wavec --check refused: {ids[:3] or out[-300:]}")
            res.signature = ("invalid",) + tuple(sorted(set(ids))[:2])
            return res
        expected = Oracle(p, {t.name: values(data[t.name], t.dtype) for t in p.tensors}).run()
        sides = [("reference", ["--reference", "--target=gfx942"])] + \
                [(t, [f"--device=emu:{t}"]) for t in targets]
        crashes, refusals = [], []
        for side, dev in sides:
            od = os.path.join(d, "out_" + side)
            cmd = [runner.wave_run, "prog.wave"] + dev + ra + in_args + [f"--output-dir={od}"]
            st, rc, out = runner.call(cmd, d)
            if st in ("signal", "timeout"):
                crashes.append(side)
                res.detail.append(f"{side}: {st} {rc}: {out[-300:].strip()}")
                res.failing[side] = {st}
                continue
            if st == "fail":
                ids = LOCATED_MSG.findall(out)
                if not ids:  # a diagnostic with an id but no line:column (distribution)
                    ids = [(m[0] + " (unlocated)", m[1]) for m in
                           re.findall(r"error: (.*?)\s*\[([a-z0-9-]+)\]", out)]
                if ids and not INTERNAL.search(out):
                    msg = re.sub(r"'[^']*'", "'...'", ids[0][0])[:90]
                    res.refused[side] = f"{ids[0][1]}: {msg}"
                    refusals.append(side)
                    res.detail.append(f"{side}: refused [{ids[0][1]}] {ids[0][0]}")
                else:
                    crashes.append(side)
                    res.failing[side] = {failure_kind(out)}
                    res.detail.append(f"{side}: failed without a located diagnostic: "
                                      f"{out.strip()[-300:]}")
                continue
            ok, detail, kinds = compare(p, expected, od)
            if not ok:
                res.failing[side] = kinds
                res.detail.append(f"{side}: {detail}")
        if crashes:
            res.outcome = "crash"
        elif res.failing:
            res.outcome = "mismatch"
        elif refusals:
            res.outcome = "refused"
            res.check_accepted_codegen_refused = True
        else:
            res.outcome = "match"
        if res.outcome in ("crash", "mismatch"):
            fails = sorted(res.failing)
            kinds = sorted(set().union(*res.failing.values()))
            res.signature = (res.outcome, p.family, "reference" in fails, tuple(kinds))
        elif res.outcome == "refused":
            res.signature = ("refused", tuple(sorted(set(res.refused.values()))))
        return res
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- minimization ---------------------------------------------------------------------------
def replace_at(e, path, new):
    if not path:
        return new
    lst = list(e)
    lst[path[0]] = replace_at(e[path[0]], path[1:], new)
    return tuple(lst)


def subpaths(e, path=()):
    yield path, e
    if isinstance(e, tuple):
        for i, x in enumerate(e):
            if i > 0 and isinstance(x, tuple) and x and isinstance(x[0], str):
                yield from subpaths(x, path + (i,))


def prune(p):
    """Drops tensors, scalars and mappings nothing uses."""
    p.tensors = [t for t in p.tensors if used_tensor(p, t.name)]
    p.scalars = [s for s in p.scalars if used_scalar(p, s[0])]
    used_maps = {x[3] for e in exprs_of(p) for x in walk(e) if x[0] == "read" and x[3]}
    used_maps |= {st[3] for st in p.stmts if st[0] == "write" and st[3]}
    p.mappings = {k: v for k, v in p.mappings.items() if k in used_maps}
    return p


def written_subexprs(p):
    """(statement index, statement, path, subexpression, its (dtype, dims)) of every computed
    subexpression of a written value (not reads, literals, scalars or names)."""
    for si, st in enumerate(p.stmts):
        if st[0] != "write":
            continue
        for path, sub in subpaths(st[1]):
            if sub[0] in ("read", "lit", "scalar", "var"):
                continue
            try:
                typ = expr_type(p, sub)
            except Exception:
                continue
            yield si, st, path, sub, typ


def candidates(p):
    """Smaller variants of p, most aggressive first."""
    # Drop a statement.
    if len(p.stmts) > 1:
        for i in range(len(p.stmts)):
            q = copy.deepcopy(p)
            del q.stmts[i]
            yield prune(q)
    # Replace a subexpression by one of its operands of the same type and dims.
    for si, st, path, sub, want in written_subexprs(p):
        for i, x in enumerate(sub[1:], 1):
            if isinstance(x, tuple) and x and isinstance(x[0], str) and x[0] != "lit":
                try:
                    if expr_type(p, x) == want:
                        q = copy.deepcopy(p)
                        q.stmts[si] = ("write", replace_at(st[1], path, x), st[2], st[3])
                        yield prune(q)
                except Exception:
                    pass
    # Replace a subexpression by a read (cast when needed) of an input of its dims.
    for si, st, path, sub, (dt, dims) in written_subexprs(p):
        for t in p.tensors:
            if t.out or t.dims != dims or dt not in ["f32", "f16", "i32"] + EXTRA_DTYPES:
                continue
            r = ("read", t.name, None, None)
            new = r if t.dtype == dt else ("cast", r, dt)
            if new == sub:
                continue
            q = copy.deepcopy(p)
            q.stmts[si] = ("write", replace_at(st[1], path, new), st[2], st[3])
            yield prune(q)
            break
    # Output element type to an input's (a plain copy of the same type).
    for si, st in enumerate(p.stmts):
        if st[0] == "write" and st[1][0] == "cast" and st[1][1][0] == "read" \
                and not st[1][1][3] and not st[3]:
            src = p.tensor(st[1][1][1])
            if src.dims == p.tensor(st[2]).dims:
                q = copy.deepcopy(p)
                q.tensor(st[2]).dtype = src.dtype
                q.stmts[si] = ("write", st[1][1], st[2], None)
                yield prune(q)
    # Constraint fields.
    c = p.cons
    if c["wpb"]:
        q = copy.deepcopy(p)
        q.cons["wpb"] = None
        yield q
    if c["vs"]:
        for d in list(c["vs"]):
            q = copy.deepcopy(p)
            del q.cons["vs"][d]
            yield q
    for d in list(c["wave"]):
        q = copy.deepcopy(p)
        del q.cons["wave"][d]
        yield q
    for d, (tile, axis) in c["wg"].items():
        if tile > 1:
            for nt in (1, tile // 2):
                q = copy.deepcopy(p)
                q.cons["wg"][d] = (nt, axis)
                if d in q.cons["wave"] and nt % q.cons["wave"][d]:
                    q.cons["wave"][d] = nt
                yield q
    # Sizes.
    for d, n in p.dims.items():
        for nn in sorted({1, 2, n // 2, n - 1}):
            if 0 < nn < n:
                q = copy.deepcopy(p)
                q.dims[d] = nn
                yield q
    # Static <-> dynamic.
    for d in list(p.static):
        q = copy.deepcopy(p)
        q.static.discard(d)
        yield q
    # Element types of inputs and outputs (copies only keep the program valid).


def minimize(runner, p, res, targets, workdir, budget_s=120.0):
    """Shrinks p while some target still fails the same way; returns (prog, result)."""
    t0 = time.time()
    failing_targets = [t for t in targets if t in res.failing] or targets
    want_ref = "reference" in res.failing
    tlist = failing_targets[:1] if not want_ref else []
    kinds = set().union(*res.failing.values())

    def still(q):
        r = run_program(runner, q, tlist, workdir)
        if r.outcome not in ("mismatch", "crash"):
            return None
        if want_ref and "reference" not in r.failing:
            return None
        if not want_ref and not (set(r.failing) & set(tlist)):
            return None
        if not (set().union(*r.failing.values()) & kinds):
            return None
        return r

    cur, cur_res = p, still(p)
    if cur_res is None:  # flaky with fewer targets: keep them all
        tlist = failing_targets
        cur_res = still(p) or res
    improved = True
    while improved and time.time() - t0 < budget_s:
        improved = False
        for q in candidates(cur):
            if time.time() - t0 > budget_s:
                break
            try:
                render(q)
            except Exception:
                continue
            r = still(q)
            if r is not None:
                cur, cur_res, improved = q, r, True
                break
    # Which targets show the minimized mismatch.
    full = run_program(runner, cur, targets, workdir)
    if full.outcome in ("mismatch", "crash"):
        cur_res = full
    return cur, cur_res


def save_finding(out_dir, name, p, res, targets_all, cmdline):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    data, in_args = write_case(p, d)
    fails = [t for t in targets_all if t in res.failing]
    ra = run_args(p)
    run_line = " ".join(a.replace("--size=", "--size ").replace("--input=", "--input ")
                        for a in ra)
    head = [f"# wave-fuzz finding ({cmdline}), family {p.family}.",
            f"# Outcome: {res.outcome}; failing: {', '.join(sorted(res.failing))}.",
            "# " + "\n# ".join(res.detail)[:1500].replace("\n", "\n# "),
            ]
    if "reference" in res.failing:
        head.append("# The reference evaluator itself differs from wave-fuzz's numpy oracle "
                    "(run.sh shows it).")
    head.append(f"# TARGETS: {' '.join(fails or targets_all[:1])}")
    head.append(f"# RUN-FUZZ: {run_line}")
    text = "\n".join(head) + "\n" + render(p)
    with open(os.path.join(d, f"{name}.wave"), "w") as f:
        f.write(text)
    with open(os.path.join(d, "prog.wave"), "w") as f:
        f.write(text)
    lines = ["#!/bin/sh", "# Re-runs this finding: the reference evaluator and each failing "
             "target, outputs under out_*/ (pre-filled with the sentinel "
             f"{SENTINEL}).", 'WAVE_RUN=${WAVE_RUN:-wave-run}', 'cd "$(dirname "$0")"']
    for side in ["reference"] + fails:
        dev = "--reference" if side == "reference" else f"--device emu:{side}"
        lines.append(f"$WAVE_RUN prog.wave {dev} {run_line} "
                     f"{' '.join(a.replace('--input=', '--input ') for a in in_args)} "
                     f"--output-dir out_{side}")
    with open(os.path.join(d, "run.sh"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(os.path.join(d, "run.sh"), 0o755)
    return d


# ---- main -----------------------------------------------------------------------------------
_WORKER = None  # (arguments, runner, work directory), set by main before the workers fork


def run_one(i):
    """Program i of the run, in a worker: its Result without the program (see report)."""
    a, runner, workdir = _WORKER
    p = generate(a.seed, i, a.families)
    try:
        r = run_program(runner, p, a.targets, workdir, i)
    except Exception as ex:  # a bug of this tool: reported, never a pass
        r = Result(i, p)
        r.outcome = "tool-error"
        r.detail.append(f"wave-fuzz: {type(ex).__name__}: {ex}")
        r.signature = ("tool-error", p.family, type(ex).__name__)
    r.prog = None
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description="random valid Wave kernels, run differentially "
                                 "(docs/reliability.md)")
    ap.add_argument("--wave-run", required=True, help="path of wave-run (wavec beside it)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--start", type=int, default=0, help="first program index")
    ap.add_argument("--targets", nargs="+", default=ALL_TARGETS)
    ap.add_argument("--families", nargs="+", default=ALL_FAMILIES)
    ap.add_argument("--dtypes", nargs="*", default=[], choices=["bf16"],
                    help="element types programs may use besides f32, f16 and i32 (a seed and "
                    "index name another program with them)")
    ap.add_argument("--out", default=None, help="directory for minimized findings")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per wave-run call")
    ap.add_argument("--minimize", type=int, default=1,
                    help="minimize this many programs per distinct signature (0: none)")
    ap.add_argument("--minimize-budget", type=float, default=120.0, help="seconds per finding")
    ap.add_argument("--stop-after", type=float, default=None, metavar="SECONDS",
                    help="start no program after SECONDS; the summary counts the programs "
                    "that finished and lists those that did not")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--print", dest="print_index", type=int, default=None,
                    help="print program INDEX of the seed and its run line, run nothing")
    a = ap.parse_args(argv)
    EXTRA_DTYPES[:] = a.dtypes
    for t in a.targets:
        if t not in ALL_TARGETS:
            ap.error(f"unknown target {t} (emulated targets: {' '.join(ALL_TARGETS)})")
    for f in a.families:
        if f not in ALL_FAMILIES:
            ap.error(f"unknown family {f} (families: {' '.join(ALL_FAMILIES)})")
    if a.print_index is not None:
        p = generate(a.seed, a.print_index, a.families)
        print(render(p), end="")
        print("# run:", " ".join(run_args(p)))
        return 0
    runner = Runner(a.wave_run, a.timeout)
    if not os.path.exists(runner.wave_run) or not os.path.exists(runner.wavec):
        print(f"wave-fuzz: no wave-run/wavec at {runner.wave_run}", file=sys.stderr)
        return 2
    # SIGTERM (ctest's timeout, a kill) leaves through the `finally` below, which removes the
    # work directory.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    workdir = tempfile.mkdtemp(prefix="wave-fuzz.")
    if not os.environ.get("WAVEC_CACHE_DIR"):
        runner.use_cache(os.path.join(workdir, "wavec-cache"))
    t0 = time.time()
    global _WORKER
    _WORKER = (a, runner, workdir)
    done = 0

    def report(r):
        nonlocal done
        done += 1
        r.prog = generate(a.seed, r.index, a.families)  # programs hold lambdas: not sent back
        if a.verbose or r.outcome in ("mismatch", "crash", "tool-error"):
            print(f"[{done}/{a.count}] program {r.index} ({r.prog.family}): {r.outcome}"
                  + ("".join("\n    " + x for x in r.detail) if r.outcome != "match"
                     else ""), flush=True)
        return r

    try:
        indices = range(a.start, a.start + a.count)
        left = lambda: None if a.stop_after is None else a.stop_after - (time.time() - t0)
        results = []
        if a.jobs <= 1:
            for i in indices:
                if left() is not None and left() <= 0:
                    break
                results.append(report(run_one(i)))
        else:
            # Processes, not threads: generating, rendering, the numpy oracle and comparing
            # are Python, which under one interpreter lock kept a 48-job run on a 64-core
            # machine at some 8 programs a second.
            with ProcessPoolExecutor(max_workers=a.jobs,
                                     mp_context=multiprocessing.get_context("fork")) as ex:
                futures = [ex.submit(run_one, i) for i in indices]
                try:
                    for f in as_completed(futures, timeout=left()):
                        results.append(report(f.result()))
                except FuturesTimeout:
                    # Programs not started are dropped; those running get one call's timeout
                    # more to finish, then their workers are killed.
                    for f in futures:
                        f.cancel()
                    running = [f for f in futures if not f.cancelled() and not f.done()]
                    futures_wait(running, timeout=a.timeout + 30)
                    seen = {r.index for r in results}
                    results += [report(f.result()) for f in futures
                                if f.done() and not f.cancelled() and f.exception() is None
                                and f.result().index not in seen]
                    for proc in list(getattr(ex, "_processes", {}).values()):
                        proc.kill()
        results.sort(key=lambda r: r.index)
        if len(results) < a.count:
            # Stopped by --stop-after: the summary counts the programs that finished; those
            # below the last one that did not are listed (run them again by --start).
            last = results[-1].index if results else a.start - 1
            done_set = {r.index for r in results}
            missing = [i for i in range(a.start, last + 1) if i not in done_set]
            print(f"wave-fuzz: stopped after {a.stop_after or 0:.0f} s: {len(results)} programs "
                  f"of {a.start}..{last} finished; not finished: "
                  f"{' '.join(map(str, missing)) or 'none'}; next start {last + 1}", flush=True)
            a.count = len(results)
        counts = {k: 0 for k in ("match", "mismatch", "refused", "invalid", "crash",
                                  "tool-error")}
        fam = {}
        sigs = {}
        check_ok_codegen_refused = 0
        for r in results:
            counts[r.outcome] += 1
            fam.setdefault(r.prog.family, {}).setdefault(r.outcome, 0)
            fam[r.prog.family][r.outcome] += 1
            if r.signature:
                sigs.setdefault(r.signature, []).append(r)
            check_ok_codegen_refused += r.check_accepted_codegen_refused
        findings = []
        if a.out and a.minimize > 0:
            os.makedirs(a.out, exist_ok=True)
            for sig, rs in sorted(sigs.items(), key=lambda kv: str(kv[0])):
                if sig[0] not in ("mismatch", "crash"):
                    continue
                for r in rs[:a.minimize]:
                    print(f"minimizing program {r.index} ({sig})...", flush=True)
                    q, qr = minimize(runner, r.prog, r, a.targets, workdir, a.minimize_budget)
                    name = f"fuzz_s{a.seed}_p{r.index}_{r.prog.family}"
                    d = save_finding(a.out, name, q, qr, a.targets,
                                     f"--seed {a.seed} program {r.index}" +
                                     "".join(f" --dtypes {x}" for x in a.dtypes))
                    findings.append(d)
                    print(f"  -> {d}/{name}.wave", flush=True)
        span = (f"{a.start}..{results[-1].index}" if results else "none")
        print(f"\nwave-fuzz seed {a.seed}, programs {span}, targets "
              f"{' '.join(a.targets)}"
              + "".join(f", dtypes +{x}" for x in a.dtypes) + f", {time.time() - t0:.0f} s")
        for f_, c in sorted(fam.items()):
            print(f"  {f_:12s} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        print("  signatures:")
        for sig, rs in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
            print(f"    {len(rs):5d}  {sig}  e.g. program {rs[0].index}")
        if check_ok_codegen_refused:
            print(f"  {check_ok_codegen_refused} programs passed `wavec --check` and were refused "
                  "by code generation (a located diagnostic)")
        print(f"programs {a.count}, matches {counts['match']}, mismatches {counts['mismatch']}, "
              f"refused {counts['refused']}, invalid {counts['invalid']}, "
              f"crashes {counts['crash']}, tool errors {counts['tool-error']}")
        return 1 if counts["mismatch"] or counts["crash"] or counts["tool-error"] else 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
