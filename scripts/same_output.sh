#!/usr/bin/env bash
# Checks that wavec at HEAD generates exactly what wavec at BASE generates (a refactoring must
# change no generated code; issue 14).
#
#   scripts/same_output.sh BASE
#
# BASE is a git revision. Its wavec is built in a temporary worktree next to this one (with
# ccache when found; removed at the end), unless SAME_OUTPUT_BASE_BUILD names a build directory
# of BASE that holds wavec and libwavec_codegen.so already. HEAD is the working tree: its build
# directory is SAME_OUTPUT_HEAD_BUILD, default build/, brought up to date first (wavec and the
# code generator only). JOBS (default 2) compilations run at a time; SAME_OUTPUT_KEEP=DIR keeps
# the outputs there; SAME_OUTPUT_ONLY=REGEX takes only the inputs whose path (from the
# repository root) matches; SAME_OUTPUT_KINDS (default "mlir asm obj") the outputs compared
# (e.g. "mlir asm" leaves out the code object, header and stub).
#
# Inputs: every samples/*/*.wave and tests/**/*.wave of the working tree, for each of gfx942,
# gfx90a, gfx1100, sm_80, sm_90 and sm_90a, once without -D bindings and once per distinct set of
# -D flags found on the file's `# ARGS:`, `# RUN-ARGS:` and `# RUN-<NAME>:` lines (best effort:
# the other flags of those lines are not used). Each case is compiled three times per side:
# --emit=mlir, --emit=asm (AMDGPU ISA or PTX), and the target's code object with --header and
# --stub (the stub embeds the code object and the emulator image). Both sides compile the same
# source path from the same kind of directory, with the compile cache off.
#
# A compilation that fails at both sides is skipped (most tests/diagnostics inputs, kernels that
# need -D values); one that fails at one side only, or whose outputs differ byte for byte, is a
# difference. Differing outputs are first compiled again SAME_OUTPUT_RETRIES times (default 4)
# at each side: if some output of BASE then equals some output of HEAD, the compiler's output
# varies from run to run for that input and the case is listed as unstable, not as a
# difference. Prints a summary and each difference; exit 1 on any difference, 2 on a usage or
# build error.
set -euo pipefail

