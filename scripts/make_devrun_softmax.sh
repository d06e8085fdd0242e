#!/usr/bin/env bash
# Prepares a self-contained directory for the softmax / layer-norm run on an NVIDIA device that
# has no wavec: PTX + headers + stubs of several variants (compiled here for sm_90), the runtime
# sources, the C samples and bench/softmax_cuda.py, and run.sh, which builds the runtime, the
# stubs and the samples there, runs the C samples on cuda://0 and then the torch comparison.
#   scripts/make_devrun_softmax.sh WAVEC OUTDIR        (then on the device: bash OUTDIR/run.sh)
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/runtime" "$out/samples"
cp -r "$src/runtime/include" "$src/runtime/src" "$src/runtime/format" "$out/runtime/"
cp -r "$src/samples/common" "$out/samples/"
mkdir -p "$out/samples/softmax" "$out/samples/layernorm"
cp "$src/samples/softmax/softmax_main.c" "$out/samples/softmax/"
cp "$src/samples/layernorm/layernorm_main.c" "$out/samples/layernorm/"
cp "$src/bench/softmax_cuda.py" "$src/bench/wave_bench.py" "$out/"
# Two rows per workgroup (the waves of the second row on workgroup axis 1).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
two=$tmp/rows_m2.wave
sed 's/^    workgroup(M, 1, dim = 1);/    workgroup(M, 2, dim = 1);\n    wave(M, 1);/' \
  "$src/samples/softmax/softmax_rows.wave" > "$two"
grep -q 'wave(M, 1)' "$two"
sm="$src/samples/softmax"
# name: source: kind for softmax_cuda.py: row length compiled in (empty: dynamic): -D flags
variants=(
  "dyn_w1:$sm/softmax.wave:softmax::-DWAVES=1"
  "dyn_w4:$sm/softmax.wave:softmax::-DWAVES=4"
  "dyn_w8:$sm/softmax.wave:softmax::-DWAVES=8"
  "dyn_w16:$sm/softmax.wave:softmax::-DWAVES=16"
  "dyn_w1_n8192:$sm/softmax.wave:softmax:8192:-DN=8192 -DWAVES=1"
  "dyn_w8_n8192:$sm/softmax.wave:softmax:8192:-DN=8192 -DWAVES=8"
  "rows_w4:$sm/softmax_rows.wave:rows:8192:-DN=8192 -DWAVES=4"
  "rows_w8:$sm/softmax_rows.wave:rows:8192:-DN=8192 -DWAVES=8"
  "rows_w16:$sm/softmax_rows.wave:rows:8192:-DN=8192 -DWAVES=16"
  "rows_w8_m2:$two:rows:8192:-DN=8192 -DWAVES=8"
  "rows_w4_n4096:$sm/softmax_rows.wave:rows:4096:-DN=4096 -DWAVES=4"
  "online:$sm/online_softmax.wave:online::"
)
specs=()
for v in "${variants[@]}"; do
  IFS=: read -r name file kind bound flags <<<"$v"
  [ -z "$bound" ] || kind="$kind:$bound"
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  "$wavec" "$file" --target=sm_90 --no-cache $flags -o "$out/$name/k.ptx" \
    --header "$out/$name/k.h" --stub "$out/$name/k.c"
  specs+=("$name=\$PWD/$name/libk.so@$kind")
done
# The C samples through their generated stubs (the Makefiles' defaults).
"$wavec" "$sm/softmax.wave" --target=sm_90 --no-cache -o "$out/samples/softmax/softmax.ptx" \
  --header "$out/samples/softmax/softmax.h" --stub "$out/samples/softmax/softmax.c"
"$wavec" "$sm/softmax_rows.wave" --target=sm_90 --no-cache -DN=8192 -DWAVES=8 \
  -o "$out/samples/softmax/softmax_rows.ptx" --header "$out/samples/softmax/softmax_rows.h" \
  --stub "$out/samples/softmax/softmax_rows.c"
"$wavec" "$sm/online_softmax.wave" --target=sm_90 --no-cache \
  -o "$out/samples/softmax/online_softmax.ptx" --header "$out/samples/softmax/online_softmax.h" \
  --stub "$out/samples/softmax/online_softmax.c"
"$wavec" "$src/samples/layernorm/layernorm.wave" --target=sm_90 --no-cache -DN=1024 -DWAVES=4 \
  -o "$out/samples/layernorm/layernorm.ptx" --header "$out/samples/layernorm/layernorm.h" \
  --stub "$out/samples/layernorm/layernorm.c"
{
  cat <<'RUN'
#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
# The runtime, one compiler per file in parallel.
mkdir -p obj
ls runtime/src/*.cpp runtime/src/emu/*.cpp | xargs -P 16 -I{} sh -c \
  'g++ -O2 -std=c++17 -fPIC -Iruntime/include -Iruntime/src -Iruntime/format -c {} -o obj/$(echo {} | tr / _).o'
g++ -shared obj/*.o -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
for d in */; do
  d=${d%/}
  [ -f $d/k.c ] || continue
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/k.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libk.so 2>&1 | tail -3 &
done
( cd samples/softmax && cc -O2 -std=c99 -Wall -Wextra -Werror -DROWS_N=8192 -I../../runtime/include -I. \
    softmax_main.c softmax.c softmax_rows.c online_softmax.c -L../.. -Wl,-rpath,$PWD/../.. \
    -lwave_runtime -lm -o softmax_main ) &
( cd samples/layernorm && cc -O2 -std=c99 -Wall -Wextra -Werror -DLN_N=1024 -I../../runtime/include -I. \
    layernorm_main.c layernorm.c -L../.. -Wl,-rpath,$PWD/../.. -lwave_runtime -lm -o layernorm_main ) &
wait
{
  for shape in "300 3001" "1000 8192" "7 5"; do
    WAVE_DEVICE=cuda://0 timeout 60 ./samples/softmax/softmax_main $shape; echo "softmax_main $shape exit $?"
  done
  for m in 1000 3; do
    WAVE_DEVICE=cuda://0 timeout 60 ./samples/layernorm/layernorm_main $m; echo "layernorm_main $m exit $?"
  done
} 2>&1 | tee "$OUT/c_samples.log"
RUN
  echo "PYTHONUNBUFFERED=1 timeout 200 python3 softmax_cuda.py \$PWD/libwave_runtime.so ${specs[*]} 2>&1 | tee \"\$OUT/bench.log\""
} > "$out/run.sh"
chmod +x "$out/run.sh"
echo "prepared $out"
