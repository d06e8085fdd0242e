#!/usr/bin/env bash
# Prepares devrun/ for a run of the memory-bound samples on an NVIDIA device that has no wavec:
# PTX/cubins + headers + stubs of samples/copy and samples/elementwise and the launch-check stubs
# (compiled here), and run.sh, which builds the runtime, the host programs and
# tests/ux/launch_checks there and runs them, then bench/cuda_memory_bound.py.
#   scripts/make_devrun_memory.sh BUILD_DIR     (then: device run `bash devrun/run.sh`, carry devrun)
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$(dirname "$0")/.." && pwd)
out="$src/devrun"
rm -rf "$out" && mkdir -p "$out"
for k in copy elementwise; do
  "$build/wavec" "$src/samples/$k/$k.wave" --target=sm_90 --no-cache -o "$out/$k.ptx" \
    --header "$out/$k.h" --stub "$out/$k.c"
  "$build/wavec" "$src/samples/$k/$k.wave" --target=sm_90 --no-cache -o "$out/$k.cubin"
done
cp "$build"/tests/launch_check_stubs/*.h "$build"/tests/launch_check_stubs/*.c "$out/"
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
{
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -Iruntime/format -ldl -lpthread -o devrun/libwave_runtime.so 2>&1 | tail -5
for k in copy elementwise; do
  cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -Idevrun samples/$k/${k}_main.c \
    devrun/$k.c -Ldevrun -Wl,-rpath,$PWD/devrun -lwave_runtime -lm -o devrun/${k}_main
done
cc -O2 -std=c99 -Wall -Wextra -Werror -Iruntime/include -Idevrun tests/ux/launch_checks.c \
  devrun/elementwise.c devrun/scale_add.c -Ldevrun -Wl,-rpath,$PWD/devrun -lwave_runtime -ldl \
  -lm -o devrun/launch_checks
nvidia-smi --query-gpu=name,temperature.gpu --format=csv,noheader
for shape in "4096 4096" "4093 1021" "1000 4093" "1 7"; do
  for k in copy elementwise; do
    echo "== $k $shape"; WAVE_DEVICE=cuda://0 ./devrun/${k}_main $shape; echo "exit $?"
  done
done
echo "== launch_checks checks"; ./devrun/launch_checks checks; echo "exit $?"
echo "== launch_checks device"; WAVE_DEVICE=cuda://0 ./devrun/launch_checks device; echo "exit $?"
echo "== bench"; PYTHONUNBUFFERED=1 python3 bench/cuda_memory_bound.py devrun
} 2>&1 | tee "$OUT/h100.log"
RUN
chmod +x "$out/run.sh"
echo "devrun/ ready: run 'bash devrun/run.sh' on the device with carry devrun"