if [ $# -ne 1 ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
  exit 2
fi
base_rev=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
base_commit=$(git rev-parse --verify "$base_rev^{commit}") || { echo "same_output: unknown revision $base_rev" >&2; exit 2; }
jobs=${JOBS:-2}

work=$(mktemp -d "${TMPDIR:-/tmp}/same_output.XXXXXX")
base_wt=""
cleanup() {
  if [ -n "$base_wt" ]; then
    git -C "$root" worktree remove --force "$base_wt" >/dev/null 2>&1 || true
  fi
  if [ -z "${SAME_OUTPUT_KEEP:-}" ]; then
    rm -rf "$work"
  fi
}
trap cleanup EXIT
if [ -n "${SAME_OUTPUT_KEEP:-}" ]; then
  mkdir -p "$SAME_OUTPUT_KEEP"
  rm -rf "$work"
  work=$(cd "$SAME_OUTPUT_KEEP" && pwd)
fi

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
build_wavec() { # DIR SOURCE_DIR
  if [ ! -f "$1/build.ninja" ] && [ ! -f "$1/Makefile" ]; then
    cmake -S "$2" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
  fi
  cmake --build "$1" --target wavec -j "$jobs" >"$work/build-$(basename "$1").log" 2>&1 || {
    echo "same_output: building $1 failed (see $work/build-$(basename "$1").log)" >&2
    tail -20 "$work/build-$(basename "$1").log" >&2
    exit 2
  }
}

# ---- the two compilers ----
if [ -n "${SAME_OUTPUT_BASE_BUILD:-}" ]; then
  base_build=$(cd "$SAME_OUTPUT_BASE_BUILD" && pwd)
  echo "base: $base_rev ($base_commit), prebuilt in $base_build"
else
  # A sibling of the working tree, so that with CCACHE_BASEDIR at their parent ccache finds the
  # objects of HEAD's build for the files BASE has unchanged (same relative paths).
  base_wt=$(mktemp -d "$(dirname "$root")/.same-output-base.XXXXXX")
  rmdir "$base_wt"
  git worktree add --detach "$base_wt" "$base_commit" >/dev/null 2>&1
  base_build="$base_wt/build"
  echo "base: $base_rev ($base_commit), building in $base_build"
  CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$root")} build_wavec "$base_build" "$base_wt"
fi
head_build=$(cd "${SAME_OUTPUT_HEAD_BUILD:-$root/build}" 2>/dev/null && pwd || echo "$root/build")
echo "head: working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src runtime 2>/dev/null || echo ' (with uncommitted changes)'), build $head_build"
build_wavec "$head_build" "$root"
for b in "$base_build" "$head_build"; do
  [ -x "$b/wavec" ] && [ -f "$b/libwavec_codegen.so" ] ||
    { echo "same_output: $b has no wavec or libwavec_codegen.so" >&2; exit 2; }
done

# ---- the cases: SOURCE <tab> TARGET <tab> -D flags (space separated, may be empty) ----
python3 - "$root" "${SAME_OUTPUT_ONLY:-}" >"$work/cases.tsv" <<'EOF'
import glob, os, re, sys
root = sys.argv[1]
files = sorted(glob.glob(os.path.join(root, "samples/*/*.wave")) +
               glob.glob(os.path.join(root, "tests/**/*.wave"), recursive=True))
line_re = re.compile(r"^\s*(?:#|//)\s*(?:ARGS|RUN-ARGS|RUN-[A-Za-z0-9_]+)\s*:(.*)$")
def_re = re.compile(r"-D\s*([A-Za-z_][A-Za-z0-9_]*=\S+)")
only = re.compile(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
for f in files:
    if only and not only.search(os.path.relpath(f, root)):
        continue
    variants = [""]
    try:
        text = open(f, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        continue
    for line in text:
        m = line_re.match(line)
        if not m:
            continue
        defs = " ".join("-D" + d for d in def_re.findall(m.group(1)))
        if defs and defs not in variants:
            variants.append(defs)
    for t in ("gfx942", "gfx90a", "gfx1100", "sm_80", "sm_90", "sm_90a"):
        for v in variants:
            print(f"{f}\t{t}\t{v}")
EOF

# One compilation: KIND (mlir, asm, obj) of SRC for TARGET with DEFS by the wavec of BUILD, into
# DIR (k.mlir, k.s, or the code object k.hsaco/k.ptx with k.h and k.c; KIND.rc, KIND.err).
compile_one() { # BUILD DIR KIND SRC TARGET DEFS
  local build=$1 dir=$2 kind=$3 src=$4 target=$5 defs=$6 obj
  case $target in sm_*) obj=k.ptx ;; *) obj=k.hsaco ;; esac
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  (cd "$dir" && case $kind in
    mlir) "$build/wavec" --no-cache "$src" --target="$target" $defs --emit=mlir -o k.mlir ;;
    asm) "$build/wavec" --no-cache "$src" --target="$target" $defs --emit=asm -o k.s ;;
    obj) "$build/wavec" --no-cache "$src" --target="$target" $defs -o $obj --header k.h \
           --stub k.c ;;
  esac >/dev/null 2>"$kind.err"; echo $? >"$kind.rc")
}
outputs_of() { # KIND TARGET
  case $1 in mlir) echo k.mlir ;; asm) echo k.s ;;
    obj) case $2 in sm_*) echo k.ptx k.h k.c ;; *) echo k.hsaco k.h k.c ;; esac ;; esac
}
digest_of() { # DIR KIND TARGET: one hash of the outputs
  local f
  for f in $(outputs_of "$2" "$3"); do cat "$1/$f" 2>/dev/null | md5sum; done | md5sum | cut -c1-32
}

