#!/usr/bin/env bash
# Prepares devrun/py for tests/python/torch_gpu_check.py on a GPU machine that has torch but no
# wavec: the sm_90 headers and stubs of the copy sample and a GEMM variant, and this build's
# libwave_runtime (its soname file). Run from the repository root after building.
#   bash scripts/make_devrun_python.sh && (on the GPU machine) python3 tests/python/torch_gpu_check.py
set -euo pipefail
cd "$(dirname "$0")/.."
out=devrun/py
rm -rf "$out"
mkdir -p "$out"
./build/wavec samples/copy/copy.wave --target=sm_90 -o "$out/copy.ptx" --header "$out/copy.h" \
  --stub "$out/copy.c"
# The tutorial's 128x128 tile with 64x64 warp tiles (docs/tutorial.md section 10).
./build/wavec samples/gemm/gemm_portable.wave --target=sm_90 -DBLOCK_M=128 -DBLOCK_N=128 \
  -DWAVE_M=64 -DWAVE_N=64 -o "$out/gemm.ptx" --header "$out/gemm.h" --stub "$out/gemm.c"
cp -L build/runtime/libwave_runtime.so.0 "$out/libwave_runtime.so.0"
ls -la "$out"
