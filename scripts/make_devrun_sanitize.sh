#!/usr/bin/env bash
# Prepares a self-contained directory that runs every sample's native NVIDIA code object under
# compute-sanitizer (memcheck, racecheck, synccheck) on a device that has no wavec: the
# headers and stubs (which embed the code objects) are compiled here, the runtime sources and
# the samples' host programs are copied, and run.sh builds and runs them there. Each host
# program checks its own results against a host reference; the table at the end gives, per
# sample and tool, the exit status and the sanitizer's error summary. The `seeded_*` entry is a
# planted race (barriers left out) that racecheck must report, so a clean table means something.
#   scripts/make_devrun_sanitize.sh WAVEC OUTDIR     (then on the device: bash OUTDIR/run.sh,
#   carrying OUTDIR if it is ignored by git, as devsan/ is)
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out"
cp -r "$src/runtime" "$src/samples" "$out/"
# name | sample dir | kernels (file[=output name][:wavec flags], comma-separated) | target |
# cc flags | host program | its arguments
entries=(
  "copy|copy|copy.wave|sm_90||copy_main.c|1000 4093"
  "elementwise|elementwise|elementwise.wave|sm_90||elementwise_main.c|1001 4093"
  "gemm_sm90|gemm|gemm_portable.wave=gemm|sm_90||gemm_main.c|250 130 190"
  "gemm_sm90a|gemm|gemm_portable.wave=gemm|sm_90a||gemm_main.c|250 130 190"
  "softmax|softmax|softmax.wave,softmax_rows.wave:-DN=8192 -DWAVES=8,online_softmax.wave|sm_90|-DROWS_N=8192|softmax_main.c|37 3001"
  "layernorm|layernorm|layernorm.wave:-DN=1024 -DWAVES=4|sm_90|-DLN_N=1024|layernorm_main.c|300"
  "attention_d64|attention|attention.wave:-DD=64|sm_90|-DATTENTION_D=64|attention_main.c|2 100 77"
  "attention_wgmma_d128|attention|attention_wgmma.wave=attention:-DD=128 -DBLOCK_M=128 -DBLOCK_K2=64|sm_90a|-DATTENTION_D=128|attention_main.c|2 100 77"
  "saxpy|cmake|saxpy.wave:-DBLOCK=256|sm_90||main.c|"
  "gemm_epilogue_sm90|gemm_epilogue|gemm_epilogue.wave|sm_90||gemm_epilogue_main.c|250 130 190"
  "gemm_epilogue_sm90a|gemm_epilogue|gemm_epilogue.wave|sm_90a||gemm_epilogue_main.c|250 130 190"
  "histogram|histogram|histogram.wave|sm_90||histogram_main.c|7 100003"
  "moe_routing|moe_routing|moe_routing.wave|sm_90||moe_routing_main.c|1000 60"
  # A planted bug that racecheck must report: the GEMM without its barriers.
  "seeded_gemm_no_barriers|gemm|gemm_portable.wave=gemm:--debug-no-barriers|sm_90||gemm_main.c|250 130 190"
)
for e in "${entries[@]}"; do
  IFS='|' read -r name dir kernels target cflags main args <<<"$e"
  mkdir -p "$out/$name"
  IFS=',' read -r -a ks <<<"$kernels"
  for k in "${ks[@]}"; do
    file=${k%%:*} flags=""
    [[ $k == *:* ]] && flags=${k#*:}
    base=${file%.wave}
    if [[ $file == *=* ]]; then base=${file#*=} file=${file%%=*}; fi
    # shellcheck disable=SC2086
    "$wavec" "$src/samples/$dir/$file" --target=$target $flags --no-cache \
      -o "$out/$name/$base.cubin" --header "$out/$name/$base.h" --stub "$out/$name/$base.c"
  done
  printf '%s\n%s\n%s\n%s\n' "$dir" "$cflags" "$main" "$args" > "$out/$name/spec"
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
compute-sanitizer --version | tail -1
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -Iruntime/format -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
table=()
for d in */; do
  d=${d%/}
  [[ -f $d/spec ]] || continue
  { read -r dir; read -r cflags; read -r main; read -r args; } < "$d/spec"
  # shellcheck disable=SC2086
  cc -O2 -std=c99 $cflags -Iruntime/include -I$d -Isamples/$dir samples/$dir/$main $d/*.c \
    -L. -Wl,-rpath,$PWD -lwave_runtime -lm -o $d/main 2>&1 | tail -3
  # shellcheck disable=SC2086
  WAVE_DEVICE=cuda://0 timeout 120 ./$d/main $args > "$d/plain.log" 2>&1
  row="$d plain=$?"
  for tool in memcheck racecheck synccheck; do
    # shellcheck disable=SC2086
    WAVE_DEVICE=cuda://0 timeout 600 compute-sanitizer --tool $tool --error-exitcode 9 \
      ./$d/main $args > "$d/$tool.log" 2>&1
    rc=$?
    summary=$(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$d/$tool.log" | tail -1)
    row="$row | $tool=$rc ${summary#========= }"
  done
  table+=("$row")
  for f in "$d"/*.log; do echo "---- $f"; head -c 20000 "$f"; done > "$OUT/$d.logs"
done
echo "== sanitizer table (exit 0 = clean and results checked; 9 = errors reported)"
printf '%s\n' "${table[@]}"
} 2>&1 | tee "$OUT/sanitize.log"
RUN
chmod +x "$out/run.sh"
echo "prepared $out"
