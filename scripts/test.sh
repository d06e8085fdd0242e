#!/usr/bin/env bash
# The README's second command: builds (if needed) and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" \
  --output-junit "$PWD/build/test-results.xml"
# Every emulator test ran and passed: none skipped or left out (tests/e2e/check_emu_runs.py).
python3 tests/e2e/check_emu_runs.py results build/test-results.xml build .
