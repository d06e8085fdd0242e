#!/usr/bin/env bash
# Persistent tiles check (issue 17 item 3), in a directory made by
# scripts/make_devrun_gemm_persist.sh: builds the runtime and the stubs, one guarded small launch
# per variant, the C sample's small shapes, float64 checks (the persistent and the previous
# form, f16 and bf16, and the persistent f16 stub with its grid forced to 1 and 7 workgroups),
# compute-sanitizer (memcheck, racecheck, synccheck) on the persistent f16 variant and on its
# one-workgroup grid walking 15 tiles, resource usage and SASS counts, then the bench (ROUNDS
# interleaved rounds against torch.matmul f16 and bf16; SHAPES="M,N,K ..." replaces the shapes).
# docs/performance.md, "GEMM on the H100: persistent tiles". On the device:
#   ROUNDS=5 bash devrun_gemm_persist.sh
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
t0=$(date +%s)
stamp() { echo "[$1 at $(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p obj
ls runtime/src/*.cpp runtime/src/emu/*.cpp | xargs -P 16 -I{} sh -c \
  'g++ -O2 -std=c++17 -fPIC -c {} -Iruntime/include -Iruntime/src -Iruntime/format -o obj/$(echo {} | tr / _).o' 2>&1 | tail -5
g++ -shared obj/*.o -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -3
T=t128x256x64_w64x256_async_wgmma
F16="$T ctl_wgmma grid1_wgmma grid7_wgmma"
ALL="$F16 ${T}_bf16 ctl_wgmma_bf16"
for d in $ALL; do
  ( cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
      -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
    case $d in *bf16*) ;; *)
      cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d samples/gemm/gemm_main.c \
        $d/gemm.c -L. -Wl,-rpath,$PWD -lwave_runtime -lm -o $d/gemm_main 2>&1 | tail -3;; esac ) &
done
wait
stamp built
spec() { case $1 in *bf16*) echo "$1=$PWD/$1/libgemm.so@bf16";; *) echo "$1=$PWD/$1/libgemm.so";; esac; }
fail=0
for d in $F16; do
  WAVE_DEVICE=cuda://0 timeout 20 ./$d/gemm_main 300 77 264 > "$OUT/first_$d.log" 2>&1; rc=$?
  echo "$d first launch exit $rc: $(tail -1 "$OUT/first_$d.log")"
  [ $rc -eq 0 ] || fail=1
done
if [ $fail -ne 0 ]; then
  echo "STOP: a first launch failed"
  WAVE_DEVICE=cuda://0 timeout 60 compute-sanitizer --tool memcheck ./$T/gemm_main 300 77 264 2>&1 | tail -30
  exit 1
fi
for d in $F16; do
  for shape in "250 130 392" "300 77 264" "1 1 264" "131 67 392" "130 200 264" "700 600 264"; do
    WAVE_DEVICE=cuda://0 timeout 20 ./$d/gemm_main $shape > /dev/null 2>&1; echo "$d $shape exit $?"
  done
done 2>&1 | tee "$OUT/c_sample.log" | grep -v "exit 0"; echo "c_sample: $(grep -c 'exit 0' $OUT/c_sample.log) of $(wc -l < $OUT/c_sample.log) exit 0"
stamp "C sample"
specs=()
for d in $ALL; do specs+=("$(spec $d)"); done
timeout 150 python3 gemm_check_f64.py "$PWD/libwave_runtime.so" "${specs[@]}" > "$OUT/check_f64.log" 2>&1
echo "check_f64 exit $?: $(grep -c ' ok$' $OUT/check_f64.log) ok, $(grep -c FAIL $OUT/check_f64.log) FAIL"
grep -E "FAIL|Error|error" "$OUT/check_f64.log" | head -10; tail -1 "$OUT/check_f64.log"
stamp checked
if command -v compute-sanitizer > /dev/null; then
  for run in "$T:300 77 264" "grid1_wgmma:520 600 264"; do
    d=${run%%:*} shape=${run#*:}
    for tool in memcheck racecheck synccheck; do
      # shellcheck disable=SC2086
      WAVE_DEVICE=cuda://0 timeout 45 compute-sanitizer --tool $tool ./$d/gemm_main $shape > "$OUT/sanitizer_${d}_$tool.log" 2>&1
      echo "$d $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/sanitizer_${d}_$tool.log" | head -2 | tr '\n' ' ')"
    done
  done
else
  echo "no compute-sanitizer"
fi
stamp sanitized
for d in $T ${T}_bf16 ctl_wgmma; do
  echo "=== $d"; cuobjdump -res-usage "$d/gemm.cubin" 2>&1 | grep -i "REG\|STACK"
  cuobjdump -sass "$d/gemm.cubin" > "$OUT/sass_$d.txt" 2>&1
  for i in UTMALDG HGMMA BAR.SYNC USETMAXREG SYNCS STG EXIT; do printf "%s %s  " $i "$(grep -c "$i" "$OUT/sass_$d.txt")"; done; echo
done 2>&1 | tee "$OUT/res_usage.txt"
bench=()
for d in $T ${T}_bf16 ctl_wgmma ctl_wgmma_bf16; do bench+=("$(spec $d)"); done
# shellcheck disable=SC2086
timeout ${BENCH_TIMEOUT:-150} python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${bench[@]}" ${ROUNDS:+--rounds $ROUNDS} \
  --shapes ${SHAPES:-4096,4096,4096 8192,8192,8192 4095,4097,4000} 2>&1 | tee "$OUT/bench.log" | tail -24
stamp done
