#!/usr/bin/env bash
cd "$(dirname "$0")" && . ./devrun_prelude.sh
specs=()
for d in */; do
  d=${d%/}
  [ -f $d/gemm.c ] || continue
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
  case $d in
    *_bf16c) specs+=("$d=$PWD/$d/libgemm.so@bf16+bf16c+n8") ;;
    *) specs+=("$d=$PWD/$d/libgemm.so@f16c+n8") ;;
  esac
done
for d in */; do for c in ${d}gemm.cubin; do [ -f $c ] && echo "$c $(cuobjdump -res-usage $c 2>&1 | grep -o 'REG:[0-9]*') $(grep -o 'shared memory [0-9]* bytes' ${d}gemm.c | head -1)"; done; done > "$OUT/res_usage.txt"
timeout ${GEMM_TIMEOUT:-300} python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" \
  ${ROUNDS:+--rounds $ROUNDS} --shapes ${SHAPES:-4096,4096,4096 8192,8192,8192} \
  2>&1 | tee "$OUT/gemm_bench.log" | tail -60
if [ -n "${CHECK:-}" ]; then
  cs=()
  for v in $CHECK; do cs+=("$v=$PWD/$v/libgemm.so@f16c+n8"); done
  timeout ${CHECK_TIMEOUT:-150} python3 gemm_check_f64.py "$PWD/libwave_runtime.so" "${cs[@]}" \
    2>&1 | tee "$OUT/check_f64.log" | grep -v " ok$" | tail -20
  echo "check_f64: $(grep -c ' ok$' $OUT/check_f64.log) ok, $(grep -c 'FAIL' $OUT/check_f64.log) FAIL"
fi
