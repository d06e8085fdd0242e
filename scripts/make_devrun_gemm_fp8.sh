#!/usr/bin/env bash
# Prepares the device directory of the fp8 GEMM measurement (docs/performance.md, "fp8 GEMM on
# the H100"): bench/gemm_fp8.wave for sm_90a as six stubs (two-level accumulation in
# 128 x 128 and 128 x 192 tiles warp-specialized, 128 x 192 also with persistent tiles,
# 128 x 128 and 128 x 256 without; the wgmma accumulating the whole K, 128 x 256), the runtime
# sources, bench/gemm_fp8_cuda.py and run.sh, which on the device builds the runtime and the
# stubs, checks against float64 (aligned, ragged and tiny shapes) and times ROUNDS interleaved
# rounds against torch._scaled_mm at 8192³ and 4096³:
#   scripts/make_devrun_gemm_fp8.sh WAVEC OUTDIR
#   (device) cd OUTDIR && ROUNDS=3 bash run.sh
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"
mkdir -p "$out"
cp -r "$src/runtime" "$out/runtime"
cp "$src/scripts/devrun_prelude.sh" "$out/"
cp "$src/bench/gemm_fp8_cuda.py" "$src/bench/wave_bench.py" "$out/"
fast=$(mktemp --suffix=.wave)
sed 's/    yield acc + mma(read(a), read(b), zero);/    yield mma(read(a), read(b), acc);/' \
  "$src/bench/gemm_fp8.wave" > "$fast"
grep -q 'yield mma(read(a), read(b), acc);' "$fast"
nows=$(mktemp --suffix=.wave)
sed 's/^    assume(K % 16 == 0);/&\n    hardware(warp_specialize = 0);/' "$src/bench/gemm_fp8.wave" > "$nows"
grep -q 'warp_specialize = 0' "$nows"
persist=$(mktemp --suffix=.wave)
sed 's/^    assume(K % 16 == 0);/&\n    hardware(persistent = 1);/' "$src/bench/gemm_fp8.wave" > "$persist"
trap 'rm -f "$fast" "$nows" "$persist"' EXIT
grep -q 'persistent = 1' "$persist"
# Two-level in 128 x 128 and 128 x 192 tiles: warp-specialized (the compiler's choice where
# both accumulators fit the consumers' registers); 128 x 128 also without (the control), and
# 128 x 256, which the compiler leaves unspecialized (256 accumulator registers).
for v in "two_level_t128x128_ws:$src/bench/gemm_fp8.wave:-DBLOCK_N=128 -DWAVE_N=128" \
         "two_level_t128x192_ws:$src/bench/gemm_fp8.wave:" \
         "two_level_t128x192_persist:$persist:" \
         "two_level_t128x128:$nows:-DBLOCK_N=128 -DWAVE_N=128" \
         "two_level_t128x256:$src/bench/gemm_fp8.wave:-DBLOCK_N=256 -DWAVE_N=256" \
         "wgmma_acc_t128x256:$fast:-DBLOCK_N=256 -DWAVE_N=256"; do
  IFS=: read -r name file flags <<< "$v"
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  "$wavec" "$file" --target=sm_90a $flags -o "$out/$name/gemm.cubin" --header "$out/$name/gemm.h" \
    --stub "$out/$name/gemm.c" 2> /dev/null
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")" && . ./devrun_prelude.sh
specs=()
for d in */; do
  d=${d%/}
  [ -f "$d/gemm.c" ] || continue
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
  cuobjdump -sass $d/gemm.cubin > "$OUT/sass_$d.txt" 2>&1
  echo "$d: QGMMA in SASS: $(grep -c QGMMA "$OUT/sass_$d.txt")"
  specs+=("$d=$PWD/$d/libgemm.so")
done
timeout ${CHECK_TIMEOUT:-120} python3 gemm_fp8_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" \
  --shapes 300,256,528 4095,4097,4000 1,1,528 1000,3000,1040 2>&1 | tee "$OUT/check.log" | tail -24
for d in two_level_t128x192_ws two_level_t128x192_persist; do
  command -v compute-sanitizer > /dev/null && [ -d $d ] || continue
  for tool in memcheck racecheck synccheck; do
    timeout 150 compute-sanitizer --tool $tool python3 gemm_fp8_cuda.py "$PWD/libwave_runtime.so" \
      "$d=$PWD/$d/libgemm.so" --shapes 300,256,528 1000,600,1040 > "$OUT/sanitizer_${tool}_$d.log" 2>&1
    echo "$d $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/sanitizer_${tool}_$d.log" | head -3)"
  done
done
timeout ${BENCH_TIMEOUT:-300} python3 gemm_fp8_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" \
  --rounds ${ROUNDS:-3} --shapes 8192,8192,8192 4096,4096,4096 2>&1 | tee "$OUT/bench.log" | tail -16
RUN
chmod +x "$out/run.sh"
echo "prepared $out"
