#!/usr/bin/env bash
# Prepares devrun/ops for tests/python/torch_ops_gpu_check.py on a GPU machine that has torch
# but no wavec: the sm_90 headers and stubs of the operation kernels that issue 16 checks
# against torch on silicon (histogram, topk, a gather and the MoE routing sample), and this
# build's libwave_runtime. Run from the repository
# root after building; then on the GPU machine, from the repository root:
#   PYTHONPATH=python python3 tests/python/torch_ops_gpu_check.py
set -euo pipefail
cd "$(dirname "$0")/.."
out=devrun/ops
rm -rf "$out"
mkdir -p "$out"
build() { # name source [wavec flags...]
  local name=$1 src=$2
  shift 2
  ./build/wavec "$src" --target=sm_90 "$@" -o "$out/$name.ptx" --header "$out/$name.h" \
    --stub "$out/$name.c"
}
build histogram samples/histogram/histogram.wave
build topk_rows tests/e2e/kernels/topk_rows.wave
build moe_routing samples/moe_routing/moe_routing.wave
build gather_embed tests/e2e/kernels/gather_embed.wave
cp -L build/runtime/libwave_runtime.so.0 "$out/libwave_runtime.so.0"
ls "$out"
