#!/bin/sh
# Installs libwave_runtime into a scratch prefix and builds a C99 host program against it through
# pkg-config alone, as a user of the installed runtime would: checks the install rules, the
# relocatable .pc file and that both public headers are installed and compile.
# Usage: install_test.sh <runtime build dir> <C compiler> <source dir of tests/runtime>
set -eu
build=$1 cc=$2 src=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name wave_runtime.pc)
test -n "$pc"
export PKG_CONFIG_PATH=$(dirname "$pc")
test -f "$prefix/include/wave/runtime.h"
test -f "$prefix/include/wave/kernel_api.h"
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic "$src/c_smoke.c" -o "$prefix/c_smoke" \
  $(pkg-config --cflags --libs wave_runtime)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir wave_runtime) "$prefix/c_smoke"
