#!/usr/bin/env bash
# Make integration through wavec's depfiles: builds the elementwise sample with its Makefile in a
# scratch copy, then checks that
#   - a second make does nothing,
#   - touching the .wave source reruns wavec, which leaves the outputs whose bytes are unchanged
#     alone (so nothing is recompiled or relinked),
#   - editing it rebuilds the code object, the header and the stub (and the program), and a make
#     after that does nothing again,
#   - the depfile names the outputs and the source.
#   make_depfile.sh WAVEC SOURCE_DIR RUNTIME_LIB_DIR
set -euo pipefail
wavec=$1 src=$2 rtlib=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/samples"
cp -r "$src/samples/elementwise" "$src/samples/common" "$work/samples/"
cd "$work/samples/elementwise"
export WAVEC_CACHE_DIR="$work/cache"
mk() { make --no-print-directory WAVEC="$wavec" TARGET=sm_90 RUNTIME_INC="$src/runtime/include" RUNTIME_LIB="$rtlib" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

mk >/dev/null
for f in elementwise.ptx elementwise.h elementwise.c elementwise.d elementwise_main; do
  [ -f "$f" ] || fail "the first make did not produce $f"
done
grep -q "^elementwise.ptx elementwise.h elementwise.c: elementwise.wave$" elementwise.d ||
  fail "the depfile does not name the outputs and the source: $(cat elementwise.d)"
mk -q || fail "a second make would rebuild although nothing changed"
out=$(mk)
echo "$out" | grep -q "Nothing to be done" || fail "a second make did something: $out"

stamp() { stat -c %Y.%y "$@"; }
before=$(stamp elementwise.ptx elementwise.h elementwise.c elementwise_main)
sleep 1.1 # a coarser file-system clock must still see the source as newer
touch elementwise.wave
mk -q && fail "make -q says up to date after the source was touched"
out=$(mk)
echo "$out" | grep -q "wavec" || fail "touching the source did not rerun wavec: $out"
# Unchanged bytes are not rewritten: the outputs keep their time stamps, nothing is relinked.
after=$(stamp elementwise.ptx elementwise.h elementwise.c elementwise_main)
[ "$before" = "$after" ] || fail "an unchanged output was rewritten: $before / $after"
echo "$out" | grep -q "elementwise_main" && fail "the program was relinked for unchanged outputs: $out"

sleep 1.1
sed -i 's/BLOCK_N = 256/BLOCK_N = 128/' elementwise.wave
grep -q "BLOCK_N = 128" elementwise.wave || fail "could not edit the sample's tile size"
out=$(mk)
echo "$out" | grep -q "wavec" || fail "editing the source did not rerun wavec: $out"
after=$(stamp elementwise.ptx elementwise.h elementwise.c elementwise_main)
for i in 1 2 3 4; do
  b=$(echo "$before" | sed -n "${i}p") a=$(echo "$after" | sed -n "${i}p")
  [ "$a" != "$b" ] || fail "output $i of (code object, header, stub, program) was not rebuilt"
done
mk -q || fail "make after the rebuild would rebuild again"
out=$(mk)
echo "$out" | grep -q "Nothing to be done" || fail "a make after the rebuild did something: $out"
echo "make reruns wavec when the .wave is touched but rewrites (and relinks) nothing whose bytes are unchanged; an edit rebuilds the code object, header, stub and program, and nothing otherwise"
