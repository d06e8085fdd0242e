#!/usr/bin/env bash
# samples/gemm built through its Makefile with `assume(K % 8 == 0)` added (the cp.async
# pipeline) and a block tile given as TILES, then run through the generated stub on DEVICE
# (e.g. emu:sm_90) at a few shapes, each checked by gemm_main against a double-precision
# reference. With a 256 x 128 tile the pipeline needs dynamic shared memory on NVIDIA: the stub
# must request it for the native object (checked in the stub's text) and the emulator image
# must hold it itself.
# SHAPES (optional, "M N K" separated by commas) replaces the default shapes.
#   gemm_stub_tiles.sh WAVEC SOURCE_DIR RUNTIME_LIB_DIR TARGET DEVICE "TILES" [DYNAMIC_BYTES] [SHAPES]
set -euo pipefail
wavec=$1 src=$2 rtlib=$3 target=$4 device=$5 tiles=$6 dynamic=${7:-}
shapes=${8:-"256 256 256,250 130 192,300 200 328"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/samples"
cp -r "$src/samples/gemm" "$src/samples/common" "$work/samples/"
cd "$work/samples/gemm"
sed -i 's/^    assume(K > BLOCK_K \* 4);/&\n    assume(K % 8 == 0);/' gemm_portable.wave
grep -q 'K % 8 == 0' gemm_portable.wave
make WAVEC="$wavec" TARGET="$target" TILES="$tiles" RUNTIME_INC="$src/runtime/include" \
  RUNTIME_LIB="$rtlib" > /dev/null
if [ -n "$dynamic" ] && ! grep -q "shared = $dynamic;" gemm.c; then
  echo "FAIL: the stub does not request $dynamic bytes of dynamic shared memory"
  exit 1
fi
export WAVE_DEVICE=$device
IFS=, read -ra list <<< "$shapes"
for shape in "${list[@]}"; do
  ./gemm_main $shape
done
