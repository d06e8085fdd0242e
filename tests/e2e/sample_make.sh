#!/usr/bin/env bash
# Builds a sample with its own Makefile (wavec -> code object + header + stub -> host program
# linked against libwave_runtime) in a scratch copy, checks that a second `make` does nothing,
# and runs the program: 0 = checked on a device, 77 = no device here (reported as skipped).
#   sample_make.sh WAVEC SOURCE_DIR RUNTIME_LIB_DIR SAMPLE TARGET [DEVICE [PROGRAM ARGS...]]
# DEVICE (e.g. cuda://0, hip://0, emu:sm_90) becomes $WAVE_DEVICE for the program; the program
# is run once per shape argument, its sizes separated by commas ("M,N"; none: its default shape).
set -euo pipefail
wavec=$1 src=$2 rtlib=$3 sample=$4 target=$5
shift 5
if [ $# -gt 0 ]; then
  export WAVE_DEVICE=$1
  shift
fi
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
if [ $# -eq 0 ]; then
  ./"${sample}_main"
  exit $?
fi
for shape in "$@"; do
  ./"${sample}_main" ${shape//,/ }
  status=$?
  if [ $status -ne 0 ]; then
    exit $status
  fi
done
exit 0
