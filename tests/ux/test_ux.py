#!/usr/bin/env python3
"""The compiler's user-facing extras: machine-readable diagnostics against their schemas, the
metadata JSON, make depfiles, stage dumps, the compile cache, reproducible outputs, and the help
text and man page generated from one flag table.

usage: test_ux.py WAVEC SOURCE_DIR
Prints one line per failed check and a closing 'N passed, N failed' line."""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    # Debian's python3-jsonschema, when the interpreter running this is not Debian's python3.
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import jsonschema
    except ImportError:
        print("FAIL: python3-jsonschema is missing (scripts/install-deps.sh installs it)")
        sys.exit(1)

WAVEC, ROOT = sys.argv[1], sys.argv[2]
SCHEMAS = os.path.join(ROOT, "docs", "schemas")
COPY = os.path.join(ROOT, "samples", "copy", "copy.wave")
ELEMENTWISE = os.path.join(ROOT, "samples", "elementwise", "elementwise.wave")
passed, failures = 0, []


def run(args, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    full_env.update(env or {})
    return subprocess.run([WAVEC] + args, capture_output=True, text=True, env=full_env, cwd=cwd)


def run_bytes(args, cwd=None):
    return subprocess.run([WAVEC] + args, capture_output=True, cwd=cwd)


def expect(name, cond, proc=None):
    global passed
    if cond:
        passed += 1
        return
    detail = ""
    if proc is not None:
        detail = f"\n  exit {proc.returncode}\n  stdout: {str(proc.stdout)[:1500]}\n  stderr: {str(proc.stderr)[:1500]}"
    failures.append(name + detail)


def schema(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


def valid(instance, sch):
    try:
        jsonschema.validate(instance, sch, format_checker=jsonschema.FormatChecker())
        return True, ""
    except jsonschema.ValidationError as e:
        return False, e.message


tmp = tempfile.mkdtemp(prefix="wavec-ux-")
cache = os.path.join(tmp, "cache")
os.environ["WAVEC_CACHE_DIR"] = cache  # never the user's cache

# ---- diagnostics: JSON lines and SARIF for every golden bad input -------------------------
diag_schema, sarif_schema = schema("diagnostic.schema.json"), schema("sarif-2.1.0-subset.schema.json")
checked = 0
for src in sorted(glob.glob(os.path.join(ROOT, "tests", "diagnostics", "*.wave"))):
    args = []
    for line in open(src):
        m = re.match(r"\s*#\s*ARGS:\s?(.*)$", line)
        if m:
            args += shlex.split(m.group(1))
    name = os.path.basename(src)
    text = run([src, "--check", "--color=never"] + args)
    js = run([src, "--check"] + args + ["--diagnostics-format=json"])
    sarif = run([src, "--check"] + args + ["--diagnostics-format=sarif"])
    expect(f"{name}: the exit code does not depend on the format",
           text.returncode == js.returncode == sarif.returncode, js)
    try:
        objs = [json.loads(l) for l in js.stderr.splitlines()]
    except json.JSONDecodeError as e:
        expect(f"{name}: --diagnostics-format=json writes one JSON object per line ({e})", False, js)
        continue
    for o in objs:
        ok, why = valid(o, diag_schema)
        expect(f"{name}: JSON diagnostic validates: {why}", ok, js)
    # The same diagnostics as the text output: every "file:line:col: severity: message [id]".
    text_ids = re.findall(r"^(?:\S+?):(\d+):(\d+): (?:error|warning|fatal error): .* \[([a-z0-9-]+)\]$",
                          text.stderr, re.M)
    json_ids = [(str(o["line"]), str(o["column"]), o["id"]) for o in objs if o["line"]]
    expect(f"{name}: JSON has the text output's located diagnostics", text_ids == json_ids,
           (text, js))
    expect(f"{name}: JSON counts the same diagnostics as text",
           len(objs) == len(re.findall(r"(?:error|warning|fatal error): .* \[[a-z0-9-]+\]$", text.stderr, re.M)), js)
    try:
        log = json.loads(sarif.stderr)
    except json.JSONDecodeError as e:
        expect(f"{name}: SARIF output is one JSON document ({e})", False, sarif)
        continue
    ok, why = valid(log, sarif_schema)
    expect(f"{name}: SARIF validates: {why}", ok, sarif)
    results = log["runs"][0]["results"]
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    expect(f"{name}: SARIF has one result per diagnostic", len(results) == len(objs), sarif)
    expect(f"{name}: every SARIF ruleIndex names its ruleId",
           all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results), sarif)
    checked += 1
expect("the golden bad inputs were all checked in JSON and SARIF", checked >= 100)

p = run([os.path.join(tmp, "missing.wave"), "--check", "--diagnostics-format=json"])
o = json.loads(p.stderr.splitlines()[0]) if p.stderr else {}
expect("an unreadable file is a JSON diagnostic without a location",
       p.returncode == 1 and o.get("id") == "cannot-open-file" and o.get("line") == 0 and valid(o, diag_schema)[0], p)
bad_notes = os.path.join(tmp, "notes.wave")
with open(bad_notes, "w") as f:
    f.write('symbol M;\nkernel k(a: Memory[M, global, f16], b: Memory[M, global, f16]) {\n'
            '  constraints { workgroup(M, 64, dim = 0); workgroup(M, 64, dim = 0); wave(M, 64); }\n'
            '  write(read(a), b);\n}\n')
p = run([bad_notes, "--check", "--diagnostics-format=json"])
objs = [json.loads(l) for l in p.stderr.splitlines()]
expect("notes travel inside their diagnostic in JSON",
       any(o["notes"] and all(n["severity"] == "note" for n in o["notes"]) for o in objs), p)
p = run(["--diagnostics-format=xml", COPY])
expect("a bad --diagnostics-format is a usage error", p.returncode == 2 and "xml" in p.stderr, p)

# ---- colour aliases --------------------------------------------------------------------------
bad = os.path.join(tmp, "bad.wave")
with open(bad, "w") as f:
    f.write("symbol M;\nkernel k(a: Memory[M, global, f16]) {\n  constraints { workgroup(M, 64, dim = 0); wave(M, 64); }\n  write(read(a), b);\n}\n")
p = run([bad, "--check", "-fcolor-diagnostics"])
expect("-fcolor-diagnostics colours", "\033[" in p.stderr, p)
p = run([bad, "--check", "--color=always", "-fno-color-diagnostics"])
expect("-fno-color-diagnostics does not (the last flag wins)", "\033[" not in p.stderr and p.returncode == 1, p)

# ---- metadata ----------------------------------------------------------------------------
meta_schema = schema("metadata.schema.json")
for target in ("gfx942", "sm_90"):
    p = run([ELEMENTWISE, "--emit=metadata", f"--target={target}"])
    try:
        meta = json.loads(p.stdout)
    except json.JSONDecodeError:
        meta = None
    expect(f"--emit=metadata for {target} is JSON", meta is not None, p)
    if meta:
        ok, why = valid(meta, meta_schema)
        expect(f"metadata validates against its schema: {why}", ok, p)
        k = meta["kernels"][0]
        args = {a["name"]: a for a in k["arguments"]}
        expect("metadata: target and kernel", meta["target"] == target and k["name"] == "elementwise", p)
        expect("metadata: arguments in ABI order with offsets and sizes",
               [a["name"] for a in k["arguments"]] == ["a", "b", "alpha", "c", "M", "N"]
               and args["alpha"]["kind"] == "scalar" and args["alpha"]["size"] == 4
               and args["c"]["output"] and args["M"]["kind"] == "dim"
               and all(a["offset"] % a["align"] == 0 for a in k["arguments"])
               and k["kernarg_size"] >= args["N"]["offset"] + 8, p)
        expect("metadata: grid formulas in the dynamic symbols",
               k["grid"][0] == "ceildiv(N, 256)" and k["grid"][1] == "ceildiv(M, 4)"
               and k["dynamic_symbols"] == ["M", "N"], p)
        expect("metadata: block = waves × wave size",
               k["block"][0] == k["waves_per_block"][0] * k["wave_size"], p)
gemm = os.path.join(ROOT, "samples", "gemm", "gemm.wave")
p = run([gemm, "--emit=metadata"])
meta = json.loads(p.stdout) if p.returncode == 0 else None
# The GEMM sample on gfx942: 2 tiles of 64 x 32 f16 (XOR layout, no padding) in 2 buffers each
# (the register prefetch into the next buffer, src/passes/schedule.cpp) = 16384 bytes, read
# from the code object, as are its registers (MFMA accumulators in AGPRs).
expect("metadata of the GEMM sample validates and reports the code object's LDS and registers",
       meta is not None and valid(meta, meta_schema)[0] and meta["kernels"][0]["lds_bytes"] == 16384
       and meta["kernels"][0]["registers"]["vgprs"] > 0
       and meta["kernels"][0]["registers"]["scratch_bytes"] == 0
       and meta["kernels"][0]["assumptions"], p)
# Its static figures: 8 MFMAs per trip of the K loop (64 x 64 tile, 2 x 2 waves of 32 x 32 in
# 16 x 16 x 16 instructions: 2 x 2 per wave and 2 K steps of 16 in BLOCK_K = 32), and occupancy
# by the CU's limits from the same registers and LDS (4 waves per workgroup, no more than 32
# waves per CU, 65536 / 16384 = 4 workgroups by LDS).
occ = meta["kernels"][0]["occupancy"] if meta else None
expect("metadata of the GEMM sample: MFMAs per loop trip and occupancy by the CU's limits",
       meta is not None and meta["kernels"][0]["loop_matrix_ops"] == [8] and occ is not None
       and occ["unit"] == "CU" and occ["max_waves"] == 32 and occ["by_lds"] == 4
       and occ["by_waves"] == 8 and occ["waves"] == 4 * occ["workgroups"]
       and occ["workgroups"] == min(occ["by_waves"], occ["by_lds"], occ["by_registers"]), p)
p = run([ELEMENTWISE, "--emit=metadata", "--target=gfx942"])
meta = json.loads(p.stdout) if p.returncode == 0 else None
expect("metadata of a kernel without loops: no loop figures, occupancy without an LDS limit",
       meta is not None and meta["kernels"][0]["loop_matrix_ops"] == []
       and meta["kernels"][0]["occupancy"]["by_lds"] is None, p)
p = run([gemm, "-o", os.path.join(tmp, "g.hsaco"), "--header", os.path.join(tmp, "g.h"),
         "--stub", os.path.join(tmp, "g.c")])
stub = open(os.path.join(tmp, "g.c")).read() if p.returncode == 0 else ""
expect("NAME_info() of the GEMM stub carries the same shared bytes",
       re.search(r'gemm_info_0_ = \{"gemm", [^;]*\}, 16384, ', stub) is not None, p)
ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                  if os.access("/usr/local/cuda/bin/ptxas", os.X_OK) else None)
p = run([os.path.join(ROOT, "samples", "gemm", "gemm_portable.wave"), "--target=sm_90",
         "--emit=metadata"])
