#!/usr/bin/env bash
# Prepares a self-contained directory for a GEMM run on an NVIDIA device that has no wavec:
# cubins + headers + stubs of several tile variants (compiled here), the runtime sources, the
# C sample and the torch bench, and run.sh which builds and runs everything there.
#   scripts/make_devrun_gemm.sh WAVEC OUTDIR
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/runtime" "$out/samples"
cp -r "$src/runtime/include" "$src/runtime/src" "$out/runtime/"
cp -r "$src/samples/common" "$out/samples/"
mkdir -p "$out/samples/gemm" && cp "$src/samples/gemm/gemm_main.c" "$out/samples/gemm/"
cp "$src/bench/gemm_cuda.py" "$src/bench/gemm_dyn_ptx.py" "$out/"
# The "async" variants add `assume(K % 8 == 0)`: every 16-byte copy is then aligned and whole,
# and the loop double-buffers through cp.async; the others take the register-prefetch path.
aligned=$(mktemp --suffix=.wave)
trap 'rm -f "$aligned" "$bf16"' EXIT
sed 's/^    assume(K > BLOCK_K \* 4);/&\n    assume(K % 8 == 0);/' "$src/samples/gemm/gemm_portable.wave" > "$aligned"
grep -q 'K % 8 == 0' "$aligned"
bf16=$(mktemp --suffix=.wave)
sed 's/f16]/bf16]/g' "$aligned" > "$bf16"
grep -q 'bf16]' "$bf16"
# name: source: -D flags
variants=(
  "t128x128x32_w64x64:$src/samples/gemm/gemm_portable.wave:-DBLOCK_M=128 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=64"
  "t128x128x32_w64x64_async:$aligned:-DBLOCK_M=128 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=64"
  "t128x128x32_w64x32_async:$aligned:-DBLOCK_M=128 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=32"
  "t64x64x32_w32x32_async:$aligned:"
  "t128x128x32_w64x64_async_bf16:$bf16:-DBLOCK_M=128 -DBLOCK_N=128 -DWAVE_M=64 -DWAVE_N=64"
)
for v in "${variants[@]}"; do
  name=${v%%:*} rest=${v#*:}
  file=${rest%%:*} flags=${rest#*:}
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  "$wavec" "$file" --target=sm_90 $flags \
    -o "$out/$name/gemm.cubin" --header "$out/$name/gemm.h" --stub "$out/$name/gemm.c"
  echo "$flags" > "$out/$name/flags"
done
mkdir -p "$out/batched"
"$wavec" "$src/tests/codegen/inputs/gemm_batched.wave" --target=sm_90 -o "$out/batched/gemm.cubin" \
  --header "$out/batched/bgemm.h" --stub "$out/batched/gemm.c"
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
specs=()
cc -O2 -std=c99 -shared -fPIC -Iruntime/include -Ibatched batched/gemm.c -L. -Wl,-rpath,$PWD \
  -lwave_runtime -o batched/libgemm.so 2>&1 | tail -3
specs+=("batched=$PWD/batched/libgemm.so@batched")
for d in t*/; do
  d=${d%/}
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
  case $d in *bf16*) specs+=("$d=$PWD/$d/libgemm.so@bf16"); continue;; esac
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -I$d samples/gemm/gemm_main.c $d/gemm.c \
    -L. -Wl,-rpath,$PWD -lwave_runtime -lm -o $d/gemm_main 2>&1 | tail -3
  specs+=("$d=$PWD/$d/libgemm.so")
done
{
  for d in t*/; do
    d=${d%/}
    [ -x $d/gemm_main ] || continue
    for shape in "250 130 192" "256 256 256" "1000 1000 1000" "129 67 520" "250 130 190"; do
      WAVE_DEVICE=cuda://0 timeout 60 ./$d/gemm_main $shape; echo "$d $shape exit $?"
    done
  done
} 2>&1 | tee "$OUT/c_sample.log"
timeout 400 python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" 2>&1 | tee "$OUT/bench.log"
RUN
chmod +x "$out/run.sh"
echo "prepared $out"
