#!/usr/bin/env bash
# Prepares a self-contained directory for attention runs on an NVIDIA device that has no wavec:
# cubins + headers + stubs of samples/attention in several variants (compiled here), the runtime
# sources, the C host program and bench/attention_cuda.py, and run.sh, which builds the runtime
# and host programs there, checks every variant on ragged shapes through the C program, then
# times them against torch's scaled_dot_product_attention.
#   scripts/make_devrun_attention.sh WAVEC OUTDIR    (then on the device: bash OUTDIR/run.sh;
#   ROUNDS=N interleaved timing rounds, SANITIZE=1 adds compute-sanitizer on small shapes)
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/samples"
cp -r "$src/runtime" "$out/"
cp -r "$src/samples/common" "$src/samples/attention" "$out/samples/"
cp "$src/bench/attention_cuda.py" "$src/bench/wave_bench.py" "$out/"
# name: head dim: source (samples/attention/): target: -D flags. ATTENTION_VARIANTS (the same
# form, space-separated entries joined by ';') replaces the list. A source `FILE@FIELDS`
# compiles FILE with FIELDS added to its hardware(...) constraint (e.g.
# `attention_wgmma.wave@score_ahead = 0`). A source whose name says `causal` is checked and
# timed as causal attention (the C program's ATTENTION_CAUSAL, bench/attention_cuda.py's
# `:causal`).
variants=(
  "d128_m128_k64:128:attention.wave:sm_90:-DBLOCK_M=128 -DBLOCK_K2=64"
  "d64_k32_w32:64:attention.wave:sm_90:-DBLOCK_K2=32 -DWAVE_M=32 -DBLOCK_M=128"
  "wg_d128_m128_k64:128:attention_wgmma.wave:sm_90a:-DBLOCK_M=128 -DBLOCK_K2=64"
  "wg_d128_m128_k128:128:attention_wgmma.wave:sm_90a:-DBLOCK_M=128 -DBLOCK_K2=128"
  "wg_d64_m128_k128:64:attention_wgmma.wave:sm_90a:-DBLOCK_M=128 -DBLOCK_K2=128"
  "wg_d64_m128_k64:64:attention_wgmma.wave:sm_90a:-DBLOCK_M=128 -DBLOCK_K2=64"
)
if [[ -n "${ATTENTION_VARIANTS:-}" ]]; then
  IFS=';' read -r -a variants <<<"$ATTENTION_VARIANTS"
fi
for v in "${variants[@]}"; do
  IFS=':' read -r name d file target flags <<<"$v"
  mkdir -p "$out/$name"
  source="$src/samples/attention/${file%%@*}"
  if [[ "$file" == *@* ]]; then
    sed "s/hardware(\(.*\));/hardware(\1, ${file#*@});/" "$source" > "$out/$name/attention.wave"
    source="$out/$name/attention.wave"
  fi
  # shellcheck disable=SC2086
  "$wavec" "$source" --target=$target -DD=$d $flags --no-cache \
    -o "$out/$name/attention.cubin" --header "$out/$name/attention.h" --stub "$out/$name/attention.c"
  "$wavec" "$source" --target=$target -DD=$d $flags --no-cache \
    -o "$out/$name/attention.ptx"
  echo "$d" > "$out/$name/headdim"
  if [[ "$file" == *causal* ]]; then touch "$out/$name/causal"; fi
  echo "$file $target $flags" > "$out/$name/flags"
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
{
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -Iruntime/format -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
specs=()
for d in */; do
  [[ -f $d/headdim ]] || continue
  d=${d%/}
  hd=$(cat $d/headdim)
  causal=0 mark=
  if [[ -f $d/causal ]]; then causal=1 mark=:causal; fi
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/attention.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libattention.so 2>&1 | tail -3
  cc -O2 -std=c99 -Wall -Wextra -Werror -DATTENTION_D=$hd -DATTENTION_CAUSAL=$causal \
    -Iruntime/include -I$d \
    samples/attention/attention_main.c $d/attention.c -L. -Wl,-rpath,$PWD -lwave_runtime -lm \
    -o $d/attention_main 2>&1 | tail -3
  for shape in "2 100 77" "3 257 300" "1 64 4096"; do
    WAVE_DEVICE=cuda://0 timeout 60 ./$d/attention_main $shape; echo "$d $shape exit $?"
  done
  # SANITIZE=1: compute-sanitizer's memcheck, racecheck and synccheck on a small ragged shape
  # (three key tiles of 128, the last partial), their summary lines only.
  if [[ "${SANITIZE:-0}" == 1 ]]; then
    for tool in memcheck racecheck synccheck; do
      for shape in "2 130 300"; do
        WAVE_DEVICE=cuda://0 timeout 120 compute-sanitizer --tool $tool ./$d/attention_main \
          $shape 2>&1 | grep -E "SUMMARY|PASS|FAIL" | sed "s|^|$d $tool $shape: |"
      done
    done
  fi
  specs+=("$d=$PWD/$d/libattention.so:$hd$mark")
done
PYTHONUNBUFFERED=1 timeout 300 python3 attention_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}"
} 2>&1 | tee "$OUT/attention.log"
RUN
chmod +x "$out/run.sh"
echo "prepared $out"
