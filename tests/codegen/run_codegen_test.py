#!/usr/bin/env python3
"""Code generator checks on real outputs (HSACO, ISA, PTX, cubin), one named test per run:

  run_codegen_test.py --wavec WAVEC --tools LLVM_BIN --source-dir ROOT TEST

Exit 0 = pass, 1 = fail, 77 = skipped (a tool is missing; CTest's SKIP_RETURN_CODE)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
TARGETS = ["gfx942", "gfx90a", "gfx1100", "sm_80", "sm_90", "sm_90a"]
PTXAS = "/usr/local/cuda/bin/ptxas"


class Failure(Exception):
    pass


def run(cmd, ok=True):
    p = subprocess.run(cmd, capture_output=True, timeout=300)
    if ok and p.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr.decode(errors='replace')}")
    return p


def check(cond, what, detail=""):
    if not cond:
        raise Failure(what + ("\n" + detail[:4000] if detail else ""))
    print("ok:", what)


def test_hsaco_metadata(a, tmp):
    out = os.path.join(tmp, "copy.hsaco")
    run([a.wavec, a.copy, "-o", out])
    text = run([a.readelf, "--notes", "--symbols", out]).stdout.decode()
    check(re.search(r"FUNC\s+GLOBAL\s+\w+\s+\d+\s+copy$", text, re.M), "symbol copy (FUNC)", text)
    check(re.search(r"OBJECT\s+GLOBAL\s+\w+\s+\d+\s+copy\.kd$", text, re.M), "descriptor copy.kd",
          text)
    # copy(a, b, M, N): two pointers and two i64 dims = 32 bytes of explicit arguments.
    check(re.search(r"\.kernarg_segment_size:\s+(32|288)\b", text), "kernarg size", text)
    check(".wavefront_size: 64" in text, ".wavefront_size: 64", text)
    check(re.search(r"\.group_segment_fixed_size:\s+0", text), ".group_segment_fixed_size", text)
    check(re.search(r"\.private_segment_fixed_size:\s+0", text), "no scratch", text)
    check(re.search(r"\.max_flat_workgroup_size:\s+64\b", text), "max flat workgroup size = block",
          text)
    check("amdgcn-amd-amdhsa--gfx942" in text, "target gfx942", text)
    # The .wave locations feed the emulator image; without -g no debug info reaches the HSACO.
    sections = run([a.readelf, "-S", out]).stdout.decode()
    check(".text" in sections and ".debug" not in sections, "no .debug_* sections", sections)
    ptx = run([a.wavec, a.copy, "--target=sm_90", "--emit=ptx"]).stdout.decode()
    check(".version" in ptx and ".loc" not in ptx and ".file" not in ptx, "no line info in PTX",
          ptx[:2000])
    # -g keeps them: DWARF line rows of copy.wave's `write` (line 12) in the HSACO, .loc in PTX.
    gout = os.path.join(tmp, "copy_g.hsaco")
    run([a.wavec, a.copy, "-g", "--no-cache", "-o", gout])
    lines = run([a.dwarfdump, "--debug-line", gout]).stdout.decode()
    check('name: "copy.wave"' in lines and re.search(r"^0x[0-9a-f]+\s+12\s+\d+\s", lines, re.M),
          "-g: DWARF line table of copy.wave in the HSACO", lines)
    gptx = run([a.wavec, a.copy, "-g", "--no-cache", "--target=sm_90", "--emit=ptx"]).stdout.decode()
    check(re.search(r'\.file\s+\d+\s+"[^"]*copy\.wave"', gptx) and
          re.search(r"\.loc\s+\d+\s+12\s+\d+", gptx), "-g: .file/.loc of copy.wave in PTX",
          gptx[:3000])
    # gfx1100 runs wave32 by default and wave64 when the kernel asks for it.
    for src, wave in ((a.copy, 32),
                      (os.path.join(a.source_dir, "tests", "codegen", "inputs", "copy_wave64.wave"), 64)):
        run([a.wavec, src, "--target=gfx1100", "-o", out])
        text = run([a.readelf, "--notes", out]).stdout.decode()
        check(f".wavefront_size: {wave}" in text and
              re.search(rf"\.max_flat_workgroup_size:\s+{wave}\b", text),
              f"gfx1100 {os.path.basename(src)}: wave{wave}", text)


def test_gfx942_wide_access(a, tmp):
    src = os.path.join(a.source_dir, "tests", "codegen", "inputs", "copy_f16_wide.wave")
    asm = run([a.wavec, src, "-DN=4096", "--emit=asm"]).stdout.decode()
    check(re.search(r"\b(global|buffer)_load_dwordx4\b", asm), "128-bit loads", asm)
    check(re.search(r"\b(global|buffer)_store_dwordx4\b", asm), "128-bit stores", asm)
    check(not re.search(r"\bglobal_load_(ushort|short_d16|dword)\b", asm),
          "no narrow loads when N is aligned", asm)
    check(not re.search(r"\bscratch_", asm) and
          re.search(r"\.amdhsa_private_segment_fixed_size\s+0\b", asm), "no scratch", asm)
    # N dynamic: the masked accesses go through buffer instructions (128-bit ones for the
    # vectors; the ragged row ends element by element), each descriptor with its family's
    # word 3 (docs/hardware.md 2.4); no plain global access and no scratch remain.
    for target, wide_load, wide_store, word3 in (
            ("gfx942", "buffer_load_dwordx4", "buffer_store_dwordx4", "0x27000"),
            ("gfx90a", "buffer_load_dwordx4", "buffer_store_dwordx4", "0x27000"),
            ("gfx1100", "buffer_load_b128", "buffer_store_b128", "0x31027000")):
        asm = run([a.wavec, src, f"--target={target}", "--emit=asm"]).stdout.decode()
        check(re.search(rf"\b{wide_load}\b", asm) and re.search(rf"\b{wide_store}\b", asm),
              f"{target}, N dynamic: 128-bit buffer loads and stores", asm)
        check(re.search(rf"s_mov_b32\s+s\d+, {word3}\b", asm),
              f"{target}: buffer descriptor word 3 {word3}", asm)
        check(not re.search(r"\bglobal_(load|store)", asm), f"{target}: no plain global access",
              asm)
        check(not re.search(r"\bscratch_", asm) and
              re.search(r"\.amdhsa_private_segment_fixed_size\s+0\b", asm),
              f"{target}: no scratch", asm)


def test_code_object_version(a, tmp):
    for flag, abi in ((["--code-object-version=4"], "2"), ([], "3"), (["--code-object-version=5"], "3")):
        out = os.path.join(tmp, "copy.hsaco")
        run([a.wavec, a.copy, "-o", out, "--target=gfx90a"] + flag)
        text = run([a.readelf, "-h", out]).stdout.decode()
        check(re.search(r"ABI Version:\s+" + abi + r"\b", text), f"{flag or 'default'}: ABI version {abi}",
              text)
    p = run([a.wavec, a.copy, "-o", os.path.join(tmp, "x.hsaco"), "--code-object-version=6"], ok=False)
    check(p.returncode == 2, "--code-object-version=6 is a usage error")


def test_comgr_gfx90a_v4(a, tmp):
    # Debian's comgr (ROCm 5.2) reads code object v4 (and rejects v5): the ISA name and the
    # kernel metadata of a gfx90a build must come through it.
    import ctypes
    try:
        comgr = ctypes.CDLL("libamd_comgr.so.2")
    except OSError:
        print("SKIPPED: libamd_comgr.so.2 is not installed")
        return SKIP

    class Handle(ctypes.Structure):
        _fields_ = [("handle", ctypes.c_uint64)]

    def ok(status, what):
        if status != 0:
            raise Failure(f"comgr {what} failed with status {status}")

    def string_of(getter, node):
        size = ctypes.c_size_t(0)
        ok(getter(node, ctypes.byref(size), None), "size query")
        buf = ctypes.create_string_buffer(size.value)
        ok(getter(node, ctypes.byref(size), buf), "string query")
        return buf.value.decode()

    out = os.path.join(tmp, "copy.hsaco")
    run([a.wavec, a.copy, "--target=gfx90a", "--code-object-version=4", "-o", out])
    blob = open(out, "rb").read()
    data = Handle()
    ok(comgr.amd_comgr_create_data(8, ctypes.byref(data)), "create_data")  # EXECUTABLE
    ok(comgr.amd_comgr_set_data(data, ctypes.c_size_t(len(blob)), blob), "set_data")
    isa = string_of(comgr.amd_comgr_get_data_isa_name, data)
    check(isa.startswith("amdgcn-amd-amdhsa--gfx90a"), f"comgr ISA name {isa}")
    meta, kernels, kernel, name = Handle(), Handle(), Handle(), Handle()
    ok(comgr.amd_comgr_get_data_metadata(data, ctypes.byref(meta)), "get_data_metadata")
    ok(comgr.amd_comgr_metadata_lookup(meta, b"amdhsa.kernels", ctypes.byref(kernels)), "lookup")
    n = ctypes.c_size_t(0)
    ok(comgr.amd_comgr_get_metadata_list_size(kernels, ctypes.byref(n)), "list size")
    check(n.value == 1, "one kernel in the metadata")
    ok(comgr.amd_comgr_index_list_metadata(kernels, ctypes.c_size_t(0), ctypes.byref(kernel)),
       "index")
    ok(comgr.amd_comgr_metadata_lookup(kernel, b".name", ctypes.byref(name)), "lookup .name")
    check(string_of(comgr.amd_comgr_get_metadata_string, name) == "copy",
          "comgr reads the kernel name")


def test_ptx_sm90(a, tmp):
    out = os.path.join(tmp, "copy.ptx")
    run([a.wavec, a.copy, "--target=sm_90", "-o", out])
    ptx = open(out).read()
    check(re.search(r"\.entry\s+copy\s*\(", ptx), ".entry copy", ptx)
    check(re.search(r"\.maxntid\s+32,\s*1,\s*1", ptx), ".maxntid = block", ptx)
    check("ld.global.v4" in ptx and "st.global.v4" in ptx, "128-bit accesses", ptx)
    if not os.access(PTXAS, os.X_OK):
        print(f"SKIPPED: {PTXAS} is not installed (the PTX itself was checked)")
        return SKIP
    run([PTXAS, "-arch=sm_90", out, "-o", os.path.join(tmp, "copy.cubin")])
    print("ok: ptxas -arch=sm_90 accepts it")
    cubin = os.path.join(tmp, "copy2.cubin")
    run([a.wavec, a.copy, "--target=sm_90", "-o", cubin])
    check(open(cubin, "rb").read(4) == b"\x7fELF", "--emit=cubin (from -o .cubin) is an ELF file")


def test_all_targets(a, tmp):
    src = os.path.join(a.source_dir, "samples", "elementwise", "elementwise.wave")
    for t in TARGETS:
        out = os.path.join(tmp, "ew_" + t)
        run([a.wavec, src, "--target=" + t, "-o", out])
        check(os.path.getsize(out) > 0, f"elementwise compiles for {t}")
    for name in ("math", "int_ops"):
        src2 = os.path.join(a.source_dir, "tests", "codegen", "inputs", name + ".wave")
        for t in TARGETS:
            run([a.wavec, src2, "--target=" + t, "-o", os.path.join(tmp, name + "_" + t)])
            check(True, f"{name}.wave compiles for {t}")
    for opt in ("-O0", "-O1", "-O2"):
        run([a.wavec, src, opt, "-o", os.path.join(tmp, "ew.hsaco")])
        check(True, f"elementwise compiles at {opt}")
    for t, emit, pattern in (("gfx942", "llvm", r"amdgpu_kernel void @elementwise"),
                             ("sm_90", "llvm", r"nvvm\.annotations|ptx_kernel"),
                             ("gfx942", "asm", r"v_(pk_)?(mul|fma)_f32"),
                             ("sm_90", "asm", r"\.entry elementwise")):
        text = run([a.wavec, src, "--target=" + t, "--emit=" + emit]).stdout.decode()
        check(re.search(pattern, text), f"--emit={emit} for {t} shows {pattern}", text)


def test_unsupported_features(a, tmp):
    # Kernels outside the code generator's scope fail with a located diagnostic and no output.
    # The legalize pass refuses them (each reason its own id); code generation never meets them.
    for sample, what in (("../tests/codegen/inputs/if_statement.wave", "[unsupported-if]"),
                         ("../tests/codegen/inputs/reduce_i1.wave",
                          "i1 values is not supported on gfx942 [unsupported-reduction-type]")):
        out = os.path.join(tmp, "x.hsaco")
        p = run([a.wavec, os.path.join(a.source_dir, "samples", sample), "-o", out,
                 "--color=never"], ok=False)
        err = p.stderr.decode()
        check(p.returncode == 1 and "[codegen-unsupported]" not in err and what in err,
              f"{sample}: {what}", err)
        check(not os.path.exists(out) and not any(f.startswith("x.hsaco") for f in os.listdir(tmp)),
              f"{sample}: no output file")
    # A bf16 reduction, refused on AMD targets until bf16 was computed on in f32 there, compiles.
    out = os.path.join(tmp, "bf16.hsaco")
    run([a.wavec, os.path.join(a.source_dir, "tests", "codegen", "inputs", "reduce_bf16.wave"),
         "-o", out])
    check(os.path.getsize(out) > 0, "a bf16 reduction compiles for gfx942")
    # Promoted tiles that do not fit the target's shared memory: a located error, no output.
    out = os.path.join(tmp, "big.hsaco")
    p = run([a.wavec, os.path.join(a.source_dir, "samples", "gemm", "gemm_portable.wave"),
             "-DBLOCK_M=256", "-DBLOCK_N=256", "-DBLOCK_K=128", "-DWAVE_M=128", "-DWAVE_N=128",
             "-o", out, "--color=never"], ok=False)
    err = p.stderr.decode()
    check(p.returncode == 1 and "135168 bytes of shared memory" in err and "65536" in err and
          not os.path.exists(out), "shared memory over the target's limit is a clean error", err)
    # A wavec without its code generator library says so (and --check still works).
    import shutil
    lonely = os.path.join(tmp, "bin")
    os.mkdir(lonely)
    shutil.copy(a.wavec, lonely)
    alone = os.path.join(lonely, os.path.basename(a.wavec))
    p = run([alone, a.copy, "-o", os.path.join(tmp, "z.hsaco"), "--color=never"], ok=False)
    err = p.stderr.decode()
    check(p.returncode == 1 and "[codegen-unavailable]" in err and "libwavec_codegen.so" in err,
          "a missing libwavec_codegen.so is a clear error", err)
    check(run([alone, a.copy, "--check"], ok=False).returncode == 0, "--check needs no code generator")
    p = run([a.wavec, a.copy, "--target=sm_90", "--emit=hsaco", "-o", os.path.join(tmp, "y")],
            ok=False)
    check(p.returncode == 1 and "[output-kind-target]" in p.stderr.decode(),
          "HSACO for an NVIDIA target is refused")


def gemm_sources(a):
    g = os.path.join(a.source_dir, "samples", "gemm")
    return os.path.join(g, "gemm.wave"), os.path.join(g, "gemm_portable.wave")


def notes(a, path):
    return run([a.readelf, "--notes", path]).stdout.decode()


def test_gemm_gfx942_isa(a, tmp):
    # The GEMM sample (64x64x32 tiles, 2x2 waves, F32_16x16x16_F16) against docs/hardware.md 9.3.
    spec, _ = gemm_sources(a)
    for dims in ([], ["-DM=4096", "-DN=4096", "-DK=4096"]):
        label = "static" if dims else "dynamic"
        out = os.path.join(tmp, "gemm.hsaco")
        run([a.wavec, spec, "-o", out] + dims)
        meta = notes(a, out)
        asm = run([a.wavec, spec, "--emit=asm"] + dims).stdout.decode()
        check(re.search(r"v_mfma_f32_16x16x16_f16", asm), f"{label}: v_mfma_f32_16x16x16_f16", asm)
        check(re.search(r"\.private_segment_fixed_size:\s+0\b", meta), f"{label}: no scratch", meta)
        check(re.search(r"\.vgpr_spill_count:\s+0\b", meta), f"{label}: no VGPR spills", meta)
        check(re.search(r"\.sgpr_spill_count:\s+0\b", meta), f"{label}: no SGPR spills", meta)
        # Two unpadded 64x32 f16 tiles: padded rows (64x(32+4)) conflict on the copy's stores,
        # so the bank model takes the XOR layout (src/passes/lds_layout.cpp); two buffers of
        # each (the register prefetch into the next buffer, src/passes/schedule.cpp).
        check(re.search(r"\.group_segment_fixed_size:\s+16384\b", meta),
              f"{label}: LDS bytes = 2 buffers * 2 * 64 * 32 * 2 = 16384", meta)
        check("global_load_dwordx4" in asm, f"{label}: 128-bit cooperative global loads", asm)
        check(re.search(r"ds_write2?_b(64|128)", asm), f"{label}: wide LDS stores", asm)
        check(re.search(r"ds_read2?_b(64|128)", asm), f"{label}: 64/128-bit LDS reads", asm)
        if dims:  # the dynamic kernel keeps an element-wise path for ragged tiles
            check(not re.search(r"global_load_(ushort|short_d16)", asm),
                  f"{label}: no 16-bit global loads", asm)
        check("s_barrier" in asm, f"{label}: barriers", asm)
    # The 32x32x8 kind and the virtual K8 kind through -DMMA-like kind override on gfx942/gfx90a.
    for t, kind, pattern in (("gfx942", "F32_32x32x8_F16", r"v_mfma_f32_32x32x8_f16"),
                             ("gfx90a", "F32_32x32x8_F16", r"v_mfma_f32_32x32x8f16"),
                             ("gfx942", "F32_16x16x32_K8_F16", r"v_mfma_f32_16x16x16_f16"),
                             ("gfx90a", "F32_16x16x16_F16", r"v_mfma_f32_16x16x16f16")):
        src = os.path.join(tmp, "k.wave")
        open(src, "w").write(open(spec).read().replace("mma = F32_16x16x16_F16", "mma = " + kind))
        asm = run([a.wavec, src, "--target=" + t, "--emit=asm"]).stdout.decode()
        check(re.search(pattern, asm), f"{t} {kind}: {pattern}", asm[:3000])
        out = os.path.join(tmp, "k.hsaco")
        run([a.wavec, src, "--target=" + t, "-o", out])
        meta = notes(a, out)
        check(re.search(r"\.private_segment_fixed_size:\s+0\b", meta) and
              re.search(r"\.vgpr_spill_count:\s+0\b", meta), f"{t} {kind}: no scratch/spills", meta)


def test_gemm_gfx942_tiles(a, tmp):
    # The GEMM sample's larger block tiles on gfx942 (issue 19), no scratch, no spills; their LDS
    # (src/passes/lds_layout.cpp): 128x128x64 unpadded, 2 x 128 x 64 f16 = 32768 bytes (two
    # workgroups per CU, padded one); 256x128x64 padded, 256 x 68 + 128 x 68 f16 = 52224 (one
    # workgroup either way); 256x256x64 unpadded, exactly the 65536 of the CU (69,632 padded).
    spec, _ = gemm_sources(a)
    for (bm, bn, lds) in ((128, 128, 32768), (256, 128, 52224), (256, 256, 65536)):
        label = f"{bm}x{bn}x64"
        out = os.path.join(tmp, "t.hsaco")
        run([a.wavec, spec, "-o", out, f"-DBLOCK_M={bm}", f"-DBLOCK_N={bn}", "-DBLOCK_K=64"])
        meta = notes(a, out)
        check(re.search(r"\.group_segment_fixed_size:\s+%d\b" % lds, meta),
              f"{label}: LDS bytes {lds}", meta)
        check(re.search(r"\.private_segment_fixed_size:\s+0\b", meta) and
              re.search(r"\.vgpr_spill_count:\s+0\b", meta) and
              re.search(r"\.sgpr_spill_count:\s+0\b", meta), f"{label}: no scratch, no spills",
              meta)


def test_mfma_auto_shape(a, tmp):
    # `mma = auto` on CDNA picks the MFMA shape by tile (sema's chooseMfmaKinds, docs/internals.md
    # "MFMA shape"): tests/e2e/kernels/gemm_mfma_auto.wave's cases, whose results the e2e suite
    # checks against the reference. 128x128x64 block, 64x64 wave tiles: 2 x 2 clones of 32x32 x
    # 8 K steps = 32 v_mfma_f32_32x32x8 (16x16 would be 4 x 4 x 4 = 64); 32x32 blocks with 16x16
    # wave tiles keep 16x16x16. An explicit kind is kept whatever the tile; chained products
    # (attention: the keys are one product's N and the other's K) keep 16x16.
    src = os.path.join(a.source_dir, "tests", "e2e", "kernels", "gemm_mfma_auto.wave")
    wide = ["-DBLOCK_M=128", "-DBLOCK_N=128", "-DBLOCK_K=64"]
    small = ["-DBLOCK_M=32", "-DBLOCK_N=32"]
    for t, w, n in (("gfx942", "v_mfma_f32_32x32x8_f16", "v_mfma_f32_16x16x16_f16"),
                    ("gfx90a", "v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x16f16")):
        asm = run([a.wavec, src, "--target=" + t, "--emit=asm"] + wide).stdout.decode()
        check(asm.count(w) == 32 and n not in asm,
              f"{t} 64x64 wave tiles: 32 x {w}, no {n} (found {asm.count(w)} / {asm.count(n)})",
              asm[:3000])
        out = os.path.join(tmp, "auto.hsaco")
        run([a.wavec, src, "--target=" + t, "-o", out] + wide)
        meta = notes(a, out)
        check(re.search(r"\.private_segment_fixed_size:\s+0\b", meta) and
              re.search(r"\.vgpr_spill_count:\s+0\b", meta), f"{t} 32x32 kind: no scratch/spills",
              meta)
        asm = run([a.wavec, src, "--target=" + t, "--emit=asm"]).stdout.decode()
        check(w in asm and n not in asm, f"{t} 32x32 wave tiles: {w}", asm[:3000])
        asm = run([a.wavec, src, "--target=" + t, "--emit=asm"] + small).stdout.decode()
        check(n in asm and w not in asm, f"{t} 16x16 wave tiles: {n}, no {w}", asm[:3000])
    spec, _ = gemm_sources(a)  # mma = F32_16x16x16_F16 given: kept at 64x64 wave tiles
    asm = run([a.wavec, spec, "--emit=asm"] + wide).stdout.decode()
    check(asm.count("v_mfma_f32_16x16x16_f16") == 64 and "32x32x8" not in asm,
          "explicit F32_16x16x16_F16 kept: 64 x v_mfma_f32_16x16x16_f16", asm[:3000])
    att = os.path.join(a.source_dir, "samples", "attention", "attention.wave")
    asm = run([a.wavec, att, "--target=gfx942", "--emit=asm"]).stdout.decode()
    check("v_mfma_f32_16x16x16_f16" in asm and "32x32" not in asm,
          "attention (chained products) keeps 16x16x16", asm[:3000])
    # i8 on gfx942: I32_16x16x32_I8 -> I32_32x32x16_I8 (same operand registers per lane).
    body = open(src).read().replace("f16]", "i8]").replace("global, f32]", "global, i32]")
    body = body.replace("Register[M, N, f32](0.0)", "Register[M, N, i32](0)")
    i8 = os.path.join(tmp, "auto_i8.wave")
    open(i8, "w").write(body)
    asm = run([a.wavec, i8, "--target=gfx942", "--emit=asm"] + wide).stdout.decode()
    check("v_mfma_i32_32x32x16_i8" in asm and "v_mfma_i32_16x16x32_i8" not in asm,
          "gfx942 i8, 64x64 wave tiles: v_mfma_i32_32x32x16_i8", asm[:3000])


def test_gemm_int8_fp8(a, tmp):
    # The gfx942-only kinds (fp8 FNUZ, I32_16x16x32_I8) and gfx90a's I32_16x16x16_I8, through
    # shared memory: fp8/i8 tiles of 64 x 32 bytes on gfx942 (8-byte operand reads: the XOR
    # layout of src/passes/lds_layout.cpp), 64 x (32 + 8) on gfx90a (4-byte reads, where the bank
    # model finds the XOR layout no better than the padding); two buffers of each tile (the
    # register prefetch into the next buffer, src/passes/schedule.cpp).
    spec, _ = gemm_sources(a)
    text = open(spec).read()
    for t, elem, kind, acc, pattern, lds in (
            ("gfx942", "f8e4m3fnuz", "F32_16x16x32_F8", "f32", r"v_mfma_f32_16x16x32_fp8_fp8", 8192),
            ("gfx942", "f8e5m2fnuz", "F32_16x16x32_F8", "f32", r"v_mfma_f32_16x16x32_bf8_bf8", 8192),
            ("gfx942", "i8", "I32_16x16x32_I8", "i32", r"v_mfma_i32_16x16x32_i8", 8192),
            ("gfx90a", "i8", "I32_16x16x16_I8", "i32", r"v_mfma_i32_16x16x16i8", 10240)):
        src = os.path.join(tmp, f"{elem}_{t}.wave")
        body = text.replace("f16]", elem + "]").replace("mma = F32_16x16x16_F16", "mma = " + kind)
        body = body.replace("c: Memory[M, N, global, f32]", f"c: Memory[M, N, global, {acc}]")
        body = body.replace("Register[M, N, f32](0.0)", f"Register[M, N, {acc}]({'0' if acc == 'i32' else '0.0'})")
        open(src, "w").write(body)
        asm = run([a.wavec, src, "--target=" + t, "--emit=asm"]).stdout.decode()
        check(re.search(pattern, asm), f"{t} {elem} {kind}: {pattern}", asm[:2000])
        out = os.path.join(tmp, "q.hsaco")
        run([a.wavec, src, "--target=" + t, "-o", out])
        meta = notes(a, out)
        check(re.search(r"\.group_segment_fixed_size:\s+%d\b" % lds, meta) and
              re.search(r"\.private_segment_fixed_size:\s+0\b", meta) and
              re.search(r"\.vgpr_spill_count:\s+0\b", meta),
              f"{t} {elem}: LDS {lds} bytes, no scratch, no spills", meta)


def test_fp8_arith(a, tmp):
    # fp8 arithmetic (tests/e2e/kernels/fp8_arith.wave) compiles for every target; gfx942
    # widens the FNUZ kinds with its own v_cvt_f32_fp8 / v_cvt_f32_bf8 (gfx90a has none and
    # converts in integer arithmetic); the sm_90a PTX passes ptxas without spills.
    src = os.path.join(a.source_dir, "tests", "e2e", "kernels", "fp8_arith.wave")
    for t in TARGETS:
        out = os.path.join(tmp, "fp8_" + t)
        run([a.wavec, src, "--target=" + t, "-o", out])
        check(os.path.getsize(out) > 0, f"fp8_arith compiles for {t}")
    asm = run([a.wavec, src, "--target=gfx942", "--emit=asm"]).stdout.decode()
    check(re.search(r"v_cvt_f32_fp8", asm) and re.search(r"v_cvt_f32_bf8", asm),
          "gfx942: v_cvt_f32_fp8 and v_cvt_f32_bf8", asm[:2000])
    asm = run([a.wavec, src, "--target=gfx90a", "--emit=asm"]).stdout.decode()
    check(not re.search(r"v_cvt_f32_(fp|bf)8", asm), "gfx90a: no fp8 conversion instructions",
          asm[:2000])
    if not os.access(PTXAS, os.X_OK):
        print(f"SKIPPED: {PTXAS} is not installed (the PTX itself was checked)")
        return SKIP
    out = os.path.join(tmp, "fp8.ptx")
    run([a.wavec, src, "--target=sm_90a", "-o", out])
    p = run([PTXAS, "-arch=sm_90a", "-v", out, "-o", os.path.join(tmp, "fp8.cubin")])
    check("0 bytes spill stores" in p.stderr.decode(), "sm_90a: ptxas accepts it, no spills",
          p.stderr.decode())


def test_gemm_wgmma_fp8(a, tmp):
    # bench/gemm_fp8.wave on sm_90a: wgmma m64nNk32 on e4m3 (and, with the element type
    # replaced, e5m2) with A and B from TMA-loaded shared memory; the two-level accumulation
    # in 128 x 192 (the file's tiles) and 128 x 128 tiles and the whole-K accumulation in
    # 128 x 256 tiles pass ptxas without spills (scripts/make_devrun_gemm_fp8.sh builds them
    # for the H100). The two-level loop is warp-specialized where both of its accumulators fit
    # the consumers' 232 registers (128 x 192: 2 x 96), each tile's products waited for before
    # they are added and the buffer released; not in 128 x 256 tiles (2 x 128).
    src = os.path.join(a.source_dir, "bench", "gemm_fp8.wave")
    text = open(src).read()
    fast = os.path.join(tmp, "fast.wave")
    open(fast, "w").write(text.replace("yield acc + mma(read(a), read(b), zero);",
                                       "yield mma(read(a), read(b), acc);"))
    e5 = os.path.join(tmp, "e5m2.wave")
    open(e5, "w").write(text.replace("f8e4m3fn", "f8e5m2"))
    wide = ["-DBLOCK_N=256", "-DWAVE_N=256"]
    for f, flags, shape, ty in ((src, [], "m64n192k32", "e4m3"),
                                (src, ["-DBLOCK_N=128", "-DWAVE_N=128"], "m64n128k32", "e4m3"),
                                (fast, wide, "m64n256k32", "e4m3"),
                                (e5, ["-DBLOCK_N=128", "-DWAVE_N=128"], "m64n128k32", "e5m2")):
        out = os.path.join(tmp, "g.ptx")
        run([a.wavec, f, "--target=sm_90a", "-o", out] + flags)
        ptx = open(out).read()
        label = f"{os.path.basename(f)} {' '.join(flags)}"
        check(f"wgmma.mma_async.sync.aligned.{shape}.f32.{ty}.{ty}" in ptx,
              f"{label}: wgmma {shape} {ty}", ptx[:2000])
        check("cp.async.bulk.tensor.2d" in ptx, f"{label}: TMA loads", ptx[:2000])
        check(all(n in ptx for n in ("setmaxnreg.inc.sync.aligned.u32 232;", ".maxntid 384, 1, 1",
                                     ".minnctapersm 1")),
              f"{label}: warp-specialized", ptx[:2000])
        if f == src:  # two-level: the release follows the wait for all of the tile's products
            check(ptx.index("wgmma.wait_group.sync.aligned 0;") <
                  ptx.index("mbarrier.arrive.shared::cta.b64"),
                  f"{label}: the buffer released after its products retired", ptx[:6000])
        if not os.access(PTXAS, os.X_OK):
            continue
        p = run([PTXAS, "-arch=sm_90a", "-v", out, "-o", os.path.join(tmp, "g.cubin")])
        info = p.stderr.decode()
        check("0 bytes spill stores" in info and "C7508" not in info,
              f"{label}: ptxas, no spills, setmaxnreg kept", info)
    # Persistent tiles: each iteration of the two-level loop released its own buffer, the last
    # one included, so no release follows the loop (a second arrival on the last tile's empty
    # barrier put the ring a phase ahead: the producer overwrote a buffer still being read).
    per = os.path.join(tmp, "persist.wave")
    open(per, "w").write(text.replace("    assume(K % 16 == 0);",
                                      "    assume(K % 16 == 0);\n    hardware(persistent = 1);"))
    ptx = run([a.wavec, per, "--target=sm_90a", "--emit=ptx"]).stdout.decode()
    check("%nctaid.x" in ptx and ptx.count("mbarrier.arrive.shared::cta.b64") == 1,
          "two-level persistent: one release per tile, in the loop", ptx[:6000])
    # 128 x 256 two-level tiles stay one workgroup of 256 threads (no setmaxnreg).
    out = os.path.join(tmp, "w.ptx")
    run([a.wavec, src, "--target=sm_90a", "-o", out] + wide)
    ptx = open(out).read()
    check("setmaxnreg" not in ptx and ".maxntid 256, 1, 1" in ptx,
          "two-level 128 x 256: not warp-specialized (its accumulators need 256 registers)",
          ptx[:2000])
    # fp8 operands stay K-major: an N-major fp8 B has no wgmma form.
    nmaj = os.path.join(tmp, "nmajor.wave")
    open(nmaj, "w").write(text.replace("b: Memory[N, K, shared, f8e4m3fn]",
                                       "b: Memory[K, N, shared, f8e4m3fn]"))
    p = run([a.wavec, nmaj, "--target=sm_90a", "--check"], ok=False)
    check(p.returncode != 0 and b"unsupported-wgmma-tile" in p.stderr,
          "an N-major fp8 B is refused (unsupported-wgmma-tile)", p.stderr.decode())


def tma_gemm_setup(a):
    """The portable GEMM with assume(K % 8 == 0) (TMA boxes), the 128 x 256 x 64 tiles of the
    warp-specialized tests, and the TMA copy instruction they look for."""
    _, portable = gemm_sources(a)
    text = open(portable).read().replace("    assume(K > BLOCK_K * 4);",
                                         "    assume(K > BLOCK_K * 4);\n    assume(K % 8 == 0);")
    tiles = ["-DBLOCK_M=128", "-DBLOCK_N=256", "-DBLOCK_K=64", "-DWAVE_M=64", "-DWAVE_N=256"]
    tma = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
    return text, tiles, tma


def test_gemm_wgmma_wspec(a, tmp):
    # The TMA GEMM of test_gemm_wgmma with the schedule's default, warp specialization: a
    # producer warpgroup after the two consumer warpgroups (384 threads), every barrier
    # initialized by thread 0 (4 full with one arrival, 4 empty with one per consumer warp) before
    # the one bar.sync of every thread; the producer warpgroup lowers its registers to 40, its
    # first thread loops over the tiles (waiting on the empty barrier of the buffer from the
    # second round on, arriving with the 48 KB, two boxes), then the warpgroup exits; the
    # consumers raise theirs to 232, wait on the full barrier, issue the four m64n256k16
    # products and release the buffer of the tile whose products retired. No bar.sync in the
    # loop, ptxas without spills; the stub launches 384 threads. f16 and bf16, and the fp8
    # sample (bench/gemm_fp8.wave) likewise.
    text, tiles, tma = tma_gemm_setup(a)
    for ty in ("f16", "bf16"):
        src = os.path.join(tmp, f"gemm_{ty}.wave")
        open(src, "w").write(text.replace("f16]", ty + "]"))
        ptx = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"] + tiles).stdout.decode()
        name = f"{ty} warp-specialized"
        for needle in (tma, "mbarrier.try_wait.parity.shared::cta.b64", "setmaxnreg.dec.sync."
                       "aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 232;",
                       f"wgmma.mma_async.sync.aligned.m64n256k16.f32.{ty}.{ty}",
                       ".maxntid 384, 1, 1", ".minnctapersm 1", "exit;",
                       "mbarrier.arrive.shared::cta.b64"):
            check(needle in ptx, f"{name}: {needle}", ptx[:3000])
        # (LLVM peels the producer loop's first round, which waits on no empty barrier.)
        check(ptx.count(tma) >= 2 and ptx.count(tma) % 2 == 0,
              f"{name}: two TMA copies per tile (the producer's loop)", ptx[:3000])
        check(ptx.count("mbarrier.init.shared::cta.b64") == 8 and
              ptx.count("], 1;") >= 4 and ptx.count("], 8;") == 4,
              f"{name}: 4 full (1 arrival) and 4 empty (8 warps) barriers", ptx[:3000])
        check(ptx.count("mbarrier.try_wait.parity.shared::cta.b64") >= 2,
              f"{name}: the producer's wait (empty) and the consumers' (full)", ptx[:3000])
        check(ptx.count("bar.sync") == 1 and ptx.index("bar.sync") < ptx.index("setmaxnreg.dec"),
              f"{name}: one bar.sync, after the init, none in the loop", ptx[:6000])
        check(ptx.index("setmaxnreg.dec") < ptx.index(tma) < ptx.index("exit;") <
              ptx.index("setmaxnreg.inc") < ptx.index("wgmma.mma_async"),
              f"{name}: producer (dec, copies, exit) before the consumers (inc, products)",
              ptx[:6000])
        check(ptx.index("wgmma.wait_group.sync.aligned 1;") <
              ptx.index("mbarrier.arrive.shared::cta.b64"),
              f"{name}: the release after the wait that retires the tile's products", ptx[:6000])
        if os.access(PTXAS, os.X_OK):
            out = os.path.join(tmp, "ws.ptx")
            open(out, "w").write(ptx)
            p = run([PTXAS, "-arch=sm_90a", "-v", out, "-o", os.path.join(tmp, "ws.cubin")])
            info = p.stderr.decode()
            # C7508: ptxas dropped the setmaxnreg (no workgroups-per-SM bound at entry).
            check("0 bytes spill stores" in info and "warning" not in info and
                  "C7508" not in info,
                  f"{name}: ptxas -arch=sm_90a accepts it, no spills, no warnings, setmaxnreg "
                  "kept", info)
        sched = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                     os.path.join(tmp, "s.ptx")] + tiles).stderr.decode()
        check("warp-specialized: a producer warpgroup of 128 threads after the block's 256" in sched
              and "setmaxnreg producer 40, consumers 232" in sched,
              f"{name}: the schedule dump says so", sched)
    header, stub = os.path.join(tmp, "g.h"), os.path.join(tmp, "g.c")
    run([a.wavec, src, "--target=sm_90a", "-o", os.path.join(tmp, "g.ptx"), "--header", header,
         "--stub", stub] + tiles)
    c = open(stub).read()
    # Two geometries (the native object requests dynamic shared memory, the emulator image
    # holds its own), both with the producer warpgroup: emu:sm_90a runs it too.
    check(c.count("block[0] = 384;") == 2 and "targets: sm_90a; block [384, 1, 1]" in c and
          "targets: emu:sm_90a; block [384, 1, 1]" in c,
          "the stub launches the producer warpgroup too (384 threads, GPU and emulator)",
          c[-3000:])
    meta = json.loads(run([a.wavec, src, "--target=sm_90a", "--emit=metadata"] +
                          tiles).stdout.decode())
    check(meta["kernels"][0]["block"] == [384, 1, 1], "metadata: block [384, 1, 1]", str(meta))
    # The fp8 sample's whole-K form is a TMA GEMM too.
    fp8 = open(os.path.join(a.source_dir, "bench", "gemm_fp8.wave")).read().replace(
        "yield acc + mma(read(a), read(b), zero);", "yield mma(read(a), read(b), acc);")
    f8 = os.path.join(tmp, "fp8.wave")
    open(f8, "w").write(fp8)
    ptx = run([a.wavec, f8, "--target=sm_90a", "--emit=ptx"]).stdout.decode()
    check("setmaxnreg.inc" in ptx and tma in ptx and ".maxntid 384, 1, 1" in ptx,
          "fp8 whole-K GEMM: warp-specialized", ptx[:3000])
    # The override: one TMA thread in the workgroup, barriers in the loop, 256 threads.
    off = os.path.join(tmp, "off.wave")
    open(off, "w").write(open(src).read().replace(
        "    assume(K % 8 == 0);", "    assume(K % 8 == 0);\n    hardware(warp_specialize = 0);"))
    ptx = run([a.wavec, off, "--target=sm_90a", "--emit=ptx"] + tiles).stdout.decode()
    check("setmaxnreg" not in ptx and ".maxntid 256, 1, 1" in ptx and ptx.count("bar.sync") == 3,
          "hardware(warp_specialize = 0): the TMA loop of one workgroup", ptx[:3000])
    bad = os.path.join(tmp, "bad.wave")
    open(bad, "w").write(open(src).read().replace(
        "    assume(K % 8 == 0);", "    assume(K % 8 == 0);\n    hardware(warp_specialize = 2);"))
    p = run([a.wavec, bad, "--target=sm_90a", "--check"] + tiles, ok=False)
    check(p.returncode != 0 and b"warp_specialize" in p.stderr,
          "warp_specialize = 2 is refused", p.stderr.decode())


def test_gemm_wgmma_persist(a, tmp):
    # Persistent tiles (hardware(persistent = 1)) of the warp-specialized TMA GEMM of
    # test_gemm_wgmma_wspec: the producer's first thread and the consumers walk the output tiles
    # (block_id.x, stepping by grid_dim.x: %nctaid.x), the ring's count going on across tiles;
    # the consumers release the last K tile's buffer after the loop (one more arrive than the
    # loop's). Still one bar.sync, setmaxnreg 40/232, no spills; the stub clamps the grid to the
    # SM count (wave_device_info) and the metadata says so. The default (no constraint) and
    # warp_specialize = 0 keep one tile per workgroup; persistent = 2 is refused.
    text, tiles, tma = tma_gemm_setup(a)
    on = "    assume(K % 8 == 0);\n    hardware(persistent = 1);"
    for ty in ("f16", "bf16"):
        src = os.path.join(tmp, f"persist_{ty}.wave")
        open(src, "w").write(text.replace("f16]", ty + "]").replace("    assume(K % 8 == 0);", on))
        name = f"{ty} persistent"
        ptx = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"] + tiles).stdout.decode()
        for needle in (tma, "mbarrier.try_wait.parity.shared::cta.b64", "setmaxnreg.dec.sync."
                       "aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 232;",
                       f"wgmma.mma_async.sync.aligned.m64n256k16.f32.{ty}.{ty}",
                       ".maxntid 384, 1, 1", "exit;", "%nctaid.x"):
            check(needle in ptx, f"{name}: {needle}", ptx[:3000])
        check(ptx.count("bar.sync") == 1 and ptx.index("bar.sync") < ptx.index("setmaxnreg.dec"),
              f"{name}: one bar.sync, after the init, none in the tile or K loops", ptx[:6000])
        check(ptx.count("mbarrier.arrive.shared::cta.b64") >= 2,
              f"{name}: the loop's release and the last tile's after it", ptx[:6000])
        last = ptx.rindex("mbarrier.arrive.shared::cta.b64")
        check(ptx.rindex("wgmma.wait_group.sync.aligned 0;") < last < ptx.rindex("st.global"),
              f"{name}: the last release after the final wgmma wait, before the stores",
              ptx[-6000:])
        if os.access(PTXAS, os.X_OK):
            out = os.path.join(tmp, "ps.ptx")
            open(out, "w").write(ptx)
            p = run([PTXAS, "-arch=sm_90a", "-v", out, "-o", os.path.join(tmp, "ps.cubin")])
            info = p.stderr.decode()
            # C7508: ptxas dropped the setmaxnreg (no workgroups-per-SM bound at entry).
            check("0 bytes spill stores" in info and "warning" not in info and
                  "C7508" not in info,
                  f"{name}: ptxas -arch=sm_90a accepts it, no spills, no warnings, setmaxnreg "
                  "kept", info)
        sched = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                     os.path.join(tmp, "s.ptx")] + tiles).stderr.decode()
        check("persistent: 1 workgroup per SM walks the output tiles" in sched and
              "ids remapped per output tile" in sched, f"{name}: the schedule dump says so", sched)
    header, stub = os.path.join(tmp, "p.h"), os.path.join(tmp, "p.c")
    run([a.wavec, src, "--target=sm_90a", "-o", os.path.join(tmp, "p.ptx"), "--header", header,
         "--stub", stub] + tiles)
    c = open(stub).read()
    # Two geometries (native: dynamic shared memory; emu:sm_90a: none), both persistent.
    for needle in ("st = wave_device_info(device, &info);",
                   "(uint64_t)info.multiprocessor_count * persistent;",
                   "grid0 = (int64_t)(most > 0 && tiles > most ? most : tiles);"):
        check(needle in c, f"the stub: {needle}", c[-3000:])
    check(c.count("    persistent = 1;") == 2 and c.count("block[0] = 384;") == 2,
          "the stub: persistent = 1 and 384 threads for the GPU and the emulator", c[-3000:])
    check(c.index("grid1 > UINT32_MAX") < c.index("wave_device_info(device") <
          c.index("wave_launch(device"), "the stub clamps the checked grid before the launch",
          c[-3000:])
    meta = json.loads(run([a.wavec, src, "--target=sm_90a", "--emit=metadata"] +
                          tiles).stdout.decode())
    k = meta["kernels"][0]
    check(k.get("persistent_workgroups_per_sm") == 1 and k["block"] == [384, 1, 1],
          "metadata: persistent_workgroups_per_sm 1, block [384, 1, 1]", str(k))
    # The default and warp_specialize = 0: one output tile per workgroup.
    plain = os.path.join(tmp, "plain.wave")
    open(plain, "w").write(text)
    nows = os.path.join(tmp, "nows.wave")
    open(nows, "w").write(text.replace("    assume(K % 8 == 0);", on.replace(
        "persistent = 1", "warp_specialize = 0, persistent = 1")))
    for src, what in ((plain, "the default"), (nows, "warp_specialize = 0")):
        run([a.wavec, src, "--target=sm_90a", "-o", os.path.join(tmp, "q.ptx"), "--header",
             header, "--stub", stub] + tiles)
        c = open(stub).read()
        check("persistent" not in c and "wave_device_info" not in c,
              f"{what}: the stub launches the grid as it is", c[-3000:])
        meta = json.loads(run([a.wavec, src, "--target=sm_90a", "--emit=metadata"] +
                              tiles).stdout.decode())
        check("persistent_workgroups_per_sm" not in meta["kernels"][0],
              f"{what}: no persistent tiles in the metadata", str(meta))
    bad = os.path.join(tmp, "bad.wave")
    open(bad, "w").write(text.replace("    assume(K % 8 == 0);", on.replace("= 1", "= 2")))
    p = run([a.wavec, bad, "--target=sm_90a", "--check"] + tiles, ok=False)
    check(p.returncode != 0 and b"persistent (0 or 1)" in p.stderr and
          b"expected-int-constant" in p.stderr, "persistent = 2 is refused", p.stderr.decode())


def test_gemm_wgmma_epilogue(a, tmp):
    # The epilogue through shared memory (KernelPlan::epilogue) of the warp-specialized TMA GEMM
    # of test_gemm_wgmma_wspec, where the output's rows are a proven multiple of 16 bytes
    # (assume(N % 8 == 0)): after the final wgmma wait the consumers' barrier (bar.sync 1, 256),
    # each lane's accumulator pairs into the ring's shared memory (st.shared, 64-bit for f32,
    # 32-bit for f16 pairs), the async-proxy fence and the barrier again, then one thread's TMA
    # stores (one per box of 128 rows x 128 bytes: 8 for f32, 4 for f16), committed and waited
    # for (wait_group.read) before it exits; no st.global; ptxas without spills. The stub builds
    # the output's tensor map after the operands'. The epilogue sample (bias + ReLU / GELU, f16
    # out) likewise. hardware(stage_epilogue = 0), an unproven N, and persistent tiles keep the
    # stores from registers; stage_epilogue = 2 is refused.
    text, tiles, _ = tma_gemm_setup(a)
    text = text.replace("    assume(K % 8 == 0);", "    assume(K % 8 == 0);\n    assume(N % 8 == 0);")
    store = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
    f16c = text.replace("c: Memory[M, N, global, f32]", "c: Memory[M, N, global, f16]").replace(
        "  write(result, c);", "  write(cast(result, f16), c);")
    check("write(cast(result, f16), c)" in f16c, "the f16-output GEMM source", f16c)
    for label, body, boxes, sts, box_cols in (("f32 C", text, 8, "st.shared.v2.f32", 32),
                                              ("f16 C", f16c, 4, "st.shared.b32", 64)):
        src = os.path.join(tmp, "epi_" + label[:3] + ".wave")
        open(src, "w").write(body)
        ptx = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"] + tiles).stdout.decode()
        check(ptx.count(store) == boxes, f"{label}: {boxes} TMA stores", ptx[-4000:])
        check(ptx.count(sts) == 64, f"{label}: 64 {sts} per thread (the 128 accumulators)",
              ptx[-8000:])
        check("st.global" not in ptx, f"{label}: no st.global", ptx[-4000:])
        first = ptx.index(store)
        fence = ptx.rindex("fence.proxy.async.shared::cta", 0, first)
        check(ptx.rindex("wgmma.wait_group.sync.aligned 0;", 0, first) <
              ptx.index("bar.sync 1, 256;", ptx.rindex("wgmma.wait_group.sync.aligned 0;")) <
              ptx.index(sts) < fence < ptx.rindex("bar.sync 1, 256;", 0, first) < first,
              f"{label}: wait, barrier, st.shared, proxy fence, barrier, TMA store", ptx[-8000:])
        check(ptx.count("cp.async.bulk.commit_group;") == boxes and
              ptx.index("cp.async.bulk.wait_group.read 0;") > ptx.rindex(store),
              f"{label}: committed, waited for before the exit", ptx[-4000:])
        if os.access(PTXAS, os.X_OK):
            out = os.path.join(tmp, "ep.ptx")
            open(out, "w").write(ptx)
            p = run([PTXAS, "-arch=sm_90a", "-v", out, "-o", os.path.join(tmp, "ep.cubin")])
            info = p.stderr.decode()
            check("0 bytes spill stores" in info and "warning" not in info,
                  f"{label}: ptxas -arch=sm_90a accepts it, no spills, no warnings", info)
        sched = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                     os.path.join(tmp, "s.ptx")] + tiles).stderr.decode()
        check("epilogue: the write (line" in sched and
              f"128 x 256 in boxes of 128 x {box_cols}, 128-byte swizzle" in sched,
              f"{label}: the schedule dump says so", sched)
        header, stub = os.path.join(tmp, "e.h"), os.path.join(tmp, "e.c")
        run([a.wavec, src, "--target=sm_90a", "-o", os.path.join(tmp, "e.ptx"), "--header",
             header, "--stub", stub] + tiles)
        c = open(stub).read()
        maps = [l for l in c.splitlines() if "wave_tensor_map_2d(device" in l]
        # Per geometry (native, emu:sm_90a): A, B, C.
        check(len(maps) == 6 and "(device, c, dtype" in maps[2] and maps[3:] == maps[:3] and
              f"* {4 if label == 'f32 C' else 2}, 128, {box_cols}, 128, &map)" in maps[2],
              f"{label}: the stub builds the output's tensor map (box 128 x {box_cols})",
              "\n".join(maps))
    # The epilogue sample: both kernels staged (4 f16 boxes each).
    epi = open(os.path.join(a.source_dir, "samples", "gemm_epilogue", "gemm_epilogue.wave")).read()
    epi = epi.replace("    wave(N, WAVE_N);", "    wave(N, WAVE_N);\n    assume(K > BLOCK_K * 4);\n"
                      "    assume(K % 8 == 0);\n    assume(N % 8 == 0);")
    check(epi.count("assume(N % 8 == 0)") == 2, "the epilogue sample with N % 8", epi)
    esrc = os.path.join(tmp, "gemm_epilogue.wave")
    open(esrc, "w").write(epi)
    ptx = run([a.wavec, esrc, "--target=sm_90a", "--emit=ptx"] + tiles).stdout.decode()
    check(ptx.count(store) == 8 and "st.global.b32" not in ptx and ptx.count("st.shared.b32") == 128,
          "epilogue sample: 4 TMA stores and 64 st.shared.b32 per kernel, no 4-byte st.global",
          ptx[-4000:])
    # What keeps the stores from registers.
    keep = [("hardware(stage_epilogue = 0)", text.replace(
                "    assume(N % 8 == 0);", "    assume(N % 8 == 0);\n    hardware(stage_epilogue = 0);")),
            ("N not proven a multiple of 8", text.replace("    assume(N % 8 == 0);\n", "")),
            ("persistent tiles", text.replace(
                "    assume(N % 8 == 0);", "    assume(N % 8 == 0);\n    hardware(persistent = 1);"))]
    for what, body in keep:
        src = os.path.join(tmp, "keep.wave")
        open(src, "w").write(body)
        ptx = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"] + tiles).stdout.decode()
        check(store not in ptx and "st.global" in ptx and "setmaxnreg" in ptx,
              f"{what}: the stores from registers", ptx[-4000:])
        sched = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                     os.path.join(tmp, "s.ptx")] + tiles).stderr.decode()
        check("epilogue:" not in sched, f"{what}: no epilogue line in the schedule dump", sched)
    bad = os.path.join(tmp, "bad.wave")
    open(bad, "w").write(text.replace("    assume(N % 8 == 0);",
                                      "    assume(N % 8 == 0);\n    hardware(stage_epilogue = 2);"))
    p = run([a.wavec, bad, "--target=sm_90a", "--check"] + tiles, ok=False)
    check(p.returncode != 0 and b"stage_epilogue (0 or 1)" in p.stderr and
          b"expected-int-constant" in p.stderr, "stage_epilogue = 2 is refused", p.stderr.decode())


def test_gemm_other_targets(a, tmp):
    _, portable = gemm_sources(a)
    batched = os.path.join(a.source_dir, "tests", "codegen", "inputs", "gemm_batched.wave")
    bf16 = os.path.join(tmp, "gemm_bf16.wave")
    open(bf16, "w").write(open(portable).read().replace("f16]", "bf16]"))
    for src in (portable, batched, bf16):
        name = os.path.basename(src)
        asm = run([a.wavec, src, "--target=gfx1100", "--emit=asm"]).stdout.decode()
        check(re.search(r"v_wmma_f32_16x16x16_(bf)?16|v_wmma_f32_16x16x16_f16", asm),
              f"gfx1100 {name}: v_wmma", asm[:2000])
        check("ds_load_b128" in asm, f"gfx1100 {name}: 128-bit LDS reads (a row per lane)", asm[:2000])
        out = os.path.join(tmp, "g.hsaco")
        run([a.wavec, src, "--target=gfx1100", "-o", out])
        meta = notes(a, out)
        check(".wavefront_size: 32" in meta and
              re.search(r"\.private_segment_fixed_size:\s+0\b", meta),
              f"gfx1100 {name}: wave32, no scratch", meta)
        for t in ("gfx942", "gfx90a"):
            asm = run([a.wavec, src, "--target=" + t, "--emit=asm"]).stdout.decode()
            check("v_mfma" in asm, f"{t} {name}: v_mfma", asm[:2000])
    for t in ("sm_80", "sm_90"):
        for src in (portable, batched, bf16):
            name = os.path.basename(src)
            ptx = run([a.wavec, src, "--target=" + t, "--emit=asm"]).stdout.decode()
            check(re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.(f16\.f16|bf16\.bf16)\.f32",
                            ptx), f"{t} {name}: mma.sync m16n8k16", ptx[:2000])
            check("ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx and
                  "ldmatrix.sync.aligned.m8n8.x2" not in ptx,
                  f"{t} {name}: ldmatrix x4 for A and for B (two n8 fragments each), no x2",
                  ptx[:2000])
            check("ld.global.v4" in ptx and "st.shared.v4" in ptx,
                  f"{t} {name}: 128-bit cooperative copies", ptx[:2000])
            check("bar.sync" in ptx, f"{t} {name}: barriers", ptx[:2000])
    if not os.access(PTXAS, os.X_OK):
        print(f"SKIPPED: {PTXAS} is not installed (the PTX itself was checked)")
        return SKIP
    for src in (portable, batched, bf16):
        out = os.path.join(tmp, "g.ptx")
        run([a.wavec, src, "--target=sm_90", "-o", out])
        p = run([PTXAS, "-arch=sm_90", "-v", out, "-o", os.path.join(tmp, "g.cubin")])
        info = p.stderr.decode()
        check(re.search(r"0 bytes spill stores", info), f"ptxas accepts {os.path.basename(src)}, no spills",
              info)


def test_gemm_barriers(a, tmp):
    # The register-prefetched GEMM loop (src/passes/schedule.cpp). With two LDS buffers (the
    # sample's 64x64x32 tiles, 16 KiB: four workgroups' worth of the CU's LDS) the barrier
    # analysis places one barrier per iteration, before the reads of this iteration's buffer:
    # tile i + 1 goes into the other buffer right behind the MMAs, with no barrier between.
    # With one buffer (128x128x64: two buffers would leave the CU one workgroup) two: before the
    # reads, and after the MMAs before the store over the tile just read. --debug-no-barriers
    # leaves them out.
    spec, _ = gemm_sources(a)

    def loop_body(text):
        loop = text[text.index("scf.for"):]
        return loop[:re.search(r"scf\.yield [^\n]*: vector<4xf32>", loop).start()]

    text = run([a.wavec, spec, "--emit=mlir"]).stdout.decode()
    body = loop_body(text)
    check(body.count("gpu.barrier") == 1, "double buffer: one barrier in the loop body", body[:3000])
    first = body.index("gpu.barrier")
    check(body.find("ptr<3> -> vector<4xf16>") > first, "the barrier precedes the LDS reads", body)
    last_mfma = body.rfind("rocdl.mfma")
    check(body.find("vector<4xf16>, !llvm.ptr<3>", last_mfma) > last_mfma and
          body.count("gpu.barrier", last_mfma) == 0,
          "the next tile's LDS stores follow the MMAs with no barrier between", body)
    check(text[:text.index("scf.for")].count("gpu.barrier") == 0, "no barrier before the loop", text)
    text = run([a.wavec, spec, "--emit=mlir", "-DBLOCK_M=128", "-DBLOCK_N=128",
                "-DBLOCK_K=64"]).stdout.decode()
    body = loop_body(text)
    check(body.count("gpu.barrier") == 2, "single buffer (128x128x64): two barriers", body[:3000])
    first, last = body.index("gpu.barrier"), body.rindex("gpu.barrier")
    check(body.find("ptr<3> -> vector<4xf16>") > first, "the first barrier precedes the LDS reads",
          body)
    check(body.find("vector<4xf16>, !llvm.ptr<3>", last) > last and
          body.rfind("rocdl.mfma", 0, last) > 0,
          "the second barrier sits after the MMAs and before the LDS stores", body)
    off = run([a.wavec, spec, "--emit=mlir", "--debug-no-barriers"]).stdout.decode()
    check("gpu.barrier" not in off, "--debug-no-barriers removes them", off[:2000])


def loop_sequence(asm):
    # The first loop of the kernel (.LBB0_1 up to its backward branch), one letter per
    # instruction class: M v_mfma, R ds_read, W ds_write, G global/buffer load, B s_barrier,
    # P / p s_setprio 1 / 0.
    lines = [l.strip() for l in asm.split("\n")]
    i = lines.index(".LBB0_1:")
    j = i
    while not lines[j].startswith("s_cbranch"):
        j += 1
    out = ""
    for l in lines[i:j]:
        for prefix, letter in (("v_mfma", "M"), ("ds_read", "R"), ("ds_write", "W"),
                               ("global_load", "G"), ("buffer_load", "G"), ("s_barrier", "B"),
                               ("s_setprio 1", "P"), ("s_setprio 0", "p")):
            if l.startswith(prefix):
                out += letter
    return out


def test_gemm_mfma_interleave(a, tmp):
    # The AMD GEMM loop's schedule (LoopSchedule::interleave, src/passes/schedule.cpp; emitted by
    # emitter/iterate.cpp and codegen/amd/amd_lowering.cpp): s_setprio 1 after the next tile's
    # global loads (at the top of the body, before the barrier) and before this tile's LDS
    # reads, s_setprio 0 after the LDS stores; sched.group.barrier groups interleave the MFMAs
    # with the LDS reads and put the stores after the last MFMA. Static sizes: no masked loads.
    spec, portable = gemm_sources(a)
    static = ["-DM=4096", "-DN=4096", "-DK=4096"]
    for t, tile, mfma, bars in (("gfx942", [], 8, 1), ("gfx90a", [], 8, 1),
                                ("gfx942", ["-DBLOCK_M=128", "-DBLOCK_N=128", "-DBLOCK_K=64"],
                                 64, 2)):
        label = f"{t} {'128x128x64' if tile else '64x64x32'}"
        seq = loop_sequence(run([a.wavec, spec, "--emit=asm", "--target=" + t] + tile + static)
                            .stdout.decode())
        ok = "P" in seq and "p" in seq
        body = seq[seq.index("P"):seq.rindex("p") + 1] if ok else ""
        check(ok and seq.count("M") == mfma and body.count("M") == mfma and
              seq.index("P") > seq.rindex("G"),
              f"{label}: global loads, s_setprio 1, {mfma} v_mfma, s_setprio 0", seq)
        check(seq.count("B") == bars, f"{label}: {bars} s_barrier per iteration", seq)
        inner = body[body.index("M"):body.rindex("M")]
        check("R" in inner, f"{label}: LDS reads between the MFMAs", seq)
        last = body.rindex("M")
        check(body.count("W") > 0 and body.index("W") > last,
              f"{label}: every LDS store after the last MFMA", seq)
    # The groups in the MLIR (MFMA 0x8, DS read 0x100, DS write 0x200), on MFMA targets only.
    mlir = run([a.wavec, spec, "--emit=mlir"] + static).stdout.decode()
    calls = re.findall(r'llvm\.call_intrinsic "llvm\.amdgcn\.sched\.group\.barrier"', mlir)
    check(len(calls) >= 8 + 2 and "rocdl.s.setprio 1" in mlir and "rocdl.s.setprio 0" in mlir,
          f"gfx942 MLIR: {len(calls)} sched.group.barrier calls, s.setprio 1 and 0", mlir[:3000])
    for t in ("gfx1100", "sm_90"):
        text = run([a.wavec, portable, "--emit=mlir", "--target=" + t]).stdout.decode()
        check("sched.group.barrier" not in text and "setprio" not in text,
              f"{t}: no MFMA scheduling hints", text[:2000])


def mfma_loop(asm):
    # The lines of the first loop (a label up to a backward branch to it) holding a v_mfma.
    lines = [l.strip() for l in asm.split("\n")]
    labels = {l[:-1]: k for k, l in enumerate(lines) if re.match(r"\.LBB\d+_\d+:$", l)}
    for j, l in enumerate(lines):
        m = re.match(r"s_cbranch_\w+ (\.LBB\d+_\d+)$", l)
        if m and m.group(1) in labels and labels[m.group(1)] < j:
            body = lines[labels[m.group(1)]:j]
            if any(x.startswith("v_mfma") for x in body):
                return body
    return []


def test_gemm_lds_dma(a, tmp):
    # hardware(lds_dma = 1) (LoopSchedule::ldsDma, src/passes/schedule.cpp; emitted by
    # emitter/shared_memory.cpp ldsDmaCopy): on gfx942/gfx90a the loop copies its tiles with
    # `buffer_load_dword ... lds` (no global loads into registers, no LDS stores of the copy),
    # behind this tile's LDS reads, and waits vmcnt(0) before the barrier before the next reads;
    # no scratch, no spills. With -DLDS_DMA=0 and on gfx1100 (no LDS DMA) the register prefetch.
    src = os.path.join(a.source_dir, "tests", "e2e", "kernels", "gemm_lds_dma.wave")
    for t, tile in (("gfx942", []), ("gfx90a", []),
                    ("gfx942", ["-DBLOCK_M=128", "-DBLOCK_N=128", "-DBLOCK_K=64"])):
        label = f"{t} {'128x128x64' if tile else '64x64x32'}"
        for dims in ([], ["-DM=4096", "-DN=4096", "-DK=4096"]):
            lab = label + (" static" if dims else " dynamic")
            asm = run([a.wavec, src, "--emit=asm", "--target=" + t] + tile + dims).stdout.decode()
            out = os.path.join(tmp, "dma.hsaco")
            run([a.wavec, src, "--target=" + t, "-o", out] + tile + dims)
            meta = notes(a, out)
            dma = re.findall(r"buffer_load_dword v\d+, s\[\d+:\d+\], 0 offen lds", asm)
            check(len(dma) > 0, f"{lab}: buffer_load_dword ... lds", asm[:3000])
            check(re.search(r"\.private_segment_fixed_size:\s+0\b", meta), f"{lab}: no scratch",
                  meta)
            check(re.search(r"\.vgpr_spill_count:\s+0\b", meta) and
                  re.search(r"\.sgpr_spill_count:\s+0\b", meta), f"{lab}: no spills", meta)
            body = mfma_loop(asm)
            kinds = "".join("D" if re.match(r"buffer_load_dword .* lds$", l) else
                            "V" if l.startswith("s_waitcnt") and "vmcnt(0)" in l else
                            "B" if l.startswith("s_barrier") else
                            "R" if l.startswith("ds_read") else
                            "W" if l.startswith("ds_write") else
                            "G" if l.startswith(("global_load", "buffer_load")) else
                            "M" if l.startswith("v_mfma") else "" for l in body)
            check("D" in kinds and "W" not in kinds and "G" not in kinds,
                  f"{lab}: the loop copies by LDS DMA only (no global loads, no LDS stores)",
                  kinds)
            check(kinds.index("R") < kinds.index("D"),
                  f"{lab}: the DMAs follow this tile's first LDS reads", kinds)
            first_b = kinds.index("B")
            check("V" in kinds[:first_b] or "V" in kinds[kinds.rindex("D"):],
                  f"{lab}: s_waitcnt vmcnt(0) before the barrier that precedes the reads", kinds)
    for t, extra in (("gfx942", ["-DLDS_DMA=0"]), ("gfx1100", []), ("gfx90a", ["-DLDS_DMA=0"])):
        asm = run([a.wavec, src, "--emit=asm", "--target=" + t] + extra).stdout.decode()
        check(not re.search(r"buffer_load_\w+ .* lds$", asm, re.M),
              f"{t} {' '.join(extra)}: no LDS DMA (the register prefetch)", asm[:3000])
        check(re.search(r"ds_(write|store)", asm), f"{t} {' '.join(extra)}: the copy's LDS stores", asm[:3000])
    # The MLIR: the intrinsic call (MLIR 19's ROCDL has no op) and the wait.
    mlir = run([a.wavec, src, "--emit=mlir", "--target=gfx942"]).stdout.decode()
    check('llvm.call_intrinsic "llvm.amdgcn.raw.buffer.load.lds"' in mlir and
          "rocdl.waitcnt 3952" in mlir, "gfx942 MLIR: raw.buffer.load.lds calls, waitcnt vmcnt(0)",
          mlir[:3000])


def test_shared_atomics_isa(a, tmp):
    # Atomics on an allocated tile are the targets' shared-memory atomic instructions (the f32
    # minimum a compare-exchange loop, docs/language.md section 16), and the kernel's own
    # barrier() stays when --debug-no-barriers drops the placed ones.
    src = os.path.join(a.source_dir, "tests", "e2e", "kernels", "allocate_atomics.wave")
    for t, patterns in (("gfx942", (r"ds_add_rtn_f32", r"ds_add_u32", r"ds_min_rtn_i32",
                                    r"ds_max_rtn_u32", r"ds_min_u32", r"ds_cmpst_rtn_b32")),
                        ("gfx1100", (r"ds_add_rtn_f32", r"ds_min_rtn_i32", r"ds_max_rtn_u32",
                                     r"ds_cmpstore_rtn_b32")),
                        ("sm_90", (r"atom\.shared\.add\.f32", r"atom\.shared\.add\.u32",
                                   r"atom\.shared\.min\.s32", r"atom\.shared\.max\.u32",
                                   r"atom\.shared\.cas\.b32"))):
        text = run([a.wavec, src, "--target=" + t, "--emit=asm"]).stdout.decode()
        for pattern in patterns:
            check(re.search(pattern, text), f"{t}: shared-memory atomics show {pattern}", text[:3000])
        check(not re.search(r"global_atomic|atom\.global|flat_atomic", text),
              f"{t}: no global atomics for the tile", text[:3000])
    hist = os.path.join(a.source_dir, "samples", "histogram", "histogram.wave")
    on = run([a.wavec, hist, "--target=sm_90", "--emit=mlir"]).stdout.decode()
    off = run([a.wavec, hist, "--target=sm_90", "--emit=mlir", "--debug-no-barriers"]).stdout.decode()
    check(on.count("gpu.barrier") == 2 and off.count("gpu.barrier") == 1,
          "the histogram: one placed barrier and the kernel's own barrier()", on[:3000])


def test_gemm_dynamic_shared(a, tmp):
    # A block tile whose 3-buffer cp.async pipeline needs more than the 48 KB of static shared
    # memory (256 x 128 x 32 f16: 3 x 24 KB) gets dynamic shared memory on NVIDIA: an unsized
    # `.extern .shared` arena, the byte count in the metadata, and the stub requests it at launch
    # (the emulator image holds it itself, so the stub requests none there). Within 48 KB the
    # arena stays static.
    src = os.path.join(a.source_dir, "tests", "e2e", "kernels", "gemm_pipelined.wave")
    for t, opt_in in (("sm_80", 166912), ("sm_90", 232448)):
        targets = run([a.wavec, "--print-targets"]).stdout.decode()
        check(f"shared memory 49152 bytes ({opt_in} opt-in)" in targets,
              f"{t}: the target table's opt-in limit", targets)
        big = ["-DBLOCK_M=256", "-DWAVE_M=64", "--target=" + t]
        mlir = run([a.wavec, src, "--emit=mlir"] + big).stdout.decode()
        check(re.search(r"llvm\.mlir\.global external @__wave_lds_gemm_pipelined\(\) "
                        r"\{addr_space = 3 : i32, alignment = 16 : i64\} : !llvm\.array<0 x i8>",
                        mlir), f"{t}: an unsized external arena", mlir[:3000])
        check(mlir.count("cp.async.commit.group") >= 3, f"{t}: three buffers", mlir[:3000])
        meta = run([a.wavec, src, "--emit=metadata"] + big).stdout.decode()
        check('"lds_bytes": 0' in meta and '"dynamic_lds_bytes": 73728' in meta,
              f"{t}: metadata: 72 KB dynamic, no static", meta)
        ptx = os.path.join(tmp, "g.ptx")
        header, stub = os.path.join(tmp, "g.h"), os.path.join(tmp, "g.c")
        run([a.wavec, src, "-o", ptx, "--header", header, "--stub", stub] + big)
        text = open(ptx).read()
        check(".extern .shared .align 16 .b8 __wave_lds_gemm_pipelined[];" in text,
              f"{t}: PTX declares extern shared memory", text[:2000])
        c = open(stub).read()
        check(re.search(r"shared = 73728;", c) and re.search(r"shared = 0;", c) and
              "wave_launch(device, stream, kernel, grid, block, shared, args" in c,
              f"{t}: the stub requests 73728 bytes for the native object, none for the emulator's",
              c[-4000:])
        small = run([a.wavec, src, "--emit=metadata", "--target=" + t]).stdout.decode()
        check('"lds_bytes": 49152' in small and '"dynamic_lds_bytes": 0' in small,
              f"{t}: the 128 x 128 tile stays static (48 KB)", small)
        if os.access(PTXAS, os.X_OK):
            p = run([PTXAS, "-arch=" + t, "-v", ptx, "-o", os.path.join(tmp, "g.cubin")])
            check("0 bytes spill stores" in p.stderr.decode(), f"{t}: ptxas accepts it, no spills",
                  p.stderr.decode())


def test_gemm_wgmma(a, tmp):
    # sm_90a with tiles that suit wgmma (wave tiles of 64 x 256, K tiles of 64): mma = auto
    # picks the warpgroup kind, the PTX has the wgmma pipeline (fence, four m64n256k16 products
    # per tile, commit, a wait keeping one group in flight, a wait for all after the loop) and
    # the async-proxy fence before the barrier; ptxas takes it without spills. sm_90 compiles the
    # same kernel to mma.sync, and sm_90a with the sample's default tiles (wave tiles of 32 rows)
    # too. With K a proven multiple of 8 the tiles come by TMA (mbarriers, no cp.async); with
    # 32-deep K tiles by cp.async. The stub of the TMA form embeds the emulator image too and
    # builds the tensor maps.
    _, portable = gemm_sources(a)
    aligned = os.path.join(tmp, "gemm_aligned.wave")
    text = open(portable).read()
    open(aligned, "w").write(text.replace("    assume(K > BLOCK_K * 4);",
                                          "    assume(K > BLOCK_K * 4);\n    assume(K % 8 == 0);"))
    bf16 = os.path.join(tmp, "gemm_bf16.wave")
    open(bf16, "w").write(open(aligned).read().replace("f16]", "bf16]"))
    tiles = ["-DBLOCK_M=128", "-DBLOCK_N=256", "-DBLOCK_K=64", "-DWAVE_M=64", "-DWAVE_N=256"]
    have_ptxas = os.access(PTXAS, os.X_OK)
    # The TMA loop without warp specialization (hardware(warp_specialize = 0); the default form
    # is test_gemm_wgmma_wspec's).
    plain, plain16 = os.path.join(tmp, "gemm_plain.wave"), os.path.join(tmp, "gemm_plain16.wave")
    off = "    assume(K % 8 == 0);\n    hardware(warp_specialize = 0);"
    open(plain, "w").write(open(aligned).read().replace("    assume(K % 8 == 0);", off))
    open(plain16, "w").write(open(bf16).read().replace("    assume(K % 8 == 0);", off))
    for src, ty in ((plain, "f16"), (plain16, "bf16"), (portable, "f16")):
        name = os.path.basename(src)
        ptx = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"] + tiles).stdout.decode()
        check(ptx.count(f"wgmma.mma_async.sync.aligned.m64n256k16.f32.{ty}.{ty}") == 4,
              f"{name}: four wgmma m64n256k16 per tile", ptx[:3000])
        check("mma.sync" not in ptx and "ldmatrix" not in ptx, f"{name}: no mma.sync, no ldmatrix",
              ptx[:3000])
        for needle in ("wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;",
                       "wgmma.wait_group.sync.aligned 0;", "fence.proxy.async.shared::cta;"):
            check(needle in ptx, f"{name}: {needle}", ptx[:3000])
        fence = ptx.rindex("fence.proxy.async.shared::cta;")
        check(ptx.index("bar.sync", fence) - fence < 300, f"{name}: the fence precedes a barrier",
              ptx[fence - 500:fence + 500])
        tma = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        if src != portable:
            # TMA (the tiles are one 128 x 64 and one 256 x 64 box of 128-byte rows): 4 buffers
            # with a barrier each, tiles 0 and 1 before the loop and one per iteration (two
            # boxes each), one elected thread arriving with the bytes of both boxes, every
            # thread waiting on the parity of its tile's round; no cp.async.
            check(ptx.count(tma) == 6, f"{name}: six TMA copies (2 tiles ahead, 1 per trip)",
                  ptx[:3000])
            check(ptx.count("mbarrier.init.shared::cta.b64") == 4 and
                  "fence.mbarrier_init.release.cluster;" in ptx,
                  f"{name}: four barriers initialized and fenced", ptx[:3000])
            check(ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64 st, [%r") == 3 and
                  ", 49152;" in ptx, f"{name}: expect 16 KB + 32 KB per tile", ptx[:3000])
            check(ptx.count("mbarrier.try_wait.parity.shared::cta.b64") == 1,
                  f"{name}: one wait per iteration", ptx[:3000])
            check(ptx.count("fence.proxy.async.shared::cta;") == 1,
                  f"{name}: the one proxy fence is the barriers' init (no generic writes)",
                  ptx[:3000])
            check("cp.async.cg" not in ptx and "cp.async.wait" not in ptx,
                  f"{name}: no cp.async", ptx[:3000])
            check("wgmma.wait_group.sync.aligned 1;" in ptx,
                  f"{name}: one product group stays in flight", ptx[:3000])
            # Three barriers: around the barriers' init, and one per iteration, whose block
            # holds the copy of tile i + 2 (mlir_gemm_wgmma_sm90a.wave checks the order).
            last = ptx.rindex("bar.sync")
            check(ptx.count("bar.sync") == 3 and ptx[last:].count(tma) == 2,
                  f"{name}: three barriers, the loop's before its copies", ptx[:6000])
        else:
            check(tma not in ptx and "mbarrier" not in ptx,
                  f"{name}: K not a proven multiple of 8: no TMA", ptx[:3000])
        if have_ptxas:
            out = os.path.join(tmp, "w.ptx")
            open(out, "w").write(ptx)
            p = run([PTXAS, "-arch=sm_90a", "-v", out, "-o", os.path.join(tmp, "w.cubin")])
            info = p.stderr.decode()
            # C7508: ptxas dropped the setmaxnreg (no workgroups-per-SM bound at entry).
            check("0 bytes spill stores" in info and "warning" not in info and
                  "C7508" not in info,
                  f"{name}: ptxas -arch=sm_90a accepts it, no spills, no warnings, setmaxnreg "
                  "kept", info)
    # 32-deep K tiles (rows of 64 bytes, the 64-byte swizzle): not one 128-byte TMA box row,
    # so the wgmma loop keeps cp.async (one copy group in flight with one product group).
    k32 = [t if t != "-DBLOCK_K=64" else "-DBLOCK_K=32" for t in tiles]
    ptx = run([a.wavec, aligned, "--target=sm_90a", "--emit=ptx"] + k32).stdout.decode()
    check("wgmma.mma_async" in ptx and "cp.async.cg.shared.global" in ptx and
          "cp.async.wait_group 1;" in ptx and "wgmma.wait_group.sync.aligned 1;" in ptx and
          "cp.async.bulk" not in ptx and "mbarrier" not in ptx,
          "BLOCK_K=32: wgmma with cp.async, one copy and one product group in flight", ptx[:3000])
    if have_ptxas:
        out = os.path.join(tmp, "k32.ptx")
        open(out, "w").write(ptx)
        p = run([PTXAS, "-arch=sm_90a", "-v", out, "-o", os.path.join(tmp, "k32.cubin")])
        check("0 bytes spill stores" in p.stderr.decode() and "warning" not in p.stderr.decode(),
              "BLOCK_K=32: ptxas accepts it, no spills", p.stderr.decode())
    ptx = run([a.wavec, aligned, "--target=sm_90", "--emit=ptx"] + tiles).stdout.decode()
    check("wgmma" not in ptx and "mma.sync.aligned.m16n8k16" in ptx, "sm_90: mma.sync", ptx[:2000])
    ptx = run([a.wavec, aligned, "--target=sm_90a", "--emit=ptx"]).stdout.decode()
    check("wgmma" not in ptx and "mma.sync.aligned.m16n8k16" in ptx,
          "sm_90a, wave tiles of 32 rows: mma.sync", ptx[:2000])
    header, stub = os.path.join(tmp, "g.h"), os.path.join(tmp, "g.c")
    p = run([a.wavec, aligned, "--target=sm_90a", "-o", os.path.join(tmp, "g.ptx"), "--header",
             header, "--stub", stub, "--color=never"] + tiles)
    err = p.stderr.decode()
    # The emulator models wgmma, TMA, mbarriers and the producer warpgroup (emu:sm_90a): the
    # stub embeds its image next to the native code object, with no warning.
    check("[emu-unsupported]" not in err, "the stub: no emu-unsupported warning", err)
    c = open(stub).read()
    check('"emu:sm_90a"' in c and '{"sm_90a", ' in c,
          "the stub embeds the native code object and the emulator image", c[-3000:])
    # The launch builds the two tensor maps (rows M and N, K columns, rows of K * 2 bytes) and
    # passes their addresses after the 48 bytes of ABI arguments.
    check("st = wave_tensor_map_2d(device, a, dtype, (uint64_t)((int64_t)M), "
          "(uint64_t)((int64_t)K), (uint64_t)((int64_t)K) * 2, 128, 64, 128, &map);" in c and
          "st = wave_tensor_map_2d(device, b, dtype, (uint64_t)((int64_t)N), "
          "(uint64_t)((int64_t)K), (uint64_t)((int64_t)K) * 2, 256, 64, 128, &map);" in c and
          "memcpy(args + 48, &map, 8);" in c and "memcpy(args + 56, &map, 8);" in c and
          "unsigned char args[64];" in c and
          "return wave_launch(device, stream, kernel, grid, block, shared, args, args_size);"
          in c, "the stub builds both tensor maps and passes them after the ABI's arguments",
          c[-4000:])
    check("TMA tensor map of a: boxes of 128 x 64, 128-byte swizzle" in open(header).read(),
          "the header names the tensor maps", open(header).read()[:2000])
    # --emit=metadata lists the maps (wave-run builds them from it): the tensor, its type, the
    # offset of the map's address after the 48 bytes of arguments, the box and the swizzle.
    meta = json.loads(run([a.wavec, aligned, "--target=sm_90a", "--emit=metadata"] +
                          tiles).stdout.decode())
    maps = meta["kernels"][0]["tensor_maps"]
    check(maps == [{"param": "a", "type": "f16", "offset": 48, "box": [128, 64],
                    "swizzle_bytes": 128},
                   {"param": "b", "type": "f16", "offset": 56, "box": [256, 64],
                    "swizzle_bytes": 128}], "--emit=metadata lists both tensor maps", str(maps))
    # The maps survive the compile cache (KernelResources::tensorMaps in the cached entry): a
    # second compilation from the cache writes the same stub, maps included.
    cache = os.path.join(tmp, "cache")
    stubs = []
    for i in range(2):
        out = os.path.join(tmp, f"cached{i}.c")
        run([a.wavec, aligned, "--target=sm_90a", "--cache-dir", cache, "-o",
             os.path.join(tmp, f"cached{i}.ptx"), "--header", os.path.join(tmp, f"cached{i}.h"),
             "--stub", out, "--color=never"] + tiles)
        stubs.append(open(out).read().replace(f"cached{i}.h", "cached.h"))
    check(os.listdir(cache) and stubs[0] == stubs[1] and
          stubs[1].count("wave_tensor_map_2d(device,") == 4,  # native and emu:sm_90a
          "a cached compilation writes the same stub, both tensor maps included", stubs[1][-3000:])
    p = run([a.wavec, aligned, "--target=sm_90a", "--emit=emu", "-o", os.path.join(tmp, "g.wemu"),
             "--color=never"] + tiles, ok=False)
    check(p.returncode == 0 and open(os.path.join(tmp, "g.wemu"), "rb").read(8) == b"WAVEEMU1",
          "--emit=emu: the emulator image of the TMA loop", p.stderr.decode())
    if not have_ptxas:
        print(f"SKIPPED: {PTXAS} is not installed (the PTX itself was checked)")
        return SKIP


def test_wgmma_register_fence(a, tmp):
    # A wgmma loop whose last products are in flight at its end (the warp-specialized GEMM with
    # f16 C, staged and from registers): after the wait behind the loop each f32 result passes
    # through an empty asm with a tied operand (TargetLowering::registerFence), so LLVM cannot
    # hoist the epilogue's casts above the wait; without it ptxas serialized the loop's wgmmas
    # (its note C7514; docs/performance.md, "GEMM at 4096³").
    src = os.path.join(a.source_dir, "tests", "e2e", "kernels", "gemm_wgmma_tma_f16c.wave")
    for flags in ([], ["-DSTAGE=0"]):
        mlir = run([a.wavec, src, "--target=sm_90a", "--emit=mlir"] + flags).stdout.decode()
        fences = mlir.count('llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"')
        check(fences == 128, f"{flags}: 128 accumulators of a consumer lane fenced, found "
              f"{fences}", mlir[-3000:])
        wait = mlir.rfind("nvvm.wgmma.wait.group.sync.aligned 0")
        first = mlir.find('"=f,0"')
        check(0 <= wait < first, f"{flags}: the fences behind the loop's last wait", mlir[-3000:])
    ptx = os.path.join(tmp, "f.ptx")
    run([a.wavec, src, "--target=sm_90a", "-o", ptx])
    if not os.access(PTXAS, os.X_OK):
        print(f"SKIPPED: {PTXAS} is not installed (the MLIR was checked)")
        return SKIP
    info = run([PTXAS, "-arch=sm_90a", "-v", ptx, "-o", os.path.join(tmp, "f.cubin")]).stderr.decode()
    check("C7514" not in info and "0 bytes spill stores" in info,
          "ptxas: the wgmmas not serialized (no C7514), no spills", info)


def test_attention_wgmma(a, tmp):
    # samples/attention/attention_wgmma.wave on sm_90a: S = Q·Kᵀ as eight m64n64k16 wgmmas per
    # key tile (Q from registers, K through K-major descriptors over two 128-byte column blocks
    # of the 256-byte rows), O += P·V as four m64n128k16 wgmmas (P from the first product's
    # registers, V through N-major descriptors: imm-trans-b 1). By default K and V are copied
    # with TMA by a producer warpgroup whose consumers issue their scores ahead
    # (`hardware(score_ahead = 0)`: every product waited for at once); with `hardware(tma = 0)`
    # (-DTMA=0) the loop copies with cp.async and also issues its scores ahead
    # (docs/language.md 12): tile 0's scores before the loop (waited for at once); in the loop
    # the next tile's eight products are committed before this tile's four P·V products, whose
    # wait keeps one group (the P·V products) in flight, retired by a wait for everything
    # before P is made again. ptxas takes every form without spills. sm_90 refuses the form
    # cleanly (mma.sync would walk the head dim in two step sizes), writing nothing.
    src = os.path.join(a.source_dir, "samples", "attention", "attention_wgmma.wave")
    # The counts below are of 64-key tiles (the sample's default is 128).
    ahead = ["-DTMA=0", "-DBLOCK_K2=64"]
    ptx = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"] + ahead).stdout.decode()
    acc = r"\{(?:%f\d+, )*%f\d+\}"
    qk = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 " + acc +
                    r", \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, p, 1, 1, 0;", ptx)
    pv = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16 " + acc +
                    r", \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, p, 1, 1, 1;", ptx)
    check(len(qk) == 16, f"eight register-A m64n64k16 products (K-major B) before the loop and "
          f"eight in it, found {len(qk)}", ptx[:3000])
    check(len(pv) == 4, f"four register-A m64n128k16 products (N-major B), found {len(pv)}",
          ptx[:3000])
    check(ptx.count("wgmma.mma_async") == 20, "no other wgmma", ptx[:3000])
    check("mma.sync" not in ptx and "ldmatrix" not in ptx, "no mma.sync, no ldmatrix", ptx[:3000])
    # In the loop (one basic block from the barrier to the wait; LLVM may lay the loop's blocks
    # out in another order, so the whole text is searched): the barrier, the next tile's 8
    # score products and their commit, the 4 P·V products and their commit, a wait keeping one
    # group; and a wait for everything somewhere (before P is made again).
    events = re.findall(r"wgmma\.wait_group\.sync\.aligned \d|bar\.sync|wgmma\.commit_group|"
                        r"m64n64k16|m64n128k16", ptx)
    want = (["bar.sync"] + ["m64n64k16"] * 8 + ["wgmma.commit_group"] + ["m64n128k16"] * 4 +
            ["wgmma.commit_group", "wgmma.wait_group.sync.aligned 1"])
    found = any(events[i:i + len(want)] == want for i in range(len(events)))
    check(found and events.count("wgmma.wait_group.sync.aligned 1") == 1 and
          events.count("wgmma.wait_group.sync.aligned 0") == 3,
          f"the scores-ahead loop order (prologue wait, loop wait 0 and 1, final wait), found "
          f"{events}", ptx[:3000])
    check(ptx.count("bar.sync") == 2, "one barrier before the loop (tile 0's scores), one per "
          "key tile", ptx[:3000])
    check("cp.async.cg.shared.global" in ptx and "cp.async.bulk" not in ptx and
          "mbarrier" not in ptx, "scores ahead keeps cp.async (no TMA, no mbarriers)", ptx[:3000])
    # The default: K and V by TMA (docs/language.md 12): each [1, 64, 128] tile two rank-3
    # boxes of [1, 64, 64] (one per 128-byte column block) on one mbarrier expecting both tiles'
    # 32768 bytes, issued by a producer warpgroup (setmaxnreg, one barrier of all threads, none
    # in the loop, no cp.async), and the consumers' scores ahead: tile 0's full barrier and
    # scores before the loop (waited for at once); in the loop the full barrier of tile i + 1,
    # its eight score products and their commit, the four P·V products and their commit, a wait
    # keeping one group; a wait for everything, then the release of tile i - 1's buffer (lane 0
    # of each consumer warp arrives on its empty barrier).
    off = ["-DBLOCK_K2=64"]
    ptx0 = run([a.wavec, src, "--target=sm_90a", "--emit=ptx", "-DPINGPONG=1"] +
               off).stdout.decode()
    # The two consumer warpgroups take turns (ping-pong, `pingpong = 1`; docs/language.md 12):
    # before the loop the second warpgroup arrives on barrier 2; in the loop, after the wait
    # for tile i + 1, warpgroup k waits on barrier 2 + k (one branch per warpgroup), issues
    # both products and, once the second is committed, arrives on the other's barrier.
    evp = re.findall(r"wgmma\.wait_group\.sync\.aligned \d|bar\.sync \d+, \d+|"
                     r"bar\.arrive \d+, \d+|wgmma\.commit_group|m64n64k16|m64n128k16|"
                     r"mbarrier\.try_wait\.parity", ptx0)
    wantp = (["mbarrier.try_wait.parity", "bar.sync 2, 256", "bar.sync 3, 256"] +
             ["m64n64k16"] * 8 + ["wgmma.commit_group"] + ["m64n128k16"] * 4 +
             ["wgmma.commit_group", "bar.arrive 3, 256", "bar.arrive 2, 256"])
    check(any(evp[i:i + len(wantp)] == wantp for i in range(len(evp))) and
          evp.count("bar.arrive 2, 256") == 2 and evp.count("bar.sync 2, 256") == 1 and
          evp.count("wgmma.wait_group.sync.aligned 1") == 1,
          f"ping-pong: the turn taken before the products, handed on after their commits, the "
          f"first handed over before the loop; found {evp}", ptx0[:3000])
    schedp = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                  os.path.join(tmp, "s.ptx"), "-DPINGPONG=1"] + off).stderr.decode()
    check("ping-pong: the 2 consumer warpgroups take turns" in schedp,
          "the schedule dump names the ping-pong", schedp)
    # The default, `pingpong = 0`: no named barrier of the consumers but their workgroup's.
    ptx0 = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"] + off).stdout.decode()
    check("bar.arrive" not in ptx0 and "bar.sync 2" not in ptx0, "pingpong = 0: no turns",
          ptx0[:3000])
    ev0 = re.findall(r"wgmma\.wait_group\.sync\.aligned \d|bar\.sync|wgmma\.commit_group|"
                     r"m64n64k16|m64n128k16|mbarrier\.try_wait\.parity|"
                     r"mbarrier\.arrive\.shared::cta\.b64", ptx0)
    want0 = (["mbarrier.try_wait.parity"] + ["m64n64k16"] * 8 + ["wgmma.commit_group"] +
             ["m64n128k16"] * 4 + ["wgmma.commit_group", "wgmma.wait_group.sync.aligned 1"])
    check(ptx0.count("wgmma.mma_async") == 20 and
          any(ev0[i:i + len(want0)] == want0 for i in range(len(ev0))) and
          ev0.count("wgmma.wait_group.sync.aligned 1") == 1 and
          ev0.count("wgmma.wait_group.sync.aligned 0") == 3 and ptx0.count("bar.sync") == 1 and
          "mbarrier.arrive.shared::cta.b64" in ptx0,
          f"TMA with scores ahead: 20 products, the wait for tile i + 1 before its scores, "
          f"a wait keeping P·V in flight, one barrier, a release; found {ev0}", ptx0[:3000])
    # ... with `hardware(score_ahead = 0)`: every product waited for at once.
    noahead = os.path.join(tmp, "noahead.wave")
    with open(src) as f, open(noahead, "w") as g:
        g.write(f.read().replace("pingpong = PINGPONG);", "pingpong = PINGPONG, score_ahead = 0);"))
    ptxn = run([a.wavec, noahead, "--target=sm_90a", "--emit=ptx"] + off).stdout.decode()
    check(ptxn.count("wgmma.mma_async") == 12 and
          "wgmma.wait_group.sync.aligned 0;" in ptxn and
          "wgmma.wait_group.sync.aligned 1;" not in ptxn and ptxn.count("bar.sync") == 1 and
          "setmaxnreg" in ptxn and "cp.async.bulk.tensor.3d" in ptxn,
          "TMA, score_ahead = 0: 12 products, every wait retires all, one barrier", ptxn[:3000])
    # The default (128-key tiles at head dim 128): warp-specialized, scores ahead (the TMA
    # loop's register rule allows the second 64-register score accumulator).
    sched128 = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                    os.path.join(tmp, "k.ptx")]).stderr.decode()
    check("warp-specialized: a producer warpgroup" in sched128 and
          "scores ahead: the product at line" in sched128 and "ping-pong" not in sched128,
          "128-key tiles: specialized, scores ahead, no ping-pong", sched128)
    ptx128 = run([a.wavec, src, "--target=sm_90a", "--emit=ptx"]).stdout.decode()
    check(ptx128.count("m64n128k16") == 24, "128-key tiles: 8 score products before the loop, "
          f"8 + 8 in it, found {ptx128.count('m64n128k16')}", ptx128[:3000])
    sched_cp = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                    os.path.join(tmp, "c.ptx"), "-DTMA=0"]).stderr.decode()
    check("scores ahead" not in sched_cp, "cp.async with 128-key tiles: no scores ahead (its "
          "second score accumulator spilled)", sched_cp)
    tma3 = re.findall(r"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.mbarrier::"
                      r"complete_tx::bytes \[%r\d+\], \[%rd\d+, \{%r\d+, %r\d+, %r\d+\}\], "
                      r"\[%r\d+\];", ptx0)
    check(len(tma3) >= 4 and len(tma3) % 4 == 0 and "cp.async.bulk.tensor.2d" not in ptx0 and
          "mbarrier.try_wait.parity" in ptx0 and
          re.search(r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 st, \[%r\d+\], 32768;",
                    ptx0) and
          "setmaxnreg.dec.sync.aligned.u32 40" in ptx0 and
          "setmaxnreg.inc.sync.aligned.u32 232" in ptx0 and "cp.async.cg" not in ptx0,
          f"TMA: rank-3 TMA boxes, 4 per key tile (found {len(tma3)}), mbarriers, a "
          "producer warpgroup, no cp.async", ptx0[:3000])
    # ... with warp_specialize = 0: the one-workgroup TMA loop (a barrier per key tile, thread 0
    # issuing the next tile's boxes).
    plain = os.path.join(tmp, "plain.wave")
    with open(src) as f, open(plain, "w") as g:
        g.write(f.read().replace("pingpong = PINGPONG);",
                                 "pingpong = PINGPONG, warp_specialize = 0);"))
    ptxp = run([a.wavec, plain, "--target=sm_90a", "--emit=ptx"] + off).stdout.decode()
    check("cp.async.bulk.tensor.3d" in ptxp and "mbarrier.try_wait.parity" in ptxp and
          "setmaxnreg" not in ptxp and "cp.async.cg" not in ptxp and ptxp.count("bar.sync") == 3 and
          ptxp.count("wgmma.mma_async") == 12 and "wgmma.wait_group.sync.aligned 1;" not in ptxp,
          "warp_specialize = 0: the TMA loop without a producer (barriers before and after the "
          "mbarrier init, one per key tile) and without scores ahead", ptxp[:3000])
    sched = run([a.wavec, src, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                 os.path.join(tmp, "s.ptx")] + off).stderr.decode()
    check("copies: TMA" in sched and "warp-specialized: a producer warpgroup" in sched and
          "scores ahead: the product at line" in sched,
          "TMA: the schedule dump says TMA, specialized, scores ahead", sched)
    schedn = run([a.wavec, noahead, "--target=sm_90a", "--print-ir-after=schedule", "-o",
                  os.path.join(tmp, "n.ptx")] + off).stderr.decode()
    check("copies: TMA" in schedn and "warp-specialized: a producer warpgroup" in schedn and
          "scores ahead" not in schedn, "score_ahead = 0: the schedule dump says no scores "
          "ahead", schedn)
    # The stub builds rank-3 maps of k and v (dims B, K2, D; row-major byte strides; boxes of
    # 1 x 64 x 64) with wave_tensor_map; --emit=metadata lists them for wave-run.
    header, stub = os.path.join(tmp, "t.h"), os.path.join(tmp, "t.c")
    run([a.wavec, src, "--target=sm_90a", "-o", os.path.join(tmp, "t.ptx"), "--header", header,
         "--stub", stub] + off)
    c = open(stub).read()
    check(c.count("st = wave_tensor_map(device, k, dtype, 3, dims, strides, box, 128, &map);")
          == 2 and  # native and emu:sm_90a
          c.count("st = wave_tensor_map(device, v, dtype, 3, dims, strides, box, 128, &map);") == 2
          and "const uint32_t box[3] = {1, 64, 64};" in c and
          "strides[2] = {2 * (uint64_t)((int64_t)K2) * (uint64_t)(INT64_C(128)), "
          "2 * (uint64_t)(INT64_C(128))};" in c and "wave_tensor_map_2d" not in c,
          "the stub builds the rank-3 maps of k and v", c[-5000:])
    check("TMA tensor map of k: boxes of 1 x 64 x 64, 128-byte swizzle" in open(header).read(),
          "the header names the rank-3 maps", open(header).read()[:2000])
    meta = json.loads(run([a.wavec, src, "--target=sm_90a", "--emit=metadata"] +
                          off).stdout.decode())
    maps = meta["kernels"][0]["tensor_maps"]
    check([(m["param"], m["box"], m["swizzle_bytes"]) for m in maps] ==
          [("k", [1, 64, 64], 128), ("v", [1, 64, 64], 128)],
          "--emit=metadata lists the rank-3 maps", str(maps))
    out = os.path.join(tmp, "x.ptx")
    p = run([a.wavec, src, "--target=sm_90", "-o", out, "--color=never"], ok=False)
    check(p.returncode == 1 and "[unsupported-mma-step]" in p.stderr.decode() and
          not os.path.exists(out), "sm_90: a clean unsupported-mma-step error, no output",
          p.stderr.decode())
    if not os.access(PTXAS, os.X_OK):
        print(f"SKIPPED: {PTXAS} is not installed (the PTX itself was checked)")
        return SKIP
    for flags in ([], off, ["-DD=64"], ["-DD=64"] + off, ["-DPINGPONG=1"],
                  ["-DPINGPONG=1", "-DD=64"], ["-DPINGPONG=1"] + off, ahead,
                  ["-DTMA=0"], ahead + ["-DD=64"], ["-DTMA=0", "-DD=64"]):
        ptx = os.path.join(tmp, "a.ptx")
        run([a.wavec, src, "--target=sm_90a", "-o", ptx] + flags)
        p = run([PTXAS, "-arch=sm_90a", "-v", ptx, "-o", os.path.join(tmp, "a.cubin")])
        info = p.stderr.decode()
        check("0 bytes spill stores" in info and "warning" not in info and "C7514" not in info,
              f"{' '.join(flags) or 'defaults'}: ptxas -arch=sm_90a accepts it, no spills, "
              "wgmmas not serialized", info)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wavec", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("test")
    a = ap.parse_args()
    a.readelf = os.path.join(a.tools, "llvm-readelf")
    a.dwarfdump = os.path.join(a.tools, "llvm-dwarfdump")
    a.copy = os.path.join(a.source_dir, "samples", "copy", "copy.wave")
    fn = globals().get("test_" + a.test)
    if not fn:
        print("unknown test", a.test)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        try:
            rc = fn(a, tmp)
        except Failure as f:
            print("FAIL:", f)
            return 1
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
