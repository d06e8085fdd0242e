#!/usr/bin/env bash
# Packs wavec, wave-run, the code generator library and the front-end fuzzer (built here) into
# OUTDIR with scripts/fuzz_many_cores.sh as OUTDIR/run.sh, for the long fuzz runs of
# docs/reliability.md on a many-core machine that has no LLVM/MLIR (the code generator library
# links them statically; libfmt travels beside the programs).
#   scripts/make_devrun_fuzz.sh BUILD FUZZ_BUILD OUTDIR   (e.g. build build-fuzz devrun-fuzz)
set -euo pipefail
build=$1 fuzz=$2 out=$3 src=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
rm -rf "$out" && mkdir -p "$out"
cp "$build/wavec" "$build/wave-run" "$stage/"
strip --strip-debug -o "$stage/libwavec_codegen.so" "$build/libwavec_codegen.so"
cp -L "$(ldd "$build/wavec" | awk '/libfmt/ {print $3}')" "$stage/"
tar cf - -C "$stage" . | xz -T0 -6 > "$out/bin.tar.xz"
tar cf - -C "$fuzz/tests/fuzz_frontend" wave_frontend_fuzzer | xz -T0 -6 > "$out/fuzzer.tar.xz"
cp "$src/scripts/fuzz_many_cores.sh" "$out/run.sh"
du -sh "$out"
