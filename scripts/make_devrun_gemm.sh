#!/usr/bin/env bash
# Prepares a self-contained directory for a GEMM run on an NVIDIA device that has no wavec:
# cubins + headers + stubs of several tile variants (compiled here), the runtime sources, the
# C sample and the torch bench, and run.sh which builds and runs everything there.
#   scripts/make_devrun_gemm.sh WAVEC OUTDIR [CONTROL_WAVEC]
# CONTROL_WAVEC (another build, e.g. of the commit before a change) compiles the main variant
# once more as "ctl_..." so that both are measured in the same process. On the device,
# `PROFILE=VARIANT bash run.sh` also profiles that variant at 4096^3 with Nsight Compute (and
# ROUNDS, SHAPES, below, control the timing), and
# the SASS of every variant is written to $OUT/sass.txt when cuobjdump is there.
set -euo pipefail
wavec=$1 out=$2 control=${3:-} src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/runtime" "$out/samples"
cp -r "$src/runtime/include" "$src/runtime/src" "$src/runtime/format" "$out/runtime/"
cp "$src/scripts/devrun_prelude.sh" "$out/"
cp -r "$src/samples/common" "$out/samples/"
mkdir -p "$out/samples/gemm" && cp "$src/samples/gemm/gemm_main.c" "$out/samples/gemm/"
cp "$src/bench/gemm_cuda.py" "$src/bench/gemm_dyn_ptx.py" "$src/bench/wave_bench.py" "$out/"
# The "async" variants add `assume(K % 8 == 0)`: every 16-byte copy is then aligned and whole,
# and the loop double-buffers through cp.async; the others take the register-prefetch path.
aligned=$(mktemp --suffix=.wave)
trap 'rm -f "$aligned" "$bf16"' EXIT
sed 's/^    assume(K > BLOCK_K \* 4);/&\n    assume(K % 8 == 0);/' "$src/samples/gemm/gemm_portable.wave" > "$aligned"
grep -q 'K % 8 == 0' "$aligned"
bf16=$(mktemp --suffix=.wave)
sed 's/f16]/bf16]/g' "$aligned" > "$bf16"
grep -q 'bf16]' "$bf16"
# name: source: -D flags [: target, default sm_90]
main="-DBLOCK_M=128 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=64"
wide="-DBLOCK_M=256 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=64"
# wgmma (sm_90a): two warpgroups of 64 x 256, 64-deep K tiles (128-byte swizzle), 4 buffers.
wg="-DBLOCK_M=128 -DBLOCK_N=256 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=256"
variants=(
  "t128x128x32_w64x64:$src/samples/gemm/gemm_portable.wave:$main"
  "t128x128x32_w64x64_async:$aligned:$main"
  "t256x128x32_w64x64_async:$aligned:$wide"
  "t128x256x32_w64x64_async:$aligned:-DBLOCK_M=128 -DBLOCK_N=256 -DWAVE_M=64 -DWAVE_N=64"
  "t64x64x32_w32x32_async:$aligned:"
  "t256x128x32_w64x64_async_bf16:$bf16:$wide"
  "t128x256x64_w64x256_async_wgmma:$aligned:$wg:sm_90a"
  "t128x256x64_w64x256_async_wgmma_bf16:$bf16:$wg:sm_90a"
)
# GEMM_VARIANTS (optional) replaces the list: lines of NAME:SOURCE:FLAGS[:TARGET], SOURCE one
# of portable, aligned, bf16.
if [ -n "${GEMM_VARIANTS:-}" ]; then
  variants=()
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    name=${line%%:*} rest=${line#*:}
    case ${rest%%:*} in
      portable) file=$src/samples/gemm/gemm_portable.wave;;
      aligned) file=$aligned;;
      bf16) file=$bf16;;
      *) echo "GEMM_VARIANTS: unknown source '${rest%%:*}'" >&2; exit 2;;
    esac
    variants+=("$name:$file:${rest#*:}")
  done <<< "$GEMM_VARIANTS"
