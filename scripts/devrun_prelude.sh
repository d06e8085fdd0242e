# Sourced by the device scripts that scripts/make_devrun_{gemm,gemm_fp8,epilogue,epistage}.sh
# write (`cd "$(dirname "$0")" && . ./devrun_prelude.sh`; the make script copies this file
# beside them): the GPU's name, clock and power into $OUT/gpu.txt, and the runtime built as
# ./libwave_runtime.so from the copied runtime/ sources (the device has no wavec build).
set -u
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -Iruntime/format -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
