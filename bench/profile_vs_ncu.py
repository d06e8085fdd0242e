#!/usr/bin/env python3
"""The emulator profiler's memory counters (wave-run --profile) against Nsight Compute on an H100.

Two halves, because the GPU machine has no wavec:
  prepare (here):   bench/profile_vs_ncu.py prepare --build build --out DIR
      compiles each case with ./build/wavec for sm_90 / sm_90a (cubin + generated header and
      stub), writes a small C host program per case that launches the kernel once on random
      inputs, profiles the SAME kernel at the SAME sizes on emu:sm_90 (emu:sm_90a) with wave-run
      (DIR/CASE/emu.json), and copies the runtime sources, this script and run.sh into DIR.
  on the device:    bash DIR/run.sh     (OUT=... ; builds the runtime and the host programs,
      runs each under `ncu --csv --page raw --metrics ...` for the one launch of the kernel,
      then `profile_vs_ncu.py compare DIR` prints the table)
  compare:          bench/profile_vs_ncu.py compare DIR [--markdown] [--fail-above 0.05]
      (bench/results/profile_vs_ncu_h100 holds the emulator JSON and ncu CSV of the 2026-11-25
      run on an H100, and of the sm_90a GEMMs of 2026-11-26 on an H200 with ncu_full.csv;
      docs/performance.md has its table)

What is compared, per kernel (totals over the launch):
  global load / store sectors: emulator `sectors` of its global load / store sites against
      l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / _op_st.sum; cp.async's global side
      against l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum.
  shared memory: the emulator's wavefronts and bank conflicts (wavefronts - phases) per kind of
      instruction (ld, st, ldmatrix) against smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_*
      and the ideal wavefronts, and the l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_* counters.
  sm_90a: wgmma's operand wavefronts (op_gmma) and instructions, TMA instructions and sectors
      (the TMA unit's L1<->L2 traffic), apart from the LSU rows.
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# GEMM variants as scripts/make_devrun_gemm.sh builds them.
MAIN = "-DBLOCK_M=128 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=64"
WG = "-DBLOCK_M=128 -DBLOCK_N=256 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=256"

# name, source (relative to the repository, or "aligned:" + one for the K % 8 == 0 copy),
# kernel, target, wavec -D flags, sizes, tensors (name, element type, element count expression)
CASES = [
    ("copy", "samples/copy/copy.wave", "copy", "sm_90", "",
     {"M": 250, "N": 4093}, [("a", "f16", "M*N"), ("b", "f16", "M*N")]),
    ("transpose", "tests/e2e/kernels/transpose.wave", "transpose", "sm_90", "",
     {"M": 200, "N": 300}, [("a", "f32", "M*N"), ("b", "f32", "M*N")]),
    # Uncoalesced: f16 elements stored down columns (ragged: 70 x 301), and a column softmax
    # reading f32 with a stride of a row.
    ("transpose_store", "tests/e2e/kernels/transpose_store.wave", "transpose_store", "sm_90", "",
     {"M": 70, "N": 301}, [("a", "f16", "M*N"), ("b", "f16", "M*N")]),
    ("softmax_cols", "tests/e2e/kernels/softmax_cols.wave", "softmax_cols", "sm_90", "",
     {"M": 37, "N": 1000}, [("x", "f32", "M*N"), ("y", "f32", "M*N")]),
    ("gemm_mma", "samples/gemm/gemm_portable.wave", "gemm", "sm_90", MAIN,
     {"M": 250, "N": 130, "K": 190},
     [("a", "f16", "M*K"), ("b", "f16", "N*K"), ("c", "f32", "M*N")]),
    ("gemm_mma_async", "aligned:samples/gemm/gemm_portable.wave", "gemm", "sm_90", MAIN,
     {"M": 250, "N": 130, "K": 192},
     [("a", "f16", "M*K"), ("b", "f16", "N*K"), ("c", "f32", "M*N")]),
    ("gemm_wgmma", "aligned:samples/gemm/gemm_portable.wave", "gemm", "sm_90a", WG,
     {"M": 250, "N": 130, "K": 264},
     [("a", "f16", "M*K"), ("b", "f16", "N*K"), ("c", "f32", "M*N")]),
    # The same with N a multiple of 8: the staged epilogue (C through shared memory, TMA stores).
    ("gemm_wgmma_epi", "aligned_n8:samples/gemm/gemm_portable.wave", "gemm", "sm_90a", WG,
     {"M": 250, "N": 136, "K": 264},
     [("a", "f16", "M*K"), ("b", "f16", "N*K"), ("c", "f32", "M*N")]),
    ("softmax", "samples/softmax/softmax.wave", "softmax", "sm_90", "-DWAVES=4",
     {"M": 37, "N": 3001}, [("x", "f32", "M*N"), ("y", "f32", "M*N")]),
    ("softmax_rows", "samples/softmax/softmax_rows.wave", "softmax_rows", "sm_90",
     "-DN=8192 -DWAVES=8", {"M": 37}, [("x", "f32", "M*8192"), ("y", "f32", "M*8192")]),
    ("attention", "samples/attention/attention.wave", "attention", "sm_90", "-DD=64",
     {"B": 2, "M": 100, "K2": 77},
     [("q", "f16", "B*M*64"), ("k", "f16", "B*K2*64"), ("v", "f16", "B*K2*64"),
      ("o", "f16", "B*M*64")]),
]

METRICS = ",".join([
    r"regex:^l1tex__t_sectors_pipe_lsu_mem_global_op_(ld|st|ldgsts|ldgsts_cache_bypass|ldgsts_cache_access)\.sum$",
    r"regex:^l1tex__t_requests_pipe_lsu_mem_global_op_(ld|st|ldgsts)\.sum$",
    r"regex:^l1tex__data_bank_conflicts_pipe_lsu_mem_shared(_op_(ld|st|ldgsts|ldsm))?\.sum$",
    r"regex:^l1tex__data_pipe_lsu_wavefronts_mem_shared(_op_(ld|st|ldgsts|ldsm))?\.sum$",
    r"regex:^smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_(ld|st|ldsm|ldgsts)\.sum$",
    r"regex:^smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_(ldsm|ldgsts)\.sum$",
    r"regex:^smsp__sass_inst_executed_op_(global_ld|global_st|shared_ld|shared_st|ldsm|ldgsts)\.sum$",
    r"regex:^smsp__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_(ld|st|ldgsts)\.sum$",
    r"regex:^smsp__sass_data_bytes_mem_shared_op_(ld|st|ldsm|ldgsts)\.sum$",
    # sm_90a: wgmma's operand reads (they go through the LSU data stage as op_gmma, not as
    # loads), TMA copies (the TMA unit: bytes between L2 and L1, instructions) and the rest of
    # the shared pipe (mbarriers).
    r"regex:^l1tex__data_pipe_lsu_wavefronts_mem_shared_op_(gmma|misc|atom)\.sum$",
    r"regex:^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma\.sum$",
    r"regex:^smsp__sass_(data_bytes_mem_shared_op_gmma|inst_executed_op_shared_gmma)\.sum$",
    r"regex:^smsp__inst_executed_op_tma_(ld|st)\.sum$",
    r"regex:^l1tex__m_xbar2l1tex_read_(bytes|sectors)_mem_global_op_tma_ld\.sum$",
    r"regex:^l1tex__m_l1tex2xbar_write_(bytes|sectors)_mem_global_op_tma_st\.sum$",
])

HOST = r"""/* Generated by bench/profile_vs_ncu.py: launches %(kernel)s once on random inputs. */
#include "%(kernel)s.h"
#include "sample_util.h"
int main(void) {
  %(sizes)s
  uint32_t seed = 12345;
  wave_device_t dev = sample_open_device();
  wave_stream_t stream;
  SAMPLE_CHECK(wave_stream_create(dev, &stream));
%(buffers)s
  SAMPLE_CHECK(%(kernel)s_launch(stream, %(args)s));
  SAMPLE_CHECK(wave_stream_synchronize(stream));
  printf("%(name)s: launched %(kernel)s once\n");
  return 0;
}
"""


def sizes_of(case):
    return case[5]


def prepare(args):
    build = os.path.abspath(args.build)
    wavec, waverun = os.path.join(build, "wavec"), os.path.join(build, "wave-run")
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copytree(os.path.join(SRC, "runtime", "include"), os.path.join(out, "runtime", "include"))
    shutil.copytree(os.path.join(SRC, "runtime", "src"), os.path.join(out, "runtime", "src"))
    shutil.copytree(os.path.join(SRC, "runtime", "format"), os.path.join(out, "runtime", "format"))
    shutil.copy(os.path.join(SRC, "samples", "common", "sample_util.h"), out)
    shutil.copy(os.path.abspath(__file__), out)
    # The aligned GEMM as scripts/make_devrun_gemm.sh makes it: `assume(K % 8 == 0)` lets every
    # 16-byte copy go through cp.async.
    text = open(os.path.join(SRC, "samples/gemm/gemm_portable.wave")).read()
    aligned = re.sub(r"^    assume\(K > BLOCK_K \* 4\);",
                     "    assume(K > BLOCK_K * 4);\n    assume(K % 8 == 0);", text, flags=re.M)
    assert "K % 8 == 0" in aligned
    with open(os.path.join(out, "gemm_aligned.wave"), "w") as f:
        f.write(aligned)
    with open(os.path.join(out, "gemm_aligned_n8.wave"), "w") as f:
        f.write(aligned.replace("    assume(K % 8 == 0);\n",
                                "    assume(K % 8 == 0);\n    assume(N % 8 == 0);\n"))
    only = set(args.only.split(",")) if args.only else None
    for name, source, kernel, target, flags, sizes, tensors in CASES:
        if only and name not in only:
            continue
        d = os.path.join(out, name)
        os.makedirs(d)
        src = (os.path.join(out, "gemm_aligned.wave") if source.startswith("aligned:")
               else os.path.join(out, "gemm_aligned_n8.wave") if source.startswith("aligned_n8:")
               else os.path.join(SRC, source))
        fl = flags.split()
        subprocess.run([wavec, src, "--target=" + target, "--no-cache", *fl,
                        "-o", os.path.join(d, kernel + ".cubin"),
                        "--header", os.path.join(d, kernel + ".h"),
                        "--stub", os.path.join(d, kernel + ".c")], check=True)
        # The launch prototype: tensors in parameter order, then scalars, then the dynamic symbols.
        header = open(os.path.join(d, kernel + ".h")).read()
        m = re.search(r"wave_status_t\s+%s_launch\s*\((.*?)\);" % kernel, header)
        params = [p.strip() for p in re.sub(r"/\*.*?\*/", "", m.group(1)).split(",")][1:]
        names = {t[0]: t for t in tensors}
        bufs, argv = [], []
        for p in params:
            pname = re.split(r"[\s*]+", p)[-1]
            if pname in names:
                _, ty, count = names[pname]
                es = 2 if ty == "f16" else 4
                gen = "sample_rand_f16(&seed)" if ty == "f16" else "sample_rand_f32(&seed)"
                cty = "uint16_t" if ty == "f16" else "float"
                bufs.append(
                    "  void *%(n)s; size_t %(n)s_n = (size_t)(%(c)s);\n"
                    "  %(t)s *%(n)s_h = malloc(%(n)s_n * %(e)d);\n"
                    "  for (size_t i = 0; i < %(n)s_n; ++i) %(n)s_h[i] = %(g)s;\n"
                    "  SAMPLE_CHECK(wave_malloc(dev, %(n)s_n * %(e)d, &%(n)s));\n"
                    "  SAMPLE_CHECK(wave_memcpy_htod(dev, %(n)s, %(n)s_h, %(n)s_n * %(e)d));"
                    % dict(n=pname, c=count, t=cty, e=es, g=gen))
                argv.append(pname)
            elif pname in sizes:
                argv.append(pname)
            elif p.startswith("float"):
                argv.append("0.125f")
            else:
                raise SystemExit("%s: parameter '%s' has no value" % (name, p))
        decl = " ".join("int64_t %s = %d;" % kv for kv in sizes.items())
        with open(os.path.join(d, "main.c"), "w") as f:
            f.write(HOST % dict(kernel=kernel, name=name, sizes=decl, buffers="\n".join(bufs),
                                args=", ".join(argv)))
        with open(os.path.join(d, "kernel"), "w") as f:
            f.write(kernel + "\n")
        # The emulator's profile of the same kernel at the same sizes.
        cmd = [waverun, src, "--kernel", kernel, *fl, "--device", "emu:sm_90" if target == "sm_90"
               else "emu:" + target, "--seed", "1", "--profile-format=json",
               "--profile-output", os.path.join(d, "emu.json")]
        for k, v in sizes.items():
            cmd += ["--size", "%s=%d" % (k, v)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(d, "emu.log"), "w") as f:
            f.write(" ".join(cmd).replace(SRC + "/", "") + "\n" + r.stdout + r.stderr)
        print("%-16s emulator: %s" % (name, "ok" if r.returncode == 0 else
                                       "exit %d: %s" % (r.returncode, r.stderr.strip()[-200:])))
    with open(os.path.join(out, "run.sh"), "w") as f:
        f.write(RUN_SH.replace("@METRICS@", METRICS))
    os.chmod(os.path.join(out, "run.sh"), 0o755)


RUN_SH = r"""#!/usr/bin/env bash
# Generated by bench/profile_vs_ncu.py prepare: builds the runtime and one host program per case,
# runs each under Nsight Compute (the one launch of its kernel) and prints the comparison.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" obj
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ncu --version | tail -1
ls runtime/src/*.cpp runtime/src/emu/*.cpp | xargs -P 16 -I{} sh -c \
  'g++ -O2 -std=c++17 -fPIC -Iruntime/include -Iruntime/src -Iruntime/format -c {} -o obj/$(echo {} | tr / _).o'
g++ -shared obj/*.o -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
for d in */; do
  d=${d%/}
  [ -f $d/main.c ] || continue
  k=$(cat $d/kernel)
  cc -O2 -std=c99 -Iruntime/include -I. -I$d $d/main.c $d/$k.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -lm -o $d/main 2>&1 | tail -3
  WAVE_DEVICE=cuda://0 timeout 60 ./$d/main; echo "$d plain exit $?"
  WAVE_DEVICE=cuda://0 timeout 120 ncu --csv --page raw --kernel-name regex:"^$k\$" \
    --launch-count 1 --metrics '@METRICS@' ./$d/main > $d/ncu.csv 2> $d/ncu.err
  echo "$d ncu exit $?"
  if grep -q LDGSTS <(cuobjdump -sass $d/$k.cubin 2>/dev/null); then
    WAVE_DEVICE=cuda://0 timeout 120 ncu --csv --page raw --kernel-name regex:"^$k\$" \
      --launch-count 1 --metrics '@METRICS@' ./$d/main > $d/ncu2.csv 2>> $d/ncu.err
  fi
  # TMA and wgmma (UTMALDG/UTMASTG, HGMMA): what the lsu-pipe metrics above show for them, and
  # every metric of the full set, to find the TMA unit's own counters (ncu_full.csv).
  if grep -q UTMA <(cuobjdump -sass $d/$k.cubin 2>/dev/null); then
    WAVE_DEVICE=cuda://0 timeout 300 ncu --csv --page raw --kernel-name regex:"^$k\$" \
      --launch-count 1 --set full ./$d/main > $d/ncu_full.csv 2>> $d/ncu.err
    echo "$d ncu full exit $?"
    [ -f metrics_gh100.txt ] || ncu --query-metrics --chip gh100 > metrics_gh100.txt 2>&1
  fi
  command -v cuobjdump > /dev/null && cuobjdump -sass $d/$k.cubin > $d/sass.txt 2>&1
