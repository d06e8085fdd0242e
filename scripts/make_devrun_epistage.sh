#!/usr/bin/env bash
# Prepares the device directory of the epilogue-through-shared-memory measurement
# (docs/performance.md, "GEMM epilogue through shared memory and TMA stores"): the sm_90a
# TMA + warp-specialized GEMM (128 x 256 x 64 tiles) of samples/gemm/gemm_portable.wave and the
# epilogue GEMMs of samples/gemm_epilogue, all with assume(K % 8 == 0) and assume(N % 8 == 0)
# (the TMA store's row rule), each compiled twice by WAVEC: staged (the default: `new_*`) and
# with `hardware(stage_epilogue = 0)` (`old_*`, the epilogue from registers). Variants: f32 C,
# f16 C (`write(cast(result, f16), c)`: cuBLAS's output type), bf16 inputs with f32 C, bf16
# inputs with bf16 C (`bf16c`). On the
# device, epistage_run.sh builds the runtime and the stubs, runs one guarded launch, the
# float64 checks, the C samples, compute-sanitizer, SASS counts, then gemm_cuda.py and
# gemm_epilogue_cuda.py (ROUNDS interleaved rounds):
#   scripts/make_devrun_epistage.sh WAVEC OUTDIR
#   (device) cd OUTDIR && ROUNDS=5 bash epistage_run.sh
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/runtime" "$out/samples/gemm" "$out/samples/gemm_epilogue"
cp -r "$src/runtime/include" "$src/runtime/src" "$src/runtime/format" "$out/runtime/"
cp "$src/scripts/devrun_prelude.sh" "$out/"
cp -r "$src/samples/common" "$out/samples/"
cp "$src/samples/gemm/gemm_main.c" "$out/samples/gemm/"
cp "$src/samples/gemm_epilogue/gemm_epilogue_main.c" "$out/samples/gemm_epilogue/"
cp "$src/bench/gemm_cuda.py" "$src/bench/gemm_check_f64.py" "$src/bench/gemm_epilogue_cuda.py" \
  "$src/bench/wave_bench.py" "$out/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$src/scripts/gemm_variant_sources.sh"
gemm_variant_sources "$src" "$tmp"
sed 's/^    wave(N, WAVE_N);/&\n    assume(K > BLOCK_K * 4);\n    assume(K % 8 == 0);\n    assume(N % 8 == 0);/' \
  "$src/samples/gemm_epilogue/gemm_epilogue.wave" > "$tmp/epi.wave"
[ "$(grep -c 'N % 8 == 0' "$tmp/epi.wave")" = 2 ]
for f in f32 f16c bf16 bf16c epi; do
  sed 's/^    wave(N, WAVE_N);/&\n    hardware(stage_epilogue = 0);/' "$tmp/$f.wave" > "$tmp/${f}_old.wave"
  grep -q 'stage_epilogue = 0' "$tmp/${f}_old.wave"
done
wg="-DBLOCK_M=128 -DBLOCK_N=256 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=256"
for f in f32 f16c bf16 bf16c epi; do
  for form in new old; do
    file=$tmp/$f.wave
    [ $form = old ] && file=$tmp/${f}_old.wave
    k=gemm
    [ $f = epi ] && k=gemm_epilogue
    mkdir -p "$out/${form}_$f"
    # shellcheck disable=SC2086
    "$wavec" "$file" --target=sm_90a $wg -o "$out/${form}_$f/$k.cubin" \
      --header "$out/${form}_$f/$k.h" --stub "$out/${form}_$f/$k.c"
    # shellcheck disable=SC2086
    "$wavec" "$file" --target=sm_90a $wg --print-ir-after=schedule -o /dev/null \
      2> "$out/${form}_$f/schedule.txt"
  done
done
# The same f32 and f16-C sources without assume(N % 8 == 0) (`nomod_*`: main's bench form;
# the stores from registers, scalar where a row may end unaligned), for epistage_align.sh.
for f in f32 f16c; do
  grep -v 'assume(N % 8 == 0);' "$tmp/$f.wave" > "$tmp/${f}_nomod.wave"
  mkdir -p "$out/nomod_$f"
  # shellcheck disable=SC2086
  "$wavec" "$tmp/${f}_nomod.wave" --target=sm_90a $wg -o "$out/nomod_$f/gemm.cubin" \
    --header "$out/nomod_$f/gemm.h" --stub "$out/nomod_$f/gemm.c"
done
grep -q 'epilogue:' "$out/new_f32/schedule.txt"
! grep -q 'epilogue:' "$out/old_f32/schedule.txt"
cat > "$out/epistage_run.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")" && . ./devrun_prelude.sh
for d in new_* old_*; do
  k=gemm; [ -f $d/gemm_epilogue.c ] && k=gemm_epilogue
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/$k.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/lib$k.so 2>&1 | tail -3
done
for d in new_f32 old_f32; do
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d samples/gemm/gemm_main.c $d/gemm.c \
    -L. -Wl,-rpath,$PWD -lwave_runtime -lm -o $d/gemm_main 2>&1 | tail -3
done
for d in new_epi old_epi; do
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d \
    samples/gemm_epilogue/gemm_epilogue_main.c $d/gemm_epilogue.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -lm -o $d/gemm_epilogue_main 2>&1 | tail -3
done
WAVE_DEVICE=cuda://0 timeout 20 ./new_f32/gemm_main 300 72 264; rc=$?
echo "first launch exit $rc"
[ $rc -eq 0 ] || { echo "STOP: first launch failed"; exit 1; }
P=$PWD
timeout 150 python3 gemm_check_f64.py "$P/libwave_runtime.so" new_f32=$P/new_f32/libgemm.so@n8 \
  new_f16c=$P/new_f16c/libgemm.so@f16c+n8 new_bf16=$P/new_bf16/libgemm.so@bf16+n8 \
  old_f16c=$P/old_f16c/libgemm.so@f16c+n8 2>&1 | tee "$OUT/check_f64.log" | grep -v " ok$" | tail -20
