#!/usr/bin/env bash
# The installed CMake package: installs this build into a prefix inside the build directory,
# then configures and builds samples/cmake against it with find_package(Wavec) and
# wavec_add_kernel, checks the install layout, that a second build does nothing, that touching
# the .wave source regenerates the code object, header and stub (add_custom_command DEPFILE),
# and runs the program: 0 = checked on a device, 77 = no device (skipped, reason printed).
#   cmake_package.sh BUILD_DIR SOURCE_DIR TARGET build|run
# `build` does everything but running the program (it passes without a device); `run` runs the
# program that `build` made (CTest orders them with a fixture).
set -euo pipefail
build=$1 src=$2 target=$3 mode=${4:-build}
prefix="$build/ux-install"
work="$build/ux-cmake-sample"
if [ "$mode" = run ]; then
  [ -x "$work/build/saxpy_main" ] || { echo "FAIL: no sample program: run the build step first"; exit 1; }
  exec "$work/build/saxpy_main"
fi
rm -rf "$prefix" "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/wavec lib/libwavec_codegen.so include/wave/runtime.h include/wave/kernel_api.h \
         lib/cmake/Wavec/WavecConfig.cmake lib/cmake/Wavec/WavecConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done
ls "$prefix"/lib*/libwave_runtime.so* >/dev/null 2>&1 || ls "$prefix"/lib/*/libwave_runtime.so* >/dev/null ||
  fail "the install lacks libwave_runtime.so"
# The installed compiler finds its code generator (../lib) on its own.
export WAVEC_CACHE_DIR="$work/cache"
"$prefix/bin/wavec" "$src/samples/copy/copy.wave" --target=sm_90 -o "$work/probe.ptx" ||
  fail "the installed wavec cannot generate code"

cp -r "$src/samples/cmake" "$work/src"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DWAVE_TARGETS="${target//,/;}" >/dev/null || fail "configuring the sample against the install failed"
cmake --build "$work/build" || fail "building the sample failed"
gen="$work/build/wavec/kernels"
for f in saxpy.h saxpy.c saxpy.d; do [ -f "$gen/$f" ] || fail "wavec_add_kernel did not make $f"; done
out=$(cmake --build "$work/build")
echo "$out" | grep -q "no work to do" || fail "a second build did something: $out"
sleep 1.1
touch "$work/src/saxpy.wave"
out=$(cmake --build "$work/build")
echo "$out" | grep -q "wavec: saxpy.wave" || fail "touching saxpy.wave did not rerun wavec: $out"
out=$(cmake --build "$work/build")
echo "$out" | grep -q "no work to do" || fail "the build after the rebuild did something: $out"
echo "find_package(Wavec) + wavec_add_kernel built samples/cmake against $prefix"
