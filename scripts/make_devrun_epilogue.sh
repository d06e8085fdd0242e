#!/usr/bin/env bash
# Prepares a self-contained directory for the fused-epilogue GEMM run on an NVIDIA device that
# has no wavec: for each tile config, the plain GEMM (samples/gemm/gemm_portable.wave) and the
# epilogue GEMMs (samples/gemm_epilogue/gemm_epilogue.wave) compiled here with the same tiles and
# the same assumptions (K > 4 tiles, K % 8 == 0: cp.async copies), the runtime sources, the
# sample's host program and bench/gemm_epilogue_cuda.py; run.sh builds and runs them there.
#   scripts/make_devrun_epilogue.sh WAVEC OUTDIR
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/runtime" "$out/samples/gemm_epilogue"
cp -r "$src/runtime/include" "$src/runtime/src" "$src/runtime/format" "$out/runtime/"
cp "$src/scripts/devrun_prelude.sh" "$out/"
cp -r "$src/samples/common" "$out/samples/"
cp "$src/samples/gemm_epilogue/gemm_epilogue_main.c" "$out/samples/gemm_epilogue/"
cp "$src/bench/gemm_epilogue_cuda.py" "$src/bench/wave_bench.py" "$out/"
plain=$(mktemp --suffix=.wave) epi=$(mktemp --suffix=.wave)
trap 'rm -f "$plain" "$epi"' EXIT
sed 's/^    assume(K > BLOCK_K \* 4);/&\n    assume(K % 8 == 0);/' "$src/samples/gemm/gemm_portable.wave" > "$plain"
sed 's/^    wave(N, WAVE_N);/&\n    assume(K > BLOCK_K * 4);\n    assume(K % 8 == 0);/' \
  "$src/samples/gemm_epilogue/gemm_epilogue.wave" > "$epi"
grep -q 'K % 8 == 0' "$plain"
[ "$(grep -c 'K % 8 == 0' "$epi")" = 2 ]
# name:-D flags:target
configs=(
  "mma_t128x128x32:-DBLOCK_M=128 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=64:sm_90"
  "wgmma_t128x256x64:-DBLOCK_M=128 -DBLOCK_N=256 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=256:sm_90a"
)
for c in "${configs[@]}"; do
  name=${c%%:*} rest=${c#*:}
  flags=${rest%:*} target=${rest##*:}
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  "$wavec" "$plain" --target=$target $flags -o "$out/$name/gemm.cubin" \
    --header "$out/$name/gemm.h" --stub "$out/$name/gemm.c"
  # shellcheck disable=SC2086
  "$wavec" "$epi" --target=$target $flags -o "$out/$name/gemm_epilogue.cubin" \
    --header "$out/$name/gemm_epilogue.h" --stub "$out/$name/gemm_epilogue.c"
  echo "$target $flags" > "$out/$name/flags"
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")" && . ./devrun_prelude.sh
specs=()
for d in */; do
  d=${d%/}
  [ -f "$d/flags" ] || continue
  for k in gemm gemm_epilogue; do
    cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/$k.c -L. -Wl,-rpath,$PWD \
      -lwave_runtime -o $d/lib$k.so 2>&1 | tail -3
  done
  # The sample's own host program with this config's header and stub (per-element check).
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d \
    samples/gemm_epilogue/gemm_epilogue_main.c $d/gemm_epilogue.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -lm -o $d/gemm_epilogue_main 2>&1 | tail -3
  specs+=("$d=$PWD/$d/libgemm.so,$PWD/$d/libgemm_epilogue.so")
done
{
  for d in */; do
    d=${d%/}
    [ -x $d/gemm_epilogue_main ] || continue
    for shape in "250 130 264" "1000 1000 1000" "1 1 264" "129 67 520"; do
      WAVE_DEVICE=cuda://0 timeout 120 ./$d/gemm_epilogue_main $shape; echo "$d $shape exit $?"
    done
  done
} 2>&1 | tee "$OUT/c_sample.log"
# shellcheck disable=SC2086
timeout 400 python3 gemm_epilogue_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" \
  ${ROUNDS:+--rounds $ROUNDS} ${SHAPES:+--shapes $SHAPES} 2>&1 | tee "$OUT/bench.log"
RUN
chmod +x "$out/run.sh"
echo "prepared $out"
