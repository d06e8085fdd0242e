#!/usr/bin/env bash
# One wavec run with several targets makes one header and stub carrying every code object and
# each target's emulator image; the unchanged host program then runs on the emulator of each
# target (the stub picks the code object, and its launch geometry, by the device's arch), and a
# device without a matching code object fails with a message naming what is on offer.
#   multi_target.sh WAVEC SOURCE_DIR RUNTIME_LIB_DIR
set -euo pipefail
wavec=$1 src=$2 rtlib=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/samples"
cp -r "$src/samples/copy" "$src/samples/common" "$work/samples/"
cd "$work/samples/copy"
"$wavec" copy.wave --target=gfx942,sm_90 --target=gfx90a --header copy.h --stub copy.c
cc -O2 -std=c99 -Wall -Wextra -Werror -I"$src/runtime/include" -I. copy_main.c copy.c \
  -L"$rtlib" -Wl,-rpath,"$rtlib" -lwave_runtime -o copy_main
for t in gfx942 sm_90 gfx90a; do
  WAVE_DEVICE=emu:$t ./copy_main 37 1000
done
set +e
out=$(WAVE_DEVICE=emu:gfx1100 ./copy_main 37 1000 2>&1)
status=$?
set -e
echo "$out"
if [ $status -eq 0 ] || ! grep -q "no code object for the device's arch emu:gfx1100 (built for: gfx942 emu:gfx942 sm_90 emu:sm_90 gfx90a emu:gfx90a)" <<<"$out"; then
  echo "FAIL: emu:gfx1100 should find no code object"
  exit 1
fi
# -o or --emit with several targets is a usage error, and writes nothing.
if "$wavec" copy.wave --target=gfx942,sm_90 -o x.hsaco --header y.h --stub y.c 2>err.txt; then
  echo "FAIL: -o with several targets was accepted"
  exit 1
fi
grep -q "several targets" err.txt
test ! -e x.hsaco && test ! -e y.h
# --emit=emu and the .wemu extension write an emulator image (magic WAVEEMU1).
"$wavec" copy.wave --target=sm_90 --emit=emu -o a.img
"$wavec" copy.wave --target=gfx1100 -o b.wemu
for f in a.img b.wemu; do
  test "$(head -c 8 "$f")" = "WAVEEMU1" || { echo "FAIL: $f is not an emulator image"; exit 1; }
done
# Without -o, --emit=emu writes FILE's stem + .wemu.
"$wavec" copy.wave --emit=emu
test "$(head -c 8 copy.wemu)" = "WAVEEMU1"
# An image does not go into --header/--stub alone.
if "$wavec" copy.wave --emit=emu -o c.wemu --header c.h --stub c.c 2>/dev/null; then
  echo "FAIL: --emit=emu with --header/--stub was accepted"
  exit 1
fi
echo "multi-target: OK"