echo "check_f64: $(grep -c ' ok$' $OUT/check_f64.log) ok, $(grep -c 'FAIL' $OUT/check_f64.log) FAIL"
{
  for d in new_f32 old_f32; do
    for shape in "250 136 392" "300 72 264" "1 8 264" "131 64 392" "700 600 264" "4095 4104 4000"; do
      WAVE_DEVICE=cuda://0 timeout 60 ./$d/gemm_main $shape > /dev/null 2>&1; echo "$d gemm_main $shape exit $?"
    done
  done
  for d in new_epi old_epi; do
    for shape in "250 136 264" "1000 1000 1000" "1 8 264" "129 72 520" "300 72 264"; do
      WAVE_DEVICE=cuda://0 timeout 60 ./$d/gemm_epilogue_main $shape > /dev/null 2>&1; echo "$d gemm_epilogue_main $shape exit $?"
    done
  done
} 2>&1 | tee "$OUT/c_sample.log" | grep -v "exit 0"
echo "c_sample: $(grep -c 'exit 0' $OUT/c_sample.log) of $(wc -l < $OUT/c_sample.log) exit 0"
for tool in memcheck racecheck synccheck; do
  WAVE_DEVICE=cuda://0 timeout 60 compute-sanitizer --tool $tool ./new_f32/gemm_main 300 72 264 > "$OUT/san_${tool}_f32.log" 2>&1
  echo "f32 $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_f32.log" | head -2)"
  WAVE_DEVICE=cuda://0 timeout 60 compute-sanitizer --tool $tool ./new_epi/gemm_epilogue_main 300 72 264 > "$OUT/san_${tool}_epi.log" 2>&1
  echo "epi $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_epi.log" | head -2)"
done
for d in new_* old_*; do
  for c in $d/*.cubin; do
    s=$(cuobjdump -sass $c 2>/dev/null)
    echo "$c: UTMASTG $(grep -c UTMASTG <<< "$s") UTMALDG $(grep -c UTMALDG <<< "$s") STS $(grep -c 'STS' <<< "$s") STG $(grep -c 'STG' <<< "$s") BAR $(grep -c 'BAR' <<< "$s")"
  done
done | tee "$OUT/sass_counts.txt"
cuobjdump -res-usage new_f32/gemm.cubin new_epi/gemm_epilogue.cubin old_epi/gemm_epilogue.cubin 2>&1 | grep -E "Function|REG" > "$OUT/res_usage.txt"
timeout ${GEMM_TIMEOUT:-200} python3 gemm_cuda.py "$P/libwave_runtime.so" \
  new_f32=$P/new_f32/libgemm.so@n8 old_f32=$P/old_f32/libgemm.so@n8 \
  new_f16c=$P/new_f16c/libgemm.so@f16c+n8 old_f16c=$P/old_f16c/libgemm.so@f16c+n8 \
  new_bf16=$P/new_bf16/libgemm.so@bf16+n8 old_bf16=$P/old_bf16/libgemm.so@bf16+n8 \
  new_bf16c=$P/new_bf16c/libgemm.so@bf16+bf16c+n8 old_bf16c=$P/old_bf16c/libgemm.so@bf16+bf16c+n8 \
  ${ROUNDS:+--rounds $ROUNDS} --shapes ${SHAPES:-4096,4096,4096 8192,8192,8192 4095,4104,4000} \
  2>&1 | tee "$OUT/gemm_bench.log" | tail -32
timeout ${EPI_TIMEOUT:-200} python3 gemm_epilogue_cuda.py "$P/libwave_runtime.so" \
  new=$P/new_f32/libgemm.so,$P/new_epi/libgemm_epilogue.so \
  old=$P/old_f32/libgemm.so,$P/old_epi/libgemm_epilogue.so \
  new16=$P/new_f16c/libgemm.so@f16c,$P/new_epi/libgemm_epilogue.so \
  old16=$P/old_f16c/libgemm.so@f16c,$P/old_epi/libgemm_epilogue.so \
  ${ROUNDS:+--rounds $ROUNDS} 2>&1 | tee "$OUT/epi_bench.log" | tail -40
RUN
chmod +x "$out/epistage_run.sh"
cat > "$out/epistage_align.sh" <<'RUN'
#!/usr/bin/env bash
# What assume(N % 8 == 0) alone is worth: the register-store form with and without it, and the
# staged form, f32 and f16 C, in one process (ROUNDS interleaved rounds).
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu2.txt"
[ -f libwave_runtime.so ] || g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp \
  -Iruntime/include -Iruntime/src -Iruntime/format -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
for d in new_f32 old_f32 new_f16c old_f16c nomod_f32 nomod_f16c; do
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
done
P=$PWD
timeout ${GEMM_TIMEOUT:-200} python3 gemm_cuda.py "$P/libwave_runtime.so" \
  new_f32=$P/new_f32/libgemm.so@n8 old_f32=$P/old_f32/libgemm.so@n8 \
  nomod_f32=$P/nomod_f32/libgemm.so \
  new_f16c=$P/new_f16c/libgemm.so@f16c+n8 old_f16c=$P/old_f16c/libgemm.so@f16c+n8 \
  nomod_f16c=$P/nomod_f16c/libgemm.so@f16c \
  ${ROUNDS:+--rounds $ROUNDS} --shapes ${SHAPES:-4096,4096,4096 8192,8192,8192} \
  2>&1 | tee "$OUT/align_bench.log" | tail -24
RUN
chmod +x "$out/epistage_align.sh"
echo "prepared $out"
