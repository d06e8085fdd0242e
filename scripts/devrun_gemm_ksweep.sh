#!/usr/bin/env bash
# K sweep (issue 17 item 2): time = fixed + per-K cost, per variant, to split the loop's rate
# from the per-tile fixed cost (pipeline fill, epilogue, last wave).
# Copied into a directory made by scripts/make_devrun_gemm_tma.sh; on the device: bash THIS.
set -u
cd "$(dirname "$0")"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
g++ -O2 -std=c++17 -shared -fPIC runtime/src/*.cpp runtime/src/emu/*.cpp -Iruntime/include \
  -Iruntime/src -Iruntime/format -ldl -lpthread -o libwave_runtime.so 2>&1 | tail -5
specs=()
for d in t128x256x64_w64x256_async_wgmma t128x256x64_w64x256_async_wgmma_bf16 ctl_wgmma ctl_wgmma_bf16; do
  cc -O2 -std=c99 -shared -fPIC -Iruntime/include -I$d $d/gemm.c -L. -Wl,-rpath,$PWD \
    -lwave_runtime -o $d/libgemm.so 2>&1 | tail -3
  case $d in *bf16*) specs+=("$d=$PWD/$d/libgemm.so@bf16");; *) specs+=("$d=$PWD/$d/libgemm.so");; esac
done
timeout 150 python3 gemm_cuda.py "$PWD/libwave_runtime.so" "${specs[@]}" --rounds 3 --shapes \
  4096,4096,1024 4096,4096,2048 4096,4096,4096 4096,4096,8192 4096,4096,16384 8192,8192,2048 \
  8192,8192,8192 2>&1 | tee "$OUT/ksweep.log" | tail -40
