#!/usr/bin/env bash
# The long fuzz runs of docs/reliability.md on a machine with many cores and no wavec build
# (made by scripts/make_devrun_fuzz.sh, which puts this file in OUTDIR as run.sh): up to
# MAX_PROGRAMS wave-fuzz programs of seed 2028 from START, each on the reference and the five
# emulated targets, none started after SECONDS; beside them LIBFUZZER_PROCS front-end libFuzzer
# processes of LIBFUZZER_RUNS_EACH executions (seeds SEEDBASE+1...), stopped after SECONDS. Run from the repository root:
#   bash OUTDIR/run.sh START MAX_PROGRAMS SECONDS LIBFUZZER_PROCS LIBFUZZER_RUNS_EACH [SEEDBASE]
# Summaries go to stdout; logs, findings and crashing inputs to $OUT (default /tmp/out).
# FUZZ_SEED (default 2028) and FUZZ_ARGS (more wave-fuzz options, e.g. "--dtypes bf16") change
# the programs.
set -u
START=${1:-0}; MAXP=${2:-100000}; SECS=${3:-500}; LFP=${4:-0}; LFR=${5:-0}; SEEDBASE=${6:-2026}
D=$(cd "$(dirname "$0")" && pwd); R=$(pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/tmp/fz; mkdir -p $W/bin; tar xJf "$D/bin.tar.xz" -C $W/bin
export LD_LIBRARY_PATH=$W/bin WAVE_EMU_THREADS=1 PYTHONUNBUFFERED=1
# No llvm-symbolizer there: addr2line lets the harness's LeakSanitizer suppression (cln::xmalloc) match.
export ASAN_OPTIONS=external_symbolizer_path=$(command -v addr2line)
NP=$(nproc); echo "cores $NP (cgroup cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo none)); $(uname -r); $(ldd --version | head -1)"
$W/bin/wavec --version 2>&1 | head -2
t0=$(date +%s)
if [ "$LFP" -gt 0 ]; then
  tar xJf "$D/fuzzer.tar.xz" -C $W/bin
  for i in $(seq 1 $LFP); do
    mkdir -p $W/lf$i $W/art$i
    ( cd $W && timeout $((SECS + 120)) bin/wave_frontend_fuzzer -runs=$LFR -max_total_time=$SECS -seed=$((SEEDBASE + i)) -timeout=10 \
        -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -artifact_prefix=$W/art$i/ \
        $W/lf$i "$R/tests/fuzz_frontend/corpus" > $W/lf$i.log 2>&1; echo "rc=$?" >> $W/lf$i.log ) &
  done
fi
JOBS=$((NP - LFP)); [ $JOBS -lt 1 ] && JOBS=1
# A smoke test first: a code generator that cannot load would make every call wait and retry.
( cd "$R" && time $W/bin/wave-run samples/copy/copy.wave --device emu:gfx942 --seed 1 --check \
    --size M=64 --size N=256 ) 2>&1 | tail -5 | tee $OUT/smoke.log
grep -q -i "pass\|match\|ok" $OUT/smoke.log || { echo "smoke test failed: not fuzzing"; exit 1; }
# One wave-fuzz process with a worker process per job; it starts no program after SECONDS and
# counts the unbroken run of programs from START (its last lines say the next start). Nothing
# is rebuilt here, so no retries; findings are minimized later from their seed and index.
export TMPDIR=/dev/shm WAVE_FUZZ_RETRIES=0
timeout $((SECS + 150)) python3 "$R/tools/wave-fuzz/wave_fuzz.py" --wave-run $W/bin/wave-run \
   --seed ${FUZZ_SEED:-2028} --start $START --count $MAXP --jobs $JOBS --stop-after $SECS --timeout 90 \
   --minimize 0 -v ${FUZZ_ARGS:-} \
   > $OUT/slice-$START.log 2>&1
echo "wave-fuzz exit $?"
grep -h -E '^programs|stopped after|: (mismatch|crash|tool-error)' $OUT/slice-$START.log | head -40
s=$(sed -n 's/.*next start \([0-9]*\).*/\1/p' $OUT/slice-$START.log | tail -1)
[ -n "$s" ] || s=$((START + MAXP))
echo "programs per second: $(python3 -c "print(round(($s - $START) / max(1, $(date +%s) - $t0), 1))")"
echo "NEXT_START $s"
wait
for i in $(seq 1 $LFP); do echo "libfuzzer $i:"; grep -E "^(stat::|rc=|==.*ERROR|SUMMARY)|Done [0-9]+ runs|^ +[0-9]+ +[0-9]+ [a-z]" $W/lf$i.log | head -20; ls $W/art$i | head; done
gzip -f $OUT/slice-$START.log
( cd $W && tar czf $OUT/findings.tgz findings art* 2>/dev/null; for i in $(seq 1 $LFP); do tail -5 lf$i.log; done > $OUT/libfuzzer_tails.log )
echo "total $(( $(date +%s) - t0 )) s"
