#!/usr/bin/env bash
# The sanitizer job (docs/reliability.md, "Sanitizers" and "Front-end fuzzing"). CI runs it after
# scripts/test.sh; by hand: `bash scripts/sanitize.sh [asan] [tsan] [fuzz]` (default: all three).
#
#   asan  build-asan/: GCC, -fsanitize=address,undefined (UBSan findings abort), the compiler,
#         libwavec_codegen.so, the runtime and the emulator; runs the unit, diagnostics, CLI,
#         robustness, runtime and emulator tests, the samples' --check and a slice of the
#         end-to-end suite (one case per kernel, alternating emu:gfx942 and emu:sm_90).
#   tsan  build-tsan/: the runtime and the emulator alone with -fsanitize=thread, running
#         tests/runtime/threads_test.cpp (concurrent launches, opens/closes, kernel selection,
#         per-thread errors) on emulator images made by build-asan's wavec.
#   fuzz  build-fuzz/: clang with libFuzzer, ASan and UBSan, the front end only; a short run of
#         the harness over the committed corpus (tests/fuzz_frontend).
#
# Each build directory is configured once and builds only the targets its tests need; ccache is
# used when installed. Environment: SANITIZE_JOBS (default: the number of CPUs),
# SANITIZE_E2E_EVERY (take every Nth kernel of the e2e slice; default 1 = all kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${SANITIZE_JOBS:-$(nproc 2>/dev/null || echo 2)}
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(asan tsan fuzz)

common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
        # -O1: ASan's advice, and half the compile time of -O2; -g1: line tables for the reports.
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1")
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  common+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

# Every report is fatal and says where; leaks are reported at exit (LeakSanitizer, with the
# suppressions of scripts/lsan.supp: third-party libraries only).
# use_sigaltstack=0: LLVM's signal handlers (inside libwavec_codegen.so, not instrumented)
# install their own alternate signal stack, from malloc, on the compiling thread; ASan would try
# to unmap that buffer as its own when the thread ends and die with "CHECK failed ... unable to
# unmap" (docs/reliability.md, "Sanitizers").
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:use_sigaltstack=0:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/scripts/lsan.supp:print_suppressions=0}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

stamp() { date +%s; }
took() { echo "sanitize: $1 took $(( $(stamp) - $2 )) s"; }

configure() { # dir, extra cmake arguments...
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S . -B "$dir" "${common[@]}" "$@" >/dev/null
  fi
}

run_asan() {
  local t0
  t0=$(stamp)
  configure build-asan -DWAVEC_SANITIZE=address,undefined
  # What the slice below runs, and nothing else (no emu_translate_test: it links the shared
  # libLLVM, which the static copy inside libwavec_codegen.so is never mixed with).
  # Every unit test program (tests/unit/*_test.cpp): the regex below runs all of unit/.
  local units
  units=$(cd "$root/tests/unit" && ls ./*_test.cpp | sed 's|^\./||; s|\.cpp$||')
  # shellcheck disable=SC2086
  cmake --build build-asan -j "$jobs" --target wavec wavec_codegen wave-run wave_runtime \
    wave_runtime_test wave_runtime_c_smoke wave_runtime_threads_test emu_test $units
  took "asan build" "$t0"
  t0=$(stamp)
  # The e2e slice: one case per kernel file, on emu:gfx942 and emu:sm_90 in turn (the emulator,
  # the runtime, wave-run, wavec and the code generator all instrumented).
  local e2e
  e2e=$(ctest --test-dir build-asan -N | sed -n 's/^ *Test *#[0-9]*: \(e2e\/[^ ]*\)$/\1/p' |
        awk -F/ -v every="${SANITIZE_E2E_EVERY:-1}" '
          !($2 in idx) { idx[$2] = n++ }
          { want = (idx[$2] % 2 == 0) ? "emu_gfx942" : "emu_sm_90" }
          $4 == want && !done[$2]++ && idx[$2] % every == 0 { print }')
  local regex='^(unit/|diag/|cli/|robust/|runtime/(unit|c_smoke|threads)$|emu/unit$|sample/'
  while read -r name; do
    [ -n "$name" ] && regex+="|$(printf '%s' "$name" | sed 's/[][().+*?^$|\\]/\\&/g')\$"
  done <<< "$e2e"
  regex+=')'
  echo "sanitize: asan: $(printf '%s\n' "$e2e" | grep -c .) e2e cases in the slice"
  # cli/check_matches_compile compiles every .wave for six targets four times (~7,600 runs): a
  # consistency check of --check against compiling, which the normal job runs uninstrumented;
  # instrumented it would take over an hour.
  ctest --test-dir build-asan -R "$regex" -E '^cli/check_matches_compile$' -j "$jobs" \
    --output-on-failure --timeout 600 --output-junit "$root/build-asan/sanitize-results.xml"
  took "asan tests" "$t0"
}

run_tsan() {
  local t0 images=$root/build-asan/tests/emu_images
  t0=$(stamp)
  if [ ! -f "$images/copy_sm_90.wemu" ]; then
    # The images come from build-asan's wavec (the emu_test_images target).
    configure build-asan -DWAVEC_SANITIZE=address,undefined
    cmake --build build-asan -j "$jobs" --target emu_test_images
  fi
  configure build-tsan -DWAVEC_SANITIZE=thread "-DWAVEC_TEST_EMU_IMAGES=$images"
  cmake --build build-tsan -j "$jobs" --target wave_runtime_threads_test
  took "tsan build" "$t0"
  t0=$(stamp)
  ctest --test-dir build-tsan -R '^runtime/threads$' --output-on-failure --timeout 600
  took "tsan tests" "$t0"
}

run_fuzz() {
  local t0 cxx cc
  t0=$(stamp)
  cxx=$(command -v clang++-19 || command -v clang++ || true)
  cc=$(command -v clang-19 || command -v clang || true)
  if [ -z "$cxx" ] || [ -z "$cc" ]; then
    echo "sanitize: fuzz: SKIPPED: no clang (scripts/install-deps.sh installs clang-19)" >&2
    return 0
  fi
  configure build-fuzz "-DCMAKE_CXX_COMPILER=$cxx" "-DCMAKE_C_COMPILER=$cc" \
    -DWAVEC_SANITIZE=address,undefined,fuzzer-no-link
  if ! grep -q '^WAVEC_HAVE_LIBFUZZER:INTERNAL=1' build-fuzz/CMakeCache.txt; then
    echo "sanitize: fuzz: FAILED: $cxx has no libFuzzer runtime (Debian: libclang-rt-19-dev)" >&2
    return 1
  fi
  cmake --build build-fuzz -j "$jobs" --target wave_frontend_fuzzer
  took "fuzz build" "$t0"
  t0=$(stamp)
  ctest --test-dir build-fuzz -R '^fuzz/frontend$' --output-on-failure
  took "fuzz run" "$t0"
}

for s in "${stages[@]}"; do
  case $s in
    asan) run_asan ;;
    tsan) run_tsan ;;
    fuzz) run_fuzz ;;
    *) echo "usage: $0 [asan] [tsan] [fuzz]" >&2; exit 2 ;;
  esac
done
