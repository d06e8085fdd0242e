#!/usr/bin/env bash
# Prepares the device directory of the 4096^3 knob sweep (docs/performance.md, "GEMM at 4096^3:
# tile, order, ring and occupancy knobs"): the sm_90a GEMM of samples/gemm/gemm_portable.wave
# with assume(K % 8 == 0) and assume(N % 8 == 0), f16 C (f16 inputs) and bf16 C (bf16 inputs),
# compiled with several tiles, raster groups, ring depths and hardware() forms. The group and
# depth overrides need a wavec built with bench/results/gemm4k_s13_h100/exp_knobs.patch applied
# (environment variables WAVE_EXP_GROUP, WAVE_EXP_STAGES; an experiment, not in the compiler);
# without it those variants are the default and the script stops (it compares the cubins).
# With ptxas here it also builds `fence_*` (base with bench/ptx_wait_before_cast.py's wait in
# front of the epilogue's casts), applies that to every variant whose PTX draws ptxas's note
# C7514, builds `baseptx_f16c` (the assembler's control) and `hang112_f16c` (the four-consumer
# tile with the setmaxnreg count before f54ed42).
#   scripts/make_devrun_gemm4k.sh WAVEC OUTDIR
#   (device) cd OUTDIR && ROUNDS=5 CHECK="VARIANT_f16c ..." HANG=1 bash gemm4k_run.sh
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/runtime"
cp -r "$src/runtime/include" "$src/runtime/src" "$src/runtime/format" "$out/runtime/"
cp "$src/bench/gemm_cuda.py" "$src/bench/gemm_check_f64.py" \
  "$src/bench/wave_bench.py" "$out/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$src/scripts/gemm_variant_sources.sh"
gemm_variant_sources "$src" "$tmp"
for f in f16c bf16c; do
  for hw in "persistent = 1" "warp_specialize = 0"; do
    t=${hw%% *}
    sed "s/^    wave(N, WAVE_N);/&\n    hardware($hw);/" "$tmp/$f.wave" > "$tmp/${f}_$t.wave"
    grep -q "$hw" "$tmp/${f}_$t.wave"
  done
done
t256="-DBLOCK_M=128 -DBLOCK_N=256 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=256"
# NAME SOURCE-SUFFIX ENV FLAGS (NAME gets _f16c / _bf16c)
variants=(
  "base|| |$t256"
  "g8||WAVE_EXP_GROUP=8|$t256"
  "g32||WAVE_EXP_GROUP=32|$t256"
  "s3||WAVE_EXP_STAGES=3|$t256"
  "persist|_persistent| |$t256"
  "t256x128w128||  |-DBLOCK_M=256 -DBLOCK_N=128 -DBLOCK_K=64 -DWAVE_M=128 -DWAVE_N=128"
  "t256x128w64||  |-DBLOCK_M=256 -DBLOCK_N=128 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=128"
  "t128x128||  |-DBLOCK_M=128 -DBLOCK_N=128 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=128"
  "t128x128s6||WAVE_EXP_STAGES=6|-DBLOCK_M=128 -DBLOCK_N=128 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=128"
  "t128x128nows3|_warp_specialize|WAVE_EXP_STAGES=3|-DBLOCK_M=128 -DBLOCK_N=128 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=128"
)
for v in "${variants[@]}"; do
  IFS='|' read -r name suf envs flags <<< "$v"
  for f in f16c bf16c; do
    d=$out/${name}_$f
    mkdir -p "$d"
    # shellcheck disable=SC2086
    env $envs "$wavec" "$tmp/$f$suf.wave" --no-cache --target=sm_90a $flags -o "$d/gemm.cubin" \
      --header "$d/gemm.h" --stub "$d/gemm.c"
    # shellcheck disable=SC2086
    env $envs "$wavec" "$tmp/$f$suf.wave" --target=sm_90a $flags --print-ir-after=schedule \
      -o /dev/null 2> "$d/schedule.txt"
  done
