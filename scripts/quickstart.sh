#!/usr/bin/env bash
# The README's first command: installs every dependency, builds wavec, and runs the main job on
# the samples: check each one, then print the GEMM sample's distribution (grid, block and the
# index every thread uses).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
for f in samples/*/*.wave; do
  ./build/wavec "$f" --check && echo "wavec --check $f: ok"
done
echo
./build/wavec samples/gemm/gemm.wave --emit=distribution -DM=4096 -DN=4096 -DK=4096