done
python3 profile_vs_ncu.py compare . --markdown > "$OUT/table.md"
cat "$OUT/table.md"
} 2>&1 | tee "$OUT/run.log"
tar czf "$OUT/results.tgz" */ncu*.csv */ncu.err */emu.json */emu.log */sass.txt metrics_gh100.txt 2>/dev/null
"""


def read_ncu(path):
    """The metric values of the one profiled launch in an `ncu --csv --page raw` file."""
    if not os.path.exists(path):
        return None
    text = open(path).read()
    lines = [l for l in text.splitlines() if l.startswith('"')]
    if len(lines) < 3:
        return None
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    head, units, vals = rows[0], rows[1], rows[2]
    out = {}
    for h, u, v in zip(head, units, vals):
        try:
            x = float(v.replace(",", ""))
        except ValueError:
            continue
        scale = {"Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(u, 1)
        out[h] = x * scale
    return out


def emu_counts(path):
    """Per kind of instruction: global sectors (ld, st, ldgsts) and shared phases, wavefronts and
    conflicts (ld, st, ldsm) from the emulator's JSON profile."""
    if not os.path.exists(path):
        return None
    prof = json.load(open(path))
    k = prof["kernels"][0]
    c = {}

    def add(key, v):
        c[key] = c.get(key, 0) + v
    for s in k["sites"]:
        op = s["op"]
        if s["space"] == "global":
            # TMA copies go through the TMA unit, not the LSU pipe: kept apart (tma_ld, tma_st).
            kind = ("ldgsts" if op == "cp.async" else "tma_ld" if op == "tma_load" else
                    "tma_st" if op == "tma_store" else
                    "st" if op in ("store", "masked_store", "buffer_store") else "ld")
            add("g_" + kind + "_sectors", s["global"]["sectors"])
            add("g_" + kind + "_execs", s["executions"])
        else:
            kind = "ldsm" if op == "ldmatrix" else "st" if op in ("store", "masked_store") else "ld"
            add("s_" + kind + "_wavefronts", s["shared"]["wavefronts"])
            add("s_" + kind + "_phases", s["shared"]["phases"])
            add("s_" + kind + "_conflicts", s["shared"]["bank_conflicts"])
            add("s_" + kind + "_execs", s["executions"])
    for key, v in k.get("wgmma", {}).items():  # sm_90a: wgmma's operand reads
        add("wgmma_" + key, v)
    for key, v in k.get("tma", {}).items():  # sm_90a: the TMA loads' zero fill
        add("tma_" + key, v)
    return c


