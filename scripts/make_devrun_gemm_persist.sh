#!/usr/bin/env bash
# Prepares the device directory of the persistent-tiles measurement (issue 17 item 3;
# docs/performance.md, "GEMM on the H100: persistent tiles"): the sm_90a TMA + wgmma GEMM
# (gemm_portable.wave, 128 x 256 x 64 tiles, assume(K % 8 == 0)) compiled by WAVEC with
# `hardware(persistent = 1)` (warp-specialized, persistent tiles) as
# t128x256x64_w64x256_async_wgmma[_bf16], the same sources in the default form (warp-specialized,
# one output tile per workgroup) as ctl_wgmma[_bf16], and two correctness-only copies of the persistent f16 stub whose launch
# grid is forced to 1 and to 7 workgroups (grid1_wgmma, grid7_wgmma: every workgroup walks many
# tiles, the ring's phases running on across them). Then scripts/devrun_gemm_persist.sh runs it:
#   scripts/make_devrun_gemm_persist.sh WAVEC OUTDIR
#   (device) cd OUTDIR && ROUNDS=5 bash devrun_gemm_persist.sh
set -euo pipefail
wavec=$1 out=$2 src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out" && mkdir -p "$out/runtime" "$out/samples/gemm"
cp -r "$src/runtime/include" "$src/runtime/src" "$src/runtime/format" "$out/runtime/"
cp -r "$src/samples/common" "$out/samples/"
cp "$src/samples/gemm/gemm_main.c" "$out/samples/gemm/"
cp "$src/bench/gemm_cuda.py" "$src/bench/wave_bench.py" "$src/bench/gemm_check_f64.py" \
  "$src/scripts/devrun_gemm_persist.sh" "$out/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^    assume(K > BLOCK_K \* 4);/&\n    assume(K % 8 == 0);/' "$src/samples/gemm/gemm_portable.wave" > "$tmp/aligned.wave"
grep -q 'K % 8 == 0' "$tmp/aligned.wave"
sed 's/f16]/bf16]/g' "$tmp/aligned.wave" > "$tmp/bf16.wave"
for f in aligned bf16; do
  sed 's/^    assume(K % 8 == 0);/&\n    hardware(persistent = 1);/' "$tmp/$f.wave" > "$tmp/${f}_persist.wave"
  grep -q 'persistent = 1' "$tmp/${f}_persist.wave"
done
wg="-DBLOCK_M=128 -DBLOCK_N=256 -DBLOCK_K=64 -DWAVE_M=64 -DWAVE_N=256"
for v in t128x256x64_w64x256_async_wgmma:aligned_persist \
         t128x256x64_w64x256_async_wgmma_bf16:bf16_persist ctl_wgmma:aligned ctl_wgmma_bf16:bf16; do
  name=${v%%:*} file=$tmp/${v#*:}.wave
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  "$wavec" "$file" --target=sm_90a $wg -o "$out/$name/gemm.cubin" --header "$out/$name/gemm.h" \
    --stub "$out/$name/gemm.c" 2> /dev/null
  "$wavec" "$file" --target=sm_90a $wg --emit=ptx > "$out/$name/gemm.ptx" 2> /dev/null
done
grep -q "persistent = 1" "$out/t128x256x64_w64x256_async_wgmma/gemm.c"
! grep -q "persistent" "$out/ctl_wgmma/gemm.c"
for g in 1 7; do
  mkdir -p "$out/grid${g}_wgmma"
  cp "$out/t128x256x64_w64x256_async_wgmma/gemm.h" "$out/t128x256x64_w64x256_async_wgmma/gemm.cubin" \
    "$out/grid${g}_wgmma/"
  sed "s/(uint64_t)info.multiprocessor_count \* persistent;/(uint64_t)$g; (void)info;/" \
    "$out/t128x256x64_w64x256_async_wgmma/gemm.c" > "$out/grid${g}_wgmma/gemm.c"
  grep -q "(uint64_t)$g; (void)info;" "$out/grid${g}_wgmma/gemm.c"
done
echo "prepared $out"