fi
[ -n "$control" ] && variants+=("ctl_t128x128x32_w64x64_async:$aligned:$main")
for v in "${variants[@]}"; do
  name=${v%%:*} rest=${v#*:}
  file=${rest%%:*} flags=${rest#*:} target=sm_90
  if [[ $flags == *:* ]]; then target=${flags##*:} flags=${flags%:*}; fi
  compiler=$wavec
  case $name in ctl_*) compiler=$control;; esac
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  "$compiler" "$file" --target=$target $flags \
    -o "$out/$name/gemm.cubin" --header "$out/$name/gemm.h" --stub "$out/$name/gemm.c"
  echo "$target $flags" > "$out/$name/flags"
done
mkdir -p "$out/batched"
"$wavec" "$src/tests/codegen/inputs/gemm_batched.wave" --target=sm_90 -o "$out/batched/gemm.cubin" \
  --header "$out/batched/bgemm.h" --stub "$out/batched/gemm.c"
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")" && . ./devrun_prelude.sh
specs=()
cc -O2 -std=c99 -shared -fPIC -Iruntime/include -Ibatched batched/gemm.c -L. -Wl,-rpath,$PWD \
  -lwave_runtime -o batched/libgemm.so 2>&1 | tail -3
specs+=("batched=$PWD/batched/libgemm.so@batched")
for d in t*/ ctl_*/; do
  [ -d "$d" ] || continue
  d=${d%/}
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
  case $d in *bf16*) specs+=("$d=$PWD/$d/libgemm.so@bf16"); continue;; esac
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d samples/gemm/gemm_main.c $d/gemm.c \
    -L. -Wl,-rpath,$PWD -lwave_runtime -lm -o $d/gemm_main 2>&1 | tail -3
  specs+=("$d=$PWD/$d/libgemm.so")
done
{
  for d in t*/; do
    d=${d%/}
    [ -x $d/gemm_main ] || continue
    # The last four have K > 256 for the 64-deep K tiles (the sample assumes K > 4 tiles) and
    # a ragged K tail (389: not a multiple of 8, for variants without that assumption); 1 x 1
    # masks everything but one element.
    for shape in "250 130 192" "256 256 256" "1000 1000 1000" "129 67 520" "250 130 190" \
                 "250 130 392" "300 77 264" "1 1 264" "131 67 389"; do
      WAVE_DEVICE=cuda://0 timeout 60 ./$d/gemm_main $shape; echo "$d $shape exit $?"
    done
  done
} 2>&1 | tee "$OUT/c_sample.log"
if command -v cuobjdump > /dev/null; then
  for d in t*/ ctl_*/; do
    [ -f "$d/gemm.cubin" ] || continue
    echo "=== ${d%/}"
    cuobjdump -sass "$d/gemm.cubin"
  done > "$OUT/sass.txt" 2>&1
  # Matrix instructions per variant: HGMMA (wgmma) or HMMA (mma.sync).
  awk '/^=== /{v=$2} /HGMMA/{g[v]++} /HMMA/{h[v]++} END{for (k in g) print k, "HGMMA", g[k];
       for (k in h) print k, "HMMA", h[k]}' "$OUT/sass.txt"
fi
# ROUNDS=R interleaves R timing rounds of torch and the variants; SHAPES="M,N,K ..." replaces the
# default shapes.
# shellcheck disable=SC2086
timeout 400 python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" ${ROUNDS:+--rounds $ROUNDS} \
  ${SHAPES:+--shapes $SHAPES} 2>&1 | tee "$OUT/bench.log"
if [ -n "${PROFILE:-}" ] && command -v ncu > /dev/null; then
  # One launch of each variant at 4096^3 (the kernel is named `gemm`; cuBLAS's are not): the
  # summary sections, then stall reasons, shared-memory wavefronts and bank conflicts, L2 traffic.
  for v in $PROFILE; do
    echo "=== $v"
    timeout 100 ncu --kernel-name regex:'^gemm$' --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section Occupancy --section SchedulerStats --section WarpStateStats \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:l1tex__data_bank_conflicts_pipe_lsu_mem_shared.*\.sum$,regex:l1tex__data_pipe_lsu_wavefronts_mem_shared.*\.sum$,smsp__inst_executed_op_ldsm.sum,lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex.sum" \
      python3 gemm_cuda.py "$PWD/libwave_runtime.so" "$v=$PWD/$v/libgemm.so" \
      --quick --shapes 4096,4096,4096 2>&1
  done > "$OUT/ncu.txt"
  tail -5 "$OUT/ncu.txt"
fi
RUN
chmod +x "$out/run.sh"
echo "prepared $out"