# One case on both sides. Outputs go to $WORK/{base,head}/<id>/ under identical relative names.
# Outputs that differ are compiled again RETRIES times at each side: when some output of BASE
# equals some output of HEAD, the compiler is not deterministic for this input (at either side,
# said which) and the case is `unstable`, listed but no difference.
compile_case() {
  local src=$1 target=$2 defs=$3 id=$4 side build kind rb rh f differs r
  for side in base head; do
    [ $side = base ] && build=$BASE_BUILD || build=$HEAD_BUILD
    for kind in $KINDS; do
      compile_one "$build" "$WORK/$side/$id" $kind "$src" "$target" "$defs"
    done
  done
  for kind in $KINDS; do
    rb=$(cat "$WORK/base/$id/$kind.rc") rh=$(cat "$WORK/head/$id/$kind.rc")
    if [ "$rb" != 0 ] && [ "$rh" != 0 ]; then
      echo "skip	$kind	$id"
      continue
    fi
    if [ "$rb" != "$rh" ]; then
      echo "diff	$kind	$id	exit status $rb at base, $rh at head"
      continue
    fi
    differs=""
    for f in $(outputs_of $kind "$target"); do
      cmp -s "$WORK/base/$id/$f" "$WORK/head/$id/$f" || differs="$differs $f"
    done
    if [ -z "$differs" ]; then
      echo "same	$kind	$id"
      continue
    fi
    local base_set head_set match=""
    base_set=" $(digest_of "$WORK/base/$id" $kind "$target")"
    head_set=" $(digest_of "$WORK/head/$id" $kind "$target")"
    for ((r = 1; r <= RETRIES; ++r)); do
      compile_one "$BASE_BUILD" "$WORK/base/$id/retry$r" $kind "$src" "$target" "$defs"
      compile_one "$HEAD_BUILD" "$WORK/head/$id/retry$r" $kind "$src" "$target" "$defs"
      base_set="$base_set $(digest_of "$WORK/base/$id/retry$r" $kind "$target")"
      head_set="$head_set $(digest_of "$WORK/head/$id/retry$r" $kind "$target")"
    done
    for f in $base_set; do
      case "$head_set " in *" $f "*) match=1 ;; esac
    done
    local nb nh
    nb=$(tr ' ' '\n' <<<"$base_set" | sed '/^$/d' | sort -u | wc -l)
    nh=$(tr ' ' '\n' <<<"$head_set" | sed '/^$/d' | sort -u | wc -l)
    if [ -n "$match" ]; then
      echo "unstable	$kind	$id	differ:$differs; in $((RETRIES + 1)) runs per side, base gave $nb distinct outputs, head $nh, some equal"
    else
      echo "diff	$kind	$id	differ:$differs (base gave $nb distinct outputs in $((RETRIES + 1)) runs, head $nh, none equal)"
    fi
  done
}
export -f compile_case compile_one outputs_of digest_of
export WORK=$work BASE_BUILD=$base_build HEAD_BUILD=$head_build RETRIES=${SAME_OUTPUT_RETRIES:-4}
export KINDS=${SAME_OUTPUT_KINDS:-mlir asm obj}
export WAVEC_CACHE_DIR=$work/cache

echo "comparing $(wc -l <"$work/cases.tsv") cases (files x targets x -D sets), $jobs at a time..."
# Fields joined by '|' (not whitespace, so an empty -D field stays a field).
awk -F'\t' '{ id=$1; sub("^'"$root"'/", "", id); gsub("/", "__", id); printf "%s|%s|%s|%s__%s__%d\n", $1, $2, $3, id, $2, NR }' \
  "$work/cases.tsv" |
  tr '\n' '\0' |
  xargs -0 -P "$jobs" -I{} bash -c 'IFS="|" read -r s t d i <<<"$1"; compile_case "$s" "$t" "$d" "$i"' _ {} \
  >"$work/results.tsv"

same=$(grep -c '^same' "$work/results.tsv" || true)
skipped=$(grep -c '^skip' "$work/results.tsv" || true)
unstable=$(grep -c '^unstable' "$work/results.tsv" || true)
diffs=$(grep -c '^diff' "$work/results.tsv" || true)
files=$(cut -f1 "$work/cases.tsv" | sort -u | wc -l)
echo "files: $files; cases: $(wc -l <"$work/cases.tsv"); compilations compared:" \
  "$((same + diffs + unstable)) (identical: $same, different: $diffs, unstable: $unstable);" \
  "failed at both sides (skipped): $skipped"
for kind in $KINDS; do
  echo "  $kind: $(grep -c "^same	$kind" "$work/results.tsv" || true) identical," \
    "$(grep -c "^diff	$kind" "$work/results.tsv" || true) different," \
    "$(grep -c "^unstable	$kind" "$work/results.tsv" || true) unstable"
done
if [ "$unstable" != 0 ]; then
  echo "unstable (the compiler's output varies from run to run; BASE and HEAD gave equal outputs):"
  grep '^unstable' "$work/results.tsv" | cut -f2- | sort | sed 's/^/  /'
fi
if [ "$diffs" != 0 ]; then
  echo "differences (outputs under ${SAME_OUTPUT_KEEP:-a temporary directory; set SAME_OUTPUT_KEEP=DIR to keep them}):"
  grep '^diff' "$work/results.tsv" | cut -f2- | sort | sed 's/^/  /'
  exit 1
fi
if [ "$unstable" != 0 ]; then
  echo "same output: no difference between HEAD and $base_rev beyond the run-to-run variation above"
else
  echo "same output: HEAD generates byte-identical code to $base_rev"
fi