def rows_for(name, emu, ncu):
    """(metric, emulator, ncu) rows; None where a side has no number."""
    g = lambda m: None if ncu is None else ncu.get(m)
    e = lambda m: None if emu is None else emu.get(m, 0)
    # ncu's global-load sectors include LDGSTS (cp.async): compare them with the emulator's load
    # and cp.async sites together, and the LDGSTS part on its own.
    ld = None if emu is None else e("g_ld_sectors") + e("g_ldgsts_sectors")
    rows = [
        ("global ld sectors (incl. cp.async)", ld,
         g("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")),
        ("global st sectors", e("g_st_sectors"), g("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")),
        # L1 requests: one per wave instruction that reads global memory (a cp.async whose lanes
        # all copy 0 source bytes, a masked-off tile's zero fill, makes none).
        ("global ld requests (instructions)", None if emu is None else
         e("g_ld_execs") + e("g_ldgsts_execs"), g("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")),
        ("shared ld wavefronts", e("s_ld_wavefronts"),
         g("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")),
        ("shared st wavefronts", e("s_st_wavefronts"),
         g("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum")),
        ("ldmatrix wavefronts", e("s_ldsm_wavefronts"),
         g("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum")),
        ("shared ld bank conflicts", e("s_ld_conflicts"),
         g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")),
        ("shared st bank conflicts", e("s_st_conflicts"),
         g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")),
        ("ldmatrix bank conflicts", e("s_ldsm_conflicts"),
         g("smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum")),
        # Instruction counts (wave executions), to tell a different split of accesses into
        # instructions from a different count per instruction.
        ("global ld instructions", e("g_ld_execs"), g("smsp__sass_inst_executed_op_global_ld.sum")),
        ("global st instructions", e("g_st_execs"), g("smsp__sass_inst_executed_op_global_st.sum")),
        ("cp.async instructions", e("g_ldgsts_execs"), g("smsp__sass_inst_executed_op_ldgsts.sum")),
        ("shared ld instructions", e("s_ld_execs"), g("smsp__sass_inst_executed_op_shared_ld.sum")),
        ("shared st instructions", e("s_st_execs"), g("smsp__sass_inst_executed_op_shared_st.sum")),
        ("ldmatrix instructions", e("s_ldsm_execs"), g("smsp__sass_inst_executed_op_ldsm.sum")),
        ("cp.async shared wavefronts", None,
         g("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum")),
        ("cp.async shared bank conflicts", None,
         g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum")),
        # sm_90a. wgmma reads its operands through the LSU data stage (op_gmma): the emulator
        # counts A's rows and B once per warpgroup instruction in 128-byte wavefronts, without
        # conflicts (the swizzled layouts).
        ("wgmma instructions", e("wgmma_warp_instructions"),
         g("smsp__sass_inst_executed_op_shared_gmma.sum")),
        ("wgmma shared bytes", e("wgmma_shared_bytes"),
         g("smsp__sass_data_bytes_mem_shared_op_gmma.sum")),
        ("wgmma shared wavefronts", e("wgmma_shared_wavefronts"),
         g("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum")),
        ("wgmma shared bank conflicts", None if emu is None or not e("wgmma_warp_instructions")
         else 0, g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum")),
        # TMA (the TMA unit, not the LSU pipe): instructions (a box wholly outside the tensor
        # too), the sectors L1 receives from L2 for the loads: the emulator's sectors of each box
        # row's part inside the tensor plus its part outside in whole sectors (a rule read off
        # the two sm_90a profiles of bench/results/profile_vs_ncu_h100, so diagnostic), and the
        # sectors the stores send.
        ("TMA load instructions", e("g_tma_ld_execs"), g("smsp__inst_executed_op_tma_ld.sum")),
        ("TMA store instructions", e("g_tma_st_execs"), g("smsp__inst_executed_op_tma_st.sum")),
        ("TMA load sectors incl. zero fill (diagnostic)",
         None if emu is None else e("g_tma_ld_sectors") + e("tma_zero_fill_sectors"),
         g("l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum")),
        ("TMA store sectors", e("g_tma_st_sectors"),
         g("l1tex__m_l1tex2xbar_write_sectors_mem_global_op_tma_st.sum")),
    ]
    shared = any(x for m, a, b in rows if "wavefronts" in m for x in (a, b))
    keep = lambda m, a, b: (a or b) or ("bank conflicts" in m and shared and "cp.async" not in m
                                        and (a is not None or b is not None))
    return [(m, a, b) for m, a, b in rows if keep(m, a, b)]


def fmt(x):
    return "-" if x is None else "%d" % round(x)


def compare(args):
    d = os.path.abspath(args.dir)
    out = []
    worst = 0.0
    for case in CASES:
        name = case[0]
        if not os.path.isdir(os.path.join(d, name)):
            continue
        emu = emu_counts(os.path.join(d, name, "emu.json"))
        ncu = read_ncu(os.path.join(d, name, "ncu.csv"))
        full = read_ncu(os.path.join(d, name, "ncu_full.csv"))  # sm_90a: --set full
        if ncu is not None and full:
            ncu = dict(full, **ncu)
        for metric, a, b in rows_for(name, emu, ncu):
            if a is None or b is None:
                ratio = "-"
            elif b == 0:
                ratio = "1.000" if a == 0 else "inf"
            else:
                ratio = "%.3f" % (a / b)
                if "instructions" not in metric and "diagnostic" not in metric:
                    worst = max(worst, abs(a / b - 1))
            out.append((name, metric, fmt(a), fmt(b), ratio))
    if args.markdown:
        print("| kernel | metric | emulator | ncu | emulator / ncu |")
        print("| --- | --- | ---: | ---: | ---: |")
        for r in out:
            print("| %s |" % " | ".join(r))
    else:
        for r in out:
            print("%-16s %-32s %12s %12s %8s" % r)
    print("\nlargest |emulator / ncu - 1| over the sector, wavefront and conflict rows where both "
          "sides counted: %.3f (instruction and TMA sector rows are diagnostics)" % worst)
    if args.fail_above is not None and worst > args.fail_above:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--build", default=os.path.join(SRC, "build"))
    p.add_argument("--out", required=True)
    p.add_argument("--only", help="comma-separated case names")
    c = sub.add_parser("compare")
    c.add_argument("dir")
    c.add_argument("--markdown", action="store_true")
    c.add_argument("--fail-above", type=float,
                   help="exit 1 when a sector, wavefront or conflict row is off by more than this")
    a = ap.parse_args()
    prepare(a) if a.cmd == "prepare" else compare(a)


if __name__ == "__main__":
    main()