meta = json.loads(p.stdout) if p.returncode == 0 else None
regs = meta["kernels"][0]["registers"]["registers"] if meta else None
expect("sm_90 metadata: shared bytes of the PTX, registers from ptxas -v when it is installed",
       meta is not None and valid(meta, meta_schema)[0] and meta["kernels"][0]["lds_bytes"] > 0
       and ((regs is not None and regs > 0) if ptxas else regs is None), p)

# ---- depfiles ----------------------------------------------------------------------------
d = os.path.join(tmp, "dep")
os.mkdir(d)
p = run([COPY, "--target=sm_90", "-o", "copy.ptx", "--header", "copy.h", "--stub", "copy.c", "-MD"], cwd=d)
dep = open(os.path.join(d, "copy.d")).read() if os.path.exists(os.path.join(d, "copy.d")) else ""
expect("-MD writes OUTPUT.d naming every output and the source",
       p.returncode == 0 and dep == f"copy.ptx copy.h copy.c: {COPY}\n", p)
p = run([COPY, "--target=sm_90", "-o", "copy.ptx", "-MF", "deps/x.dep", "-MT", "my target", "-MT", "$(OBJ)", "-MP"], cwd=d)
expect("-MF into a missing directory fails plainly, writing nothing", p.returncode == 1 and "cannot-write-file" in p.stderr, p)
os.mkdir(os.path.join(d, "deps"))
p = run([COPY, "--target=sm_90", "-o", "copy.ptx", "-MFdeps/x.dep", "-MT", "$(OBJ)", "-MP"], cwd=d)
dep = open(os.path.join(d, "deps", "x.dep")).read() if p.returncode == 0 else ""
expect("-MF/-MT name the file and the target verbatim", dep.startswith(f"$(OBJ): {COPY}\n"), p)
expect("-MP adds no phony rule for the input itself", dep.count(":") == 1, p)
spaced = os.path.join(tmp, "dir with space#1")
os.mkdir(spaced)
src = os.path.join(spaced, "k$.wave")
open(src, "w").write(open(COPY).read())
p = run([src, "--check", "-DNOPE=1", "--diagnostics-format=sarif"])
uris = re.findall(r'"uri":"([^"]*)"', p.stderr)
expect("SARIF artifact URIs are percent-encoded file:// URIs",
       uris and all(re.fullmatch(r"file:///[A-Za-z0-9\-._~/%]+", u) for u in uris) and "%20" in uris[0]
       and "%23" in uris[0] and "%24" in uris[0], p)