done
# The 4-consumer tile as the compiler before f54ed42 emitted it (consumers asking setmaxnreg
# for 112 of a 61440-register pool): the same PTX with 104 -> 112, assembled by ptxas and
# swapped into the stub (bench/swap_stub_image.py). Run last, alone, under a short timeout.
if command -v ptxas > /dev/null; then
  d=$out/hang112_f16c
  mkdir -p "$d"
  "$wavec" "$tmp/f16c.wave" --no-cache --target=sm_90a -DBLOCK_M=256 -DBLOCK_N=128 -DBLOCK_K=64 \
    -DWAVE_M=64 -DWAVE_N=128 --emit=ptx -o "$tmp/w64.ptx"
  grep -q 'setmaxnreg.inc.sync.aligned.u32 104;' "$tmp/w64.ptx"
  sed 's/setmaxnreg.inc.sync.aligned.u32 104;/setmaxnreg.inc.sync.aligned.u32 112;/' "$tmp/w64.ptx" \
    > "$tmp/w64_112.ptx"
  ptxas -arch=sm_90a "$tmp/w64_112.ptx" -o "$d/gemm.cubin"
  python3 "$src/bench/swap_stub_image.py" "$out/t256x128w64_f16c/gemm.c" "$d/gemm.cubin" "$d/gemm.c"
  cp "$out/t256x128w64_f16c/gemm.h" "$d/"
fi
# The f16-C/bf16-C kernels whose PTX reads accumulators before the last wgmma wait (ptxas note
# C7514: the wgmmas serialized): `fence_*` is base with bench/ptx_wait_before_cast.py's wait in
# front of the conversions, `baseptx_f16c` base's PTX assembled by the same ptxas unchanged
# (control for the assembler), and every other variant with the note gets the same fix in
# place (listed in fenced.txt). Needs ptxas here.
assemble() { # DIR PTX: cubin from PTX, swapped into DIR's stub
  ptxas -arch=sm_90a "$2" -o "$1/gemm.cubin"
  python3 "$src/bench/swap_stub_image.py" "$1/gemm.c" "$1/gemm.cubin" "$1/gemm.c.new"
  mv "$1/gemm.c.new" "$1/gemm.c"
}
c7514() { ptxas -arch=sm_90a -v "$1" -o /dev/null 2>&1 | grep -c C7514 || true; }
for f in f16c bf16c; do cp -r "$out/base_$f" "$out/fence_$f"; done
cp -r "$out/base_f16c" "$out/baseptx_f16c"
: > "$out/fenced.txt"
for d in "$out"/*_f16c "$out"/*_bf16c; do
  n=$(basename "$d")
  case $n in base_*|hang112_*) continue ;; esac
  IFS='|' read -r _ suf envs flags <<< "$(printf '%s\n' "${variants[@]}" | grep "^${n%_*}|" || echo "base|| |$t256")"
  f=${n##*_}
  # shellcheck disable=SC2086
  env $envs "$wavec" "$tmp/$f$suf.wave" --no-cache --target=sm_90a $flags --emit=ptx -o "$tmp/$n.ptx"
  if [ "$n" = baseptx_f16c ]; then assemble "$d" "$tmp/$n.ptx"; continue; fi
  [ "$(c7514 "$tmp/$n.ptx")" = 0 ] && continue
  python3 "$src/bench/ptx_wait_before_cast.py" "$tmp/$n.ptx" "$tmp/${n}_w.ptx"
  [ "$(c7514 "$tmp/${n}_w.ptx")" = 0 ] || { echo "$n: C7514 after the fix"; exit 1; }
  assemble "$d" "$tmp/${n}_w.ptx"
  echo "$n" >> "$out/fenced.txt"
done
cat "$out/fenced.txt"
for v in g8 g32 s3; do
  ! cmp -s "$out/base_f16c/gemm.cubin" "$out/${v}_f16c/gemm.cubin" ||
    { echo "$v: same cubin as base (wavec without exp_knobs.patch?)"; exit 1; }
done
cat > "$out/gemm4k_run.sh" <<'RUN'
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
RUN
chmod +x "$out/gemm4k_run.sh"
echo "prepared $out"
