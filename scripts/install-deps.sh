#!/usr/bin/env bash
# Installs every Debian package that building and testing wavec needs. Idempotent: packages
# already present are left alone, and apt is not touched at all when nothing is missing.
set -euo pipefail

packages=(
  cmake g++ ninja-build make pkg-config python3 python3-numpy python3-jsonschema
  default-jre-headless antlr4 libantlr4-runtime-dev
  libginac-dev libcln-dev libcli11-dev libfmt-dev
  llvm-19-dev libmlir-19-dev mlir-19-tools lld-19 liblld-19-dev llvm-19-tools
  libamd-comgr-dev libgtest-dev
  clang-19 libclang-rt-19-dev # scripts/sanitize.sh: the front-end fuzzer (libFuzzer, ASan, UBSan)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
