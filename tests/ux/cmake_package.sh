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

# Bash completion, installed where bash-completion looks, completes flags and targets.
comp="$prefix/share/bash-completion/completions/wavec"
[ -f "$comp" ] || fail "the install lacks the bash completion"
got=$(bash -c 'source "$1"; COMP_WORDS=("$2" --target = sm_9); COMP_CWORD=3; _wavec; echo "${COMPREPLY[*]}"' _ "$comp" "$prefix/bin/wavec")
[ "$got" = "sm_90 sm_90a" ] || fail "bash completion of --target=sm_9 gave '$got'"

# A C++-only project (project(... LANGUAGES CXX)): the stubs are compiled as C++.
mkdir -p "$work/cxx"
cp "$src/samples/cmake/saxpy.wave" "$work/cxx/"
cat > "$work/cxx/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(wavec_cxx_only LANGUAGES CXX)
find_package(Wavec 0.1 REQUIRED)
wavec_add_kernel(TARGET kernels SOURCES saxpy.wave TARGETS sm_90 gfx942)
add_executable(saxpy_cxx main.cpp)
target_link_libraries(saxpy_cxx PRIVATE kernels)
CMAKE
cat > "$work/cxx/main.cpp" <<'CXX'
#include "saxpy.h"
#include <cstdio>
int main() {
  const wave_kernel_info_t *info = saxpy_info_for("sm_90");
  std::printf("saxpy on sm_90: block %u\n", info ? info->block[0] : 0u);
  return info && info->block[0] > 0 ? 0 : 1;
}
CXX
cmake -S "$work/cxx" -B "$work/cxx/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null ||
  fail "configuring a C++-only project with wavec_add_kernel failed"
cmake --build "$work/cxx/build" >/dev/null || fail "building a C++-only project failed"
"$work/cxx/build/saxpy_cxx" || fail "the C++-only program failed"

# The installed Python package finds the installed wavec and runtime by itself.
py=""
for p in python3 /usr/bin/python3; do
  if "$p" -c "import numpy" 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "SKIPPED (python part): no Python 3 with numpy"
else
  [ -f "$prefix/lib/python3/site-packages/wavec/__init__.py" ] || fail "the install lacks the Python package"
  out=$(env -u WAVEC PATH=/usr/bin:/bin PYTHONPATH="$prefix/lib/python3/site-packages" \
        WAVEC_PY_CACHE="$work/pycache" "$py" -c '
import numpy as np, sys, wavec
m = wavec.compile(sys.argv[1], targets=["sm_90"])
a = np.arange(300, dtype=np.float16).reshape(3, 100); b = np.zeros_like(a)
m.copy(a, b, device="emu:sm_90")
print("installed package:", wavec.find_wavec(), bool((a == b).all()))' "$src/samples/copy/copy.wave" 2>&1) ||
    fail "the installed Python package failed: $out"
  echo "$out" | grep -q "installed package: $prefix/bin/wavec True" || fail "unexpected: $out"
fi
echo "find_package(Wavec) + wavec_add_kernel built samples/cmake (and a C++-only project) against $prefix; the installed Python package runs"