p = run([src, "--emit=ir", "-o", "out.txt", "-MD"], cwd=d)
dep = open(os.path.join(d, "out.d")).read() if p.returncode == 0 else ""
expect("depfile paths escape spaces, # and $ for make",
       dep == "out.txt: " + src.replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$") + "\n", p)
p = run([COPY, "--emit=ir", "-MD"], cwd=d)
expect("-MD of a dump to stdout without -MT is an error", p.returncode == 1 and "[depfile-target]" in p.stderr, p)
p = run([COPY, "-MP", "--emit=ir"], cwd=d)
expect("-MP without -MD is a usage error", p.returncode == 2, p)
before = set(os.listdir(d))
p = run([bad, "-o", "bad.ptx", "--target=sm_90", "-MD"], cwd=d)
expect("a failed compilation writes no depfile", p.returncode == 1 and set(os.listdir(d)) == before, p)

# ---- stage dumps and timing --------------------------------------------------------------
p = run([COPY, "--emit=ir", "--print-ir-after=distribute"])
expect("--print-ir-after=distribute prints the distribution to stderr",
       p.returncode == 0 and "after distribute" in p.stderr and "grid" in p.stderr and "after sema" not in p.stderr, p)
p = run([COPY, "--emit=ir", "--print-ir-after=lowering"])
expect("--print-ir-after of an unknown stage is a usage error", p.returncode == 2, p)
dd = os.path.join(tmp, "dumps")
p = run([COPY, "--target=sm_90", "-o", os.path.join(tmp, "d.ptx"), "--dump-dir", dd, "--no-cache"])
names = sorted(os.listdir(dd)) if os.path.isdir(dd) else []
expect("--dump-dir writes every pass of a code compilation, numbered as --list-passes lists them",
       set(names) == {"copy.1-parse.ast.txt", "copy.2-sema.ir.txt", "copy.3-size-limits.sizes.txt",
                      "copy.4-distribute.distribution.txt", "copy.5-unroll-limits.unroll.txt",
                      "copy.6-legalize.legalize.txt",
                      "copy.7-promotion.promotion.txt", "copy.8-cooperative-copies.copies.txt",
                      "copy.9-schedule.schedule.txt", "copy.10-carried-shapes.carried.txt",
                      "copy.11-emit.emit.txt", "copy.12-shared-memory-plan.smem.txt",
                      "copy.13-barrier-insertion.barriers.txt",
                      "copy.14-mlir.mlir", "copy.15-llvm.ll", "copy.16-asm.s"}, p)
if names:
    expect("the asm dump is the PTX written", open(os.path.join(dd, "copy.16-asm.s")).read() == open(os.path.join(tmp, "d.ptx")).read())
    expect("the mlir dump is a gpu.module", "gpu.module" in open(os.path.join(dd, "copy.14-mlir.mlir")).read())
p = run([COPY, "--print-ir-after-all", "--emit=mlir", "--no-cache"])
expect("--print-ir-after-all stops at the requested output",
       all(f"after {s} -----" in p.stderr for s in ("parse", "sema", "distribute", "legalize", "mlir")) and "after llvm" not in p.stderr, p)
p = run([COPY, "--target=sm_90", "-o", os.path.join(tmp, "t.ptx"), "--time-passes", "--no-cache"])
expect("--time-passes reports the passes and the code generator's steps",
       p.returncode == 0 and all(s in p.stderr for s in ("parse", "size-limits", "distribute", "unroll-limits", "legalize", "plan and emit", "code generation", "LLVM optimization", "total")), p)

# ---- compile cache -----------------------------------------------------------------------
cd = os.path.join(tmp, "cc")
out1, out2 = os.path.join(tmp, "c1.ptx"), os.path.join(tmp, "c2.ptx")
p = run([ELEMENTWISE, "--target=sm_90", "-o", out1, "--cache-dir", cd])
entries = [os.path.join(r, f) for r, _, fs in os.walk(cd) for f in fs]
expect("a compilation stores one cache entry", p.returncode == 0 and len(entries) == 1, p)
p2 = run([ELEMENTWISE, "--target=sm_90", "-o", out2, "--cache-dir", cd, "--time-passes"])
expect("the second compilation is a cache hit (no code generator) with identical bytes",
       p2.returncode == 0 and "code generation" not in p2.stderr and open(out1, "rb").read() == open(out2, "rb").read(), p2)
p = run([ELEMENTWISE, "--target=sm_90", "-o", out2, "--cache-dir", cd, "-DN=1024"])
entries = [os.path.join(r, f) for r, _, fs in os.walk(cd) for f in fs]
expect("a different -D binding is a different entry", p.returncode == 0 and len(entries) == 2, p)
p = run([ELEMENTWISE, "--target=sm_90", "-O1", "-o", out2, "--cache-dir", cd])
entries = [os.path.join(r, f) for r, _, fs in os.walk(cd) for f in fs]
expect("a different -O level is a different entry", p.returncode == 0 and len(entries) == 3, p)
for e in entries:  # corrupt every entry: flip payload bytes, keep the header
    data = bytearray(open(e, "rb").read())
    data[-10] ^= 0xFF
    open(e, "wb").write(bytes(data))
p = run([ELEMENTWISE, "--target=sm_90", "-o", out2, "--cache-dir", cd, "--time-passes"])
expect("a corrupt cache entry is ignored: the code is generated again, correctly",
       p.returncode == 0 and "code generation" in p.stderr and open(out1, "rb").read() == open(out2, "rb").read(), p)
p = run([ELEMENTWISE, "--target=sm_90", "-o", out2, "--cache-dir", cd, "--time-passes"])
expect("... and replaced by a good one", "code generation" not in p.stderr and open(out1, "rb").read() == open(out2, "rb").read(), p)
for e in [os.path.join(r, f) for r, _, fs in os.walk(cd) for f in fs]:
    open(e, "wb").write(b"wavec-cache 1 5 zz\nhello")
p = run([ELEMENTWISE, "--target=sm_90", "-o", out2, "--cache-dir", cd])
expect("a truncated/garbled entry is ignored too", p.returncode == 0 and open(out1, "rb").read() == open(out2, "rb").read(), p)
expect("no temporary files stay in the cache",
       not [f for r, _, fs in os.walk(cd) for f in fs if f.startswith(".tmp")])
nc = os.path.join(tmp, "nocache")
p = run([ELEMENTWISE, "--target=sm_90", "-o", out2, "--no-cache"], env={"WAVEC_CACHE_DIR": nc})
expect("--no-cache writes no cache", p.returncode == 0 and not os.path.exists(nc), p)
p = run([ELEMENTWISE, "--target=sm_90", "-o", out2], env={"WAVEC_CACHE_DIR": nc})
expect("WAVEC_CACHE_DIR is the default cache directory", p.returncode == 0 and os.path.isdir(nc), p)
xdg = os.path.join(tmp, "xdg")
env = {"XDG_CACHE_HOME": xdg}
full_env = dict(os.environ, **env)
full_env.pop("WAVEC_CACHE_DIR")
p = subprocess.run([WAVEC, ELEMENTWISE, "--target=sm_90", "-o", out2], capture_output=True, text=True, env=full_env)
expect("without WAVEC_CACHE_DIR the cache is $XDG_CACHE_HOME/wavec", p.returncode == 0 and os.path.isdir(os.path.join(xdg, "wavec")), p)

# ---- reproducible outputs ----------------------------------------------------------------
outs = []
for i in range(2):
    od = os.path.join(tmp, f"repro{i}")
    os.mkdir(od)
    p = run_bytes([ELEMENTWISE, "--target=sm_90", "-o", "k.ptx", "--header", "k.h", "--stub", "k.c",
                   "-MD", "-MP", "--no-cache"], cwd=od)
    p2 = run_bytes([ELEMENTWISE, "--emit=metadata", "-o", "k.json"], cwd=od)
    outs.append({n: open(os.path.join(od, n), "rb").read() for n in sorted(os.listdir(od))})
expect("two compilations give byte-identical code object, header, stub, depfile and metadata",
       outs[0] == outs[1] and sorted(outs[0]) == ["k.c", "k.d", "k.h", "k.json", "k.ptx"])

# ---- the help text and the man page come from one table -----------------------------------
p = run(["--help"])
help_flags = re.findall(r"^  (-{1,2}[A-Za-z][A-Za-z0-9-]*)", p.stdout, re.M)
expect("--help lists the flags", p.returncode == 0 and len(help_flags) >= 30, p)
for flag in ["-MD", "-MF", "-MT", "-MP", "--diagnostics-format", "-fcolor-diagnostics",
             "-fno-color-diagnostics", "--print-ir-after-all", "--print-ir-after", "--dump-dir",
             "--cache-dir", "--no-cache", "--time-passes", "--emit", "--header", "--stub"]:
    expect(f"--help lists {flag}", flag in help_flags, p)
man = run(["--help-man"]).stdout
committed = open(os.path.join(ROOT, "docs", "wavec.1")).read()
expect("docs/wavec.1 is what `wavec --help-man` generates (regenerate it: wavec --help-man > docs/wavec.1)",
       man == committed)
man_flags = [f.replace("\\-", "-") for f in re.findall(r"^\\fB((?:\\-)+[A-Za-z][A-Za-z0-9\\-]*?)\\fR", committed, re.M)]
expect("the man page lists every flag of --help", sorted(help_flags) == sorted(man_flags),
       subprocess.CompletedProcess([], 0, str(sorted(help_flags)), str(sorted(man_flags))))
guide = open(os.path.join(ROOT, "docs", "user-guide.md")).read()
missing = [f for f in help_flags if f not in guide]
expect(f"docs/user-guide.md describes every flag of --help (missing: {missing})", not missing)
p = run([COPY, "--check", "--target=gfx942,sm_90", "--target", "gfx90a"])
expect("--target repeated and comma-separated checks every target", p.returncode == 0, p)
p = run([COPY, "--check", "--target=gfx942,sm_90", "--target=gfx942"])
expect("a target given twice is a usage error", p.returncode == 2 and "twice" in p.stderr, p)
p = run([COPY, "--target=gfx942,sm_90", "-o", os.path.join(tmp, "x.hsaco")])
expect("several targets without --header/--stub (or with -o) is a usage error", p.returncode == 2, p)
p = run([COPY, "--emitt=ir"])
expect("an unknown flag is a usage error with a hint", p.returncode == 2 and "did you mean '--emit'" in p.stderr, p)
p = run([COPY, "-o"])
expect("a flag without its value is a usage error", p.returncode == 2 and "-o" in p.stderr, p)
p = run([COPY, "--check=yes"])
expect("a switch with a value is a usage error", p.returncode == 2, p)
p = run([COPY, "--emit", "ir", "-o", "-", "-DBLOCK_M=16"])
expect("separate values (--emit ir) and joined -D work", p.returncode == 0 and "kernel" in p.stdout, p)

# -v: what the run does, on stderr, before it does it; the outputs are the same as without it.
p = run(["-v", COPY, "--target=sm_90", "-DBLOCK_N=128", "-o", os.path.join(tmp, "v.ptx"),
         "--header", os.path.join(tmp, "v.h"), "--stub", os.path.join(tmp, "v.c")])
expect("-v states the version, inputs, targets, bindings, outputs, cache and code generator",
       p.returncode == 0 and p.stderr.startswith("wavec ") and "targets: sm_90" in p.stderr
       and "-DBLOCK_N=128" in p.stderr and "--header " + os.path.join(tmp, "v.h") in p.stderr
       and "compile cache:" in p.stderr and "libwavec_codegen.so" in p.stderr
       and "programs run: none" in p.stderr and os.path.exists(os.path.join(tmp, "v.ptx")), p)
p = run(["-v", COPY, "--check"])
expect("-v with --check says nothing is written", p.returncode == 0 and "outputs: none (--check)" in p.stderr, p)

for f in failures:
    print("FAIL:", f)
print(f"{passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
