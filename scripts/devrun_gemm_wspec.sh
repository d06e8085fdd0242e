#!/usr/bin/env bash
# Warp specialization check (issue 17 item 2): build, one guarded small launch per variant,
# float64 checks, sanitizers on the warp-specialized f16 variant, the C sample's small shapes,
# resource usage and SASS counts, then the bench (ROUNDS interleaved rounds vs torch.matmul).
# Copied into a directory made by scripts/make_devrun_gemm_tma.sh (docs/performance.md, "GEMM on
# the H100: warp specialization"); on the device: ROUNDS=5 SHAPES="M,N,K ..." bash THIS.
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -Iruntime/format -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
T=t128x256x64_w64x256_async_wgmma
specs=()
for d in t128x256x64_w64x256_async_wgmma t128x256x64_w64x256_async_wgmma_bf16 ctl_wgmma ctl_wgmma_bf16; do
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
  case $d in *bf16*) specs+=("$d=$PWD/$d/libgemm.so@bf16"); continue;; esac
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d samples/gemm/gemm_main.c $d/gemm.c \
    -L. -Wl,-rpath,$PWD -lwave_runtime -lm -o $d/gemm_main 2>&1 | tail -3
  specs+=("$d=$PWD/$d/libgemm.so")
done
echo "built at $(( $(date +%s) - t0 )) s"
for d in $T ctl_wgmma; do
  WAVE_DEVICE=cuda://0 timeout 20 ./$d/gemm_main 300 77 264; rc=$?
  echo "$d first launch exit $rc"
  [ $rc -eq 0 ] || { echo "STOP: first launch failed"; exit 1; }
done
for d in $T ctl_wgmma; do
  for shape in "250 130 392" "300 77 264" "1 1 264" "131 67 392" "130 200 264"; do
    WAVE_DEVICE=cuda://0 timeout 20 ./$d/gemm_main $shape > /dev/null 2>&1; echo "$d $shape exit $?"
  done
done 2>&1 | tee "$OUT/c_sample.log" | grep -v "exit 0" ; echo "c_sample: $(grep -c 'exit 0' $OUT/c_sample.log) of $(wc -l < $OUT/c_sample.log) exit 0"
timeout 150 python3 gemm_check_f64.py "$PWD/libwave_runtime.so" "${specs[@]}" 2>&1 | tee "$OUT/check_f64.log" | tail -12
echo "checked at $(( $(date +%s) - t0 )) s"
if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck synccheck; do
    WAVE_DEVICE=cuda://0 timeout 60 compute-sanitizer --tool $tool ./$T/gemm_main 300 77 264 > "$OUT/sanitizer_$tool.log" 2>&1
    echo "$tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/sanitizer_$tool.log" | head -3)"
  done
else
  echo "no compute-sanitizer"
fi
echo "sanitized at $(( $(date +%s) - t0 )) s"
for d in t*/ ctl_*/; do echo "=== ${d%/}"; cuobjdump -res-usage "$d/gemm.cubin" 2>&1 | grep -i "REG\|STACK"; done > "$OUT/res_usage.txt" 2>&1
for d in t*/ ctl_*/; do echo "=== ${d%/}"; cuobjdump -sass "$d/gemm.cubin"; done > "$OUT/sass.txt" 2>&1
for d in t*/ ctl_*/; do echo "${d%/}: UTMALDG $(awk -v d="=== ${d%/}" '$0==d{f=1;next} /^===/{f=0} f' $OUT/sass.txt | grep -c UTMALDG) BAR.SYNC $(awk -v d="=== ${d%/}" '$0==d{f=1;next} /^===/{f=0} f' $OUT/sass.txt | grep -c 'BAR.SYNC') USETMAXREG $(awk -v d="=== ${d%/}" '$0==d{f=1;next} /^===/{f=0} f' $OUT/sass.txt | grep -c USETMAXREG)"; done
cat "$OUT/res_usage.txt"
timeout ${BENCH_TIMEOUT:-240} python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" ${ROUNDS:+--rounds $ROUNDS} \
  ${SHAPES:+--shapes $SHAPES} 2>&1 | tee "$OUT/bench.log" | tail -30
echo "done at $(( $(date +%s) - t0 )) s"
