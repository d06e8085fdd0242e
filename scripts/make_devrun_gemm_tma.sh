#!/usr/bin/env bash
# Prepares the device directory of the TMA GEMM measurement (docs/performance.md, "GEMM on the
# H100 with TMA loads"): the sm_90a wgmma variants (f16, bf16) of scripts/make_devrun_gemm.sh
# compiled by WAVEC, the same sources compiled by CONTROL_WAVEC as ctl_wgmma and ctl_wgmma_bf16
# (e.g. a build without TMA), bench/gemm_check_f64.py, and tma_run.sh, which on the device builds
# the runtime and the stubs, runs one guarded launch, the float64 checks, compute-sanitizer
# (memcheck, racecheck, synccheck) on a small shape, the C sample, then the bench
# (ROUNDS interleaved rounds against torch.matmul):
#   scripts/make_devrun_gemm_tma.sh WAVEC OUTDIR CONTROL_WAVEC
#   (device) cd OUTDIR && ROUNDS=3 bash tma_run.sh
set -euo pipefail
wavec=$1 out=$2 control=$3 src=$(cd "$(dirname "$0")/.." && pwd)
wg="-DBLOCK_M=128 -DBLOCK_N=256 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=256"
GEMM_VARIANTS="t128x256x64_w64x256_async_wgmma:aligned:$wg:sm_90a
t128x256x64_w64x256_async_wgmma_bf16:bf16:$wg:sm_90a" \
  bash "$src/scripts/make_devrun_gemm.sh" "$wavec" "$out"
aligned=$(mktemp --suffix=.wave) bf16=$(mktemp --suffix=.wave)
trap 'rm -f "$aligned" "$bf16"' EXIT
sed 's/^    assume(K > BLOCK_K \* 4);/&\n    assume(K % 8 == 0);/' "$src/samples/gemm/gemm_portable.wave" > "$aligned"
grep -q 'K % 8 == 0' "$aligned"
sed 's/f16]/bf16]/g' "$aligned" > "$bf16"
for v in "ctl_wgmma:$aligned" "ctl_wgmma_bf16:$bf16"; do
  name=${v%%:*} file=${v#*:}
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  "$control" "$file" --target=sm_90a $wg -o "$out/$name/gemm.cubin" --header "$out/$name/gemm.h" \
    --stub "$out/$name/gemm.c" 2> /dev/null
done
cp "$src/bench/gemm_check_f64.py" "$out/"
cat > "$out/tma_run.sh" <<'RUN'
#!/usr/bin/env bash
# TMA slice check (issue 17): build, one guarded small launch, float64 checks, sanitizers, the
# C sample's shapes, then the bench (ROUNDS interleaved rounds vs torch.matmul).
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
grep -n "CU_TENSOR_MAP_DATA_TYPE_FLOAT16\b\|CU_TENSOR_MAP_DATA_TYPE_BFLOAT16\b\|CU_TENSOR_MAP_SWIZZLE_128B \|CU_TENSOR_MAP_L2_PROMOTION_L2_128B\|CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE" /usr/local/cuda/include/cuda.h | head -8
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -Iruntime/format -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
T=t128x256x64_w64x256_async_wgmma
specs=()
for d in t*/ ctl_*/; do
  d=${d%/}
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
  case $d in *bf16*) specs+=("$d=$PWD/$d/libgemm.so@bf16"); continue;; esac
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d samples/gemm/gemm_main.c $d/gemm.c \
    -L. -Wl,-rpath,$PWD -lwave_runtime -lm -o $d/gemm_main 2>&1 | tail -3
  specs+=("$d=$PWD/$d/libgemm.so")
done
WAVE_DEVICE=cuda://0 timeout 20 ./$T/gemm_main 300 77 264; rc=$?
echo "first launch exit $rc"
[ $rc -eq 0 ] || { echo "STOP: first launch failed"; exit 1; }
timeout 120 python3 gemm_check_f64.py "$PWD/libwave_runtime.so" "${specs[@]}" 2>&1 | tee "$OUT/check_f64.log" | tail -40
if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck synccheck; do
    WAVE_DEVICE=cuda://0 timeout 90 compute-sanitizer --tool $tool ./$T/gemm_main 300 77 264 > "$OUT/sanitizer_$tool.log" 2>&1
    echo "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/sanitizer_$tool.log" | head -3)"
  done
else
  echo "no compute-sanitizer"
fi
for d in $T ctl_wgmma; do
  for shape in "250 130 392" "300 77 264" "1 1 264" "131 67 392" "4095 4097 4000"; do
    WAVE_DEVICE=cuda://0 timeout 30 ./$d/gemm_main $shape > /dev/null 2>&1; echo "$d $shape exit $?"
  done
done 2>&1 | tee "$OUT/c_sample.log" | grep -v "exit 0" ; echo "c_sample: $(grep -c 'exit 0' $OUT/c_sample.log) of $(wc -l < $OUT/c_sample.log) exit 0"
for d in t*/ ctl_*/; do echo "=== ${d%/}"; cuobjdump -sass "$d/gemm.cubin"; done > "$OUT/sass.txt" 2>&1
timeout ${BENCH_TIMEOUT:-300} python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" ${ROUNDS:+--rounds $ROUNDS} \
  ${SHAPES:+--shapes $SHAPES} 2>&1 | tee "$OUT/bench.log" | tail -30
RUN
chmod +x "$out/tma_run.sh"
echo "prepared $out"
