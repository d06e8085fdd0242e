#!/usr/bin/env bash
# The README's first command: installs every dependency, builds wavec, and runs the main job on
# the samples: check each one, print the GEMM sample's distribution (grid, block and the index
# every thread uses), compile the copy sample into an AMD code object plus its C API, and run it
# on the CPU emulator (gfx942) at an unaligned shape, checked against the reference evaluator.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
for f in samples/*/*.wave; do
  ./build/wavec "$f" --check && echo "wavec --check $f: ok"
done
echo
./build/wavec samples/gemm/gemm.wave --emit=distribution -DM=4096 -DN=4096 -DK=4096

echo
out=$(mktemp -d)
./build/wavec samples/copy/copy.wave -o "$out/copy.hsaco" --header "$out/copy.h" --stub "$out/copy.c"
echo "wavec samples/copy/copy.wave -o copy.hsaco --header copy.h --stub copy.c:"
/usr/lib/llvm-19/bin/llvm-readelf --symbols "$out/copy.hsaco" | grep -E " copy(\.kd)?$"
grep -E "_launch\(" "$out/copy.h"
rm -rf "$out"

echo
echo "wave-run samples/copy/copy.wave --device emu:gfx942 --check --size M=100 --size N=300:"
./build/wave-run samples/copy/copy.wave --device emu:gfx942 --check --size M=100 --size N=300

echo
echo "wave-run samples/gemm/gemm.wave --device emu:gfx942 --check --size M=256 --size N=256 --size K=256:"
./build/wave-run samples/gemm/gemm.wave --device emu:gfx942 --check --size M=256 --size N=256 --size K=256
