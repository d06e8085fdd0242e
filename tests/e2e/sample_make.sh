#!/usr/bin/env bash
# Builds a sample with its own Makefile (wavec -> code object + header + stub -> host program
# linked against libwave_runtime) in a scratch copy, checks that a second `make` does nothing,
# and runs the program: 0 = checked on a device, 77 = no device here (reported as skipped).
#   sample_make.sh WAVEC SOURCE_DIR RUNTIME_LIB_DIR SAMPLE TARGET
set -euo pipefail
wavec=$1 src=$2 rtlib=$3 sample=$4 target=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/samples"
cp -r "$src/samples/$sample" "$src/samples/common" "$work/samples/"
cd "$work/samples/$sample"
make WAVEC="$wavec" TARGET="$target" RUNTIME_INC="$src/runtime/include" RUNTIME_LIB="$rtlib"
if ! make -q WAVEC="$wavec" TARGET="$target" RUNTIME_INC="$src/runtime/include" RUNTIME_LIB="$rtlib"; then
  echo "FAIL: a second make would rebuild although nothing changed"
  exit 1
fi
set +e
./"${sample}_main"
status=$?
set -e
exit $status
