#!/usr/bin/env bash
# Steps (each under its own timeout, times in $OUT/steps.txt): a smoke launch of every variant
# at 1024^3 in one process (variant by variant if that fails), the timing of those that ran
# (gemm_cuda.py, ROUNDS interleaved rounds), float64 checks of the f16-C variants in CHECK,
# then the hang control hang112_f16c alone.
cd "$(dirname "$0")" || exit 1
set -u
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p objs
for f in runtime/src/*.cpp runtime/src/emu/*.cpp; do
  g++ -O2 -std=c++17 -fPIC -c "$f" -Iruntime/include -Iruntime/src -Iruntime/format \
    -o "objs/$(basename "$f" .cpp).o" &
done
wait
g++ -shared objs/*.o -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
step() { echo "$SECONDS s: $*" | tee -a "$OUT/steps.txt"; }
step built runtime
spec() { case $1 in *_bf16c) echo "$1=$PWD/$1/libgemm.so@bf16+bf16c+n8" ;; *) echo "$1=$PWD/$1/libgemm.so@f16c+n8" ;; esac; }
all=()
for d in */; do
  d=${d%/}
  [ -f $d/gemm.c ] || continue
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3 &
  [ $d = hang112_f16c ] || all+=($d)
done
wait
for d in */; do [ -f ${d}gemm.cubin ] && echo "${d}gemm.cubin $(cuobjdump -res-usage ${d}gemm.cubin 2>&1 | grep -o 'REG:[0-9]*') $(grep -o 'shared memory [0-9]* bytes' ${d}gemm.c | head -1)"; done > "$OUT/res_usage.txt"
step stubs built
good=()
specs=(); for v in "${all[@]}"; do specs+=("$(spec $v)"); done
if timeout 90 python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" --quick --shapes 1024,1024,1024 > "$OUT/smoke.log" 2>&1; then
  good=("${all[@]}")
else
  step "smoke of all failed (rc $?): one by one"
  for v in "${all[@]}"; do
    if timeout 25 python3 gemm_cuda.py "$PWD/libwave_runtime.so" "$(spec $v)" --quick --shapes 1024,1024,1024 >> "$OUT/smoke.log" 2>&1; then good+=($v); else step "$v smoke failed"; fi
  done
fi
step "smoke done: ${#good[@]} of ${#all[@]}"
specs=(); for v in "${good[@]}"; do specs+=("$(spec $v)"); done
timeout ${GEMM_TIMEOUT:-200} python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" \
  ${ROUNDS:+--rounds $ROUNDS} --shapes ${SHAPES:-4096,4096,4096 8192,8192,8192} \
  2>&1 | tee "$OUT/gemm_bench.log" | tail -60
step bench done
if [ -n "${CHECK:-}" ]; then
  cs=()
  for v in $CHECK; do cs+=("$v=$PWD/$v/libgemm.so@f16c+n8"); done
  timeout ${CHECK_TIMEOUT:-150} python3 gemm_check_f64.py "$PWD/libwave_runtime.so" "${cs[@]}" \
    2>&1 | tee "$OUT/check_f64.log" | grep -v " ok$" | tail -20
  echo "check_f64: $(grep -c ' ok$' $OUT/check_f64.log) ok, $(grep -c 'FAIL' $OUT/check_f64.log) FAIL"
  step check done
fi
if [ -d hang112_f16c ] && [ -n "${HANG:-}" ]; then
  timeout 20 python3 gemm_cuda.py "$PWD/libwave_runtime.so" "$(spec hang112_f16c)" --quick --shapes 1024,1024,1024 > "$OUT/hang112.log" 2>&1
  step "hang112_f16c exit $? (124: killed by the 20 s timeout)"
fi
