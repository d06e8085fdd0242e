#!/usr/bin/env bash
# Seeded bug: the GEMM compiled with barrier insertion disabled (wavec's hidden
# --debug-no-barriers) must be reported by the emulator as a shared-memory race naming the
# kernel, the operation with its .wave location, the workgroup and the thread; the same kernel
# with its barriers must pass the check against the reference evaluator.
#   seeded_race.sh WAVEC WAVE_RUN SOURCE_DIR
set -uo pipefail
wavec=$1 wave_run=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sizes=(--size M=128 --size N=128 --size K=256)
for case in "gfx942 samples/gemm/gemm.wave gemm.wave" "sm_90 samples/gemm/gemm_portable.wave gemm_portable.wave"; do
  read -r target file name <<<"$case"
  for barriers in with without; do
    flags=(--no-cache)
    [ "$barriers" = without ] && flags+=(--debug-no-barriers)
    "$wavec" "$src/$file" --target="$target" --emit=emu "${flags[@]}" -o "$work/k.wemu" ||
      fail "wavec $file --target=$target ${flags[*]}"
    out=$("$wave_run" "$src/$file" --device "emu:$target" --object "$work/k.wemu" --check \
          "${sizes[@]}" 2>&1)
    rc=$?
    echo "$ wave-run $file --device emu:$target ($barriers barriers): exit $rc"
    echo "$out"
    if [ "$barriers" = with ]; then
      [ $rc -eq 0 ] || fail "the kernel with its barriers did not pass on emu:$target"
    else
      [ $rc -ne 0 ] || fail "the race of the kernel without barriers went unnoticed on emu:$target"
      echo "$out" | grep -Eq "gemm: shared-memory race on an? [a-z ]+ at $name:[0-9]+:[0-9]+ in workgroup \([0-9]+,[0-9]+,[0-9]+\) thread \([0-9]+,[0-9]+,[0-9]+\)" ||
        fail "the race report does not name the kernel, the .wave location, workgroup and thread"
    fi
  done
done
echo "the emulator reports the missing barriers as races on emu:gfx942 and emu:sm_90"
