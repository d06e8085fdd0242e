#!/usr/bin/env python3
"""Mutation check (issue 15): injects plausible bugs into the distribution pass, the masks, the
barrier placement, the index simplifier and the code generator, one at a time, rebuilds and runs
a fast but sensitive slice of the test suite against each. Every mutant must be *killed* (some
test fails); a mutant that *survives* is a hole in the suite. docs/reliability.md, "Mutation
check", has the command, the list and the last results.

usage: scripts/mutation_check.py [--work DIR] [--only ID,ID...] [--tests REGEX] [--list]

The source tree (tracked and untracked-not-ignored files of this checkout) is copied to WORK
(default build-mutation/ in the checkout, which git ignores) and built in WORK/build, with ccache
as the compiler launcher when it is installed: each mutant recompiles one file and relinks, and
with CCACHE_BASEDIR (default: the checkout's parent folder) the first build reuses the objects
of the checkout's own build/. For each mutant the script replaces one exact snippet
of one file, builds the targets the test slice needs, runs the slice with ctest (stopping at the
first failure), then puts the file back. The checkout itself is never modified.

Each mutant names a file, or a folder ending in '/' (the snippet is searched in every .cpp and
.h under it: the emitter's sources may be split into several files). The snippet must occur
exactly once there; if the source changed so that it does not, the script fails loudly rather
than silently testing nothing. A mutant that does not compile counts as an error, not a kill.

Exit status: 0 when every mutant was killed, 1 when one survived or could not be applied or
built, 2 on a usage or setup error.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The slice: the emulated end-to-end cases of one AMD and one NVIDIA target, the IR and MLIR
# goldens, the code generator's barrier and wide-access checks, the golden diagnostics of the
# distribution and constraint checks, and the unit tests of the symbolic layer, the barrier
# placement and the thread layouts (the code-object tests that run ptxas or the AMD assembler
# take long and add nothing here). About 400 tests, 70 to 110 s on 2 busy cores when none
# fails; ctest stops at a killed mutant's first failure.
DEFAULT_TESTS = (r"^(unit/(symbolic_test|barrier_test|thread_layout_test)|ir/|codegen/mlir/|"
                 r"codegen/(gemm_barriers|gfx942_wide_access|unsupported_features)|"
                 r"diag/(distribution|reduce|constraint|mma|ept)|e2e/.*/emu_(gfx942|sm_90))")
# What the slice runs: built before each mutant's tests (the rest of the tree is not rebuilt).
BUILD_TARGETS = ["wavec", "wave-run", "symbolic_test", "barrier_test", "thread_layout_test"]


@dataclass
class Mutant:
    id: str
    path: str  # a file, or a folder ending in '/' to search
    old: str
    new: str
    what: str
    # Why no test can kill it (the mutated code is redundant with another check): such a mutant
    # is listed, and runs only when named with --only.
    equivalent: str = ""


D = "src/passes/distribution.cpp"
SIMP = "src/symbolic/simplifier.cpp"
FACTS = "src/symbolic/facts.cpp"
RANGE = "src/symbolic/range_analysis.cpp"
BAR = "src/passes/barrier_insertion.cpp"
CG = "src/codegen/"  # the emitter, wherever its pieces live

MUTANTS = [
    # ---- distribution: clones, strides, lanes -------------------------------------------------
    Mutant("dist-clone-count-minus-one", D,
           "return std::max<int64_t>((*span + *v - 1) / *v, 1);",
           "return std::max<int64_t>((*span + *v - 1) / *v - 1, 1);",
           "clone count - 1"),
    Mutant("dist-clone-stride-one", D,
           "e = e + cloneSym(d) * x->vectorShape;",
           "e = e + cloneSym(d);",
           "clones step by 1 instead of the vector shape"),
    Mutant("dist-row-stride-kept", D,
           "x->vectorShape = IndexExpr(1);\n        x->count = cloneCount(d, x->vectorShape);",
           "x->count = cloneCount(d, IndexExpr(1));",
           "a row dim's clones are counted for step 1 but keep stepping by the vector shape"),
    Mutant("dist-wavespan-workgroup", D,
           "return w->tile;\n      return wg->tile;",
           "return wg->tile;\n      return wg->tile;",
           "waveSpan returns the workgroup tile instead of the wave tile"),
    Mutant("dist-wave-offset-wg-tile", D,
           "e = e + waveId * w->tile;",
           "e = e + waveId * wg->tile;",
           "waves are spaced by the workgroup tile instead of the wave tile"),
    Mutant("dist-lane-term", D,
           "thread.push_back({*d, lane * ept + kG});",
           "thread.push_back({*d, lane + kG});",
           "plain layout: lane * ept becomes lane"),
    Mutant("dist-reduce-lane-term", D,
           "thread.push_back({d, lanes * *c + kG});",
           "thread.push_back({d, lanes + kG});",
           "reduction layout (few elements per lane): lanes * c becomes lanes"),
    Mutant("dist-plain-elements-floor", D,
           "if (auto vs = x->vectorShape.asInteger(); vs && *vs > 0)\n"
           "        return std::max<int64_t>((*vs + w - 1) / w, 1);",
           "if (auto vs = x->vectorShape.asInteger(); vs && *vs > 0)\n"
           "        return std::max<int64_t>(*vs / w, 1);",
           "elements per lane round down (a vector shape that is no multiple of the wave)"),
    Mutant("dist-grid-floor", D,
           "g = g * ceilDiv(w.dim.size, w.tile);",
           "g = g * floorDiv(w.dim.size, w.tile);",
           "grid rounds down: the ragged last workgroup is not launched"),
    # ---- distribution: masks --------------------------------------------------------------
    Mutant("mask-workgroup-dropped", D,
           "if (const auto *wg = kernel.workgroupFor(d); wg && !facts.provesExact(d.size, wg->tile))",
           "if (const auto *wg = kernel.workgroupFor(d); false && wg && !facts.provesExact(d.size, wg->tile))",
           "isMasked: a dim that the workgroup tile may not divide is not masked"),
    Mutant("mask-tiling-dropped", D,
           "if (const auto *t = kernel.tilingFor(d); t && !facts.provesExact(d.size, t->tile))",
           "if (const auto *t = kernel.tilingFor(d); false && t && !facts.provesExact(d.size, t->tile))",
           "isMasked: a dim that the tiling tile may not divide is not masked"),
    Mutant("mask-clone-overrun", D,
           "v && span && x->count * *v > *span)",
           "v && span && (x->count - 1) * *v > *span)",
           "isMasked: clones overrunning the wave span by less than one tile are not masked",
           equivalent="the lane-overrun mask of the same access (Distributor::visit) fires "
                      "whenever this one does: lanes cover at least the vector shape, so clones "
                      "x vector shape > span implies coverage x clones > span; row dims step "
                      "by 1, mma dims must divide the span and reduced rows are refused unless "
                      "their vector shape is a multiple of the wave"),
    Mutant("mask-row-overrun-false", D,
           "return !facts.provesExact(d.size, IndexExpr(coverage));",
           "return false;",
           "rowOverrun forced false: a reduced row shorter than the lanes' coverage is not masked"),
    Mutant("mask-lane-overrun-dropped", D,
           "if (overrun && *overrun == d)",
           "if (false && overrun && *overrun == d)",
           "lanes reaching past the vector tile are not masked"),
    Mutant("mask-mapped-upper-le", D,
           "di.masked = !inside.prove(sym::Pred::cmp(sym::Pred::Lt, e, d.size)).value_or(false);",
           "di.masked = !inside.prove(sym::Pred::cmp(sym::Pred::Le, e, d.size)).value_or(false);",
           "mapped access: the upper mask is dropped when index <= size is proved (off by one)"),
    Mutant("mask-mapped-below-dropped", D,
           "!inside.prove(sym::Pred::cmp(sym::Pred::Ge, e, IndexExpr(0))).value_or(false);",
           "!inside.prove(sym::Pred::cmp(sym::Pred::Ge, e, IndexExpr(0))).value_or(true);",
           "mapped access: maskedBelow dropped when >= 0 cannot be proved"),
    # ---- symbolic: simplifier, facts, ranges ----------------------------------------------
    Mutant("sym-floordiv-trunc", RANGE,
           "if (a % b != 0 && ((a < 0) != (b < 0)))\n    --q;",
           "",
           "floorDivExt truncates toward zero (wrong for negative operands)"),
    Mutant("sym-mod-range-hi", RANGE,
           "Int128 hi = isInf(y.hi) ? kInf : y.hi - 1;",
           "Int128 hi = isInf(y.hi) ? kInf : y.hi - 2;",
           "range of x % c is [0, c - 2]: one too narrow"),
    Mutant("sym-floordiv-const-range", SIMP,
           "Int128 hi = ceil ? -floorDivExt(-rr.hi, *cc) : floorDivExt(rr.hi, *cc);",
           "Int128 hi = ceil ? -floorDivExt(-rr.hi, *cc) : floorDivExt(rr.hi - 1, *cc);",
           "floor(x / c) folded to a constant from [lo, hi - 1] (off by one)"),
    Mutant("sym-mod-const-range", SIMP,
           "if (k == floorDivExt(rr.hi, *cc))",
           "if (k == floorDivExt(rr.hi - 1, *cc))",
           "x % c folded to x - k*c from [lo, hi - 1] (off by one)"),
    Mutant("sym-lt-as-le", FACTS,
           "return {Normalized::NonNegative, (r - l - 1).expand()};",
           "return {Normalized::NonNegative, (r - l).expand()};",
           "a < b is proved as a <= b"),
    Mutant("sym-provesexact-true", FACTS,
           "return simplify(mod(a, IndexExpr(std::abs(*c)))).ex().is_zero();",
           "return true;",
           "provesExact always true for a constant divisor"),
    # ---- barriers and the cp.async pipeline -----------------------------------------------
    Mutant("bar-raw-skipped", BAR,
           "Pending::hits(s.writes, it.resource, tile, stages) ||",
           "",
           "no barrier between a shared-memory write and a later read (RAW)"),
    Mutant("bar-war-skipped", BAR,
           "if (before_[i] != BarrierPlacement::None ||\n"
           "            Pending::hits(s.reads, it.resource, tile, stages))",
           "if (before_[i] != BarrierPlacement::None)",
           "no barrier between a shared-memory read and a later write (WAR)"),
    Mutant("bar-loop-carried-ignored", BAR,
           "next.join(out.shifted(it.stages));",
           "",
           "hazards carried around a loop's back edge are ignored"),
    Mutant("bar-wait-keeps-needed", BAR,
           "(t != kAny && t <= newest) ||",
           "(t != kAny && t < newest) ||",
           "the wait keeps the copy group it needs in flight"),
    Mutant("emit-wait-count-plus-one", CG,
           "<< \" = llvm.mlir.constant(\" << keep << \" : i32) : i32\\n\"",
           "<< \" = llvm.mlir.constant(\" << keep + 1 << \" : i32) : i32\\n\"",
           "cp.async.wait.group waits for one group too few"),
    Mutant("emit-barrier-dropped", CG,
           "if (barrier[i] != BarrierPlacement::None && insertBarriers_)",
           "if (barrier[i] == BarrierPlacement::WaitAndBarrier && insertBarriers_)",
           "only the barriers that follow a cp.async wait are emitted"),
    # ---- emitted bound checks and reductions ----------------------------------------------
    Mutant("emit-bound-sle", CG,
           "line(r + \" = arith.cmpi slt, \" + a + \", \" + b + \" : index\");",
           "line(r + \" = arith.cmpi sle, \" + a + \", \" + b + \" : index\");",
           "emitted upper bound checks use <= (index <= size)"),
    Mutant("emit-fastpath-first", CG,
           "for (int64_t g = contiguous ? acc.elems - 1 : 0; g < acc.elems; ++g) {",
           "for (int64_t g = 0; g < (contiguous ? 1 : acc.elems); ++g) {",
           "the wide-access fast path checks the first element instead of the last"),
    Mutant("emit-store-prefix-plus-one", CG,
           "std::string lo = binop(\"maxsi\", rem, constIndex(0));",
           "std::string lo = binop(\"maxsi\", binop(\"addi\", rem, constIndex(1)), constIndex(0));",
           "a masked contiguous store writes one element past the row"),
    Mutant("emit-masked-load-not-zeroed", CG,
           "line(r + \" = arith.select \" + cond + \", \" + v + \", \" + z + \" : \" + ty);",
           "line(r + \" = arith.select \" + cond + \", \" + v + \", \" + v + \" : \" + ty);",
           "a masked-off scalar load keeps element 0's value instead of 0"),
    Mutant("emit-max-identity-zero", CG,
           "c.identity = fl ? floatLiteral(-INFINITY, t) : intLimit(false);",
           "c.identity = fl ? \"0.0\" : intLimit(false);",
           "max reduction identity 0 instead of -inf"),
    Mutant("emit-shuffle-step-skipped", CG,
           "for (int64_t m : laneMasks)\n      for (auto &v : elems)",
           "for (int64_t m : laneMasks)\n      if (m != laneMasks.back())\n      for (auto &v : elems)",
           "the last butterfly (shuffle xor) step of a reduction is skipped"),
]


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd=None, env=None, capture=True):
    return subprocess.run(cmd, cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.STDOUT if capture else None)


def locate(src, m):
    """The one file under `src` holding m.old exactly once, and the text of that file."""
    if m.path.endswith("/"):
        root = os.path.join(src, m.path)
        files = []
        for dirpath, _, names in os.walk(root):
            files += [os.path.join(dirpath, n) for n in sorted(names)
                      if n.endswith((".cpp", ".h", ".inc", ".def"))]
    else:
        files = [os.path.join(src, m.path)]
    hits = []
    for f in files:
        if not os.path.isfile(f):
            continue
        text = open(f, encoding="utf-8").read()
        n = text.count(m.old)
        if n:
            hits.append((f, text, n))
    total = sum(n for _, _, n in hits)
    if total != 1:
        where = ", ".join(f"{os.path.relpath(f, src)} ({n}x)" for f, _, n in hits) or "nowhere"
        raise RuntimeError(f"mutant {m.id}: the snippet occurs {total} times under {m.path} "
                           f"({where}), not exactly once: the source changed, update the "
                           f"mutant\n--- snippet ---\n{m.old}")
    return hits[0][0], hits[0][1]


def sync_tree(work):
    """Copies the checkout's tracked and untracked-not-ignored files to WORK (files whose
    content did not change are not touched, so the build stays incremental)."""
    src = work
    files = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO).stdout
    names = [n for n in files.split("\0") if n and os.path.isfile(os.path.join(REPO, n))]
    for n in names:
        source, dest = os.path.join(REPO, n), os.path.join(src, n)
        data = open(source, "rb").read()
        if os.path.isfile(dest) and open(dest, "rb").read() == data:
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as fh:
            fh.write(data)
        shutil.copymode(source, dest)
    return src


def configure(src, build, env):
    if os.path.exists(os.path.join(build, "build.ninja")):
        return
    cmd = ["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ccache"):
        cmd.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    p = run(cmd, env=env)
    if p.returncode != 0:
        log(p.stdout)
        raise RuntimeError("cmake configure failed")


def build_targets(build, env, jobs):
    t = time.time()
    p = run(["cmake", "--build", build, "-j", str(jobs), "--target"] + BUILD_TARGETS, env=env)
    return p.returncode == 0, p.stdout, time.time() - t


def run_slice(build, tests, jobs, env, stop):
    t = time.time()
    cmd = ["ctest", "--test-dir", build, "-R", tests, "-j", str(jobs), "--timeout", "300"]
    if stop:
        cmd.append("--stop-on-failure")
    p = run(cmd, env=env)
    failed = re.findall(r"^\s*\d+ - (\S+) \(", p.stdout, re.M)
    counts = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", p.stdout)
    ran = int(counts.group(3)) if counts else 0
    return p.returncode == 0, failed, ran, time.time() - t, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=os.path.join(REPO, "build-mutation"),
                    help="scratch copy of the tree; its build is WORK/build")
    ap.add_argument("--only", help="comma-separated mutant ids (default: all)")
    ap.add_argument("--tests", default=DEFAULT_TESTS, help="ctest -R regex of the slice")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--list", action="store_true", help="list the mutants and check that each "
                    "snippet occurs exactly once in this checkout; build nothing")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the run of the unmutated slice (it must pass)")
    args = ap.parse_args()

    mutants = [m for m in MUTANTS if not m.equivalent]
    if args.only:
        want = args.only.split(",")
        unknown = [w for w in want if w not in {m.id for m in MUTANTS}]
        if unknown:
            sys.exit(f"unknown mutant ids: {', '.join(unknown)}")
        mutants = [m for m in MUTANTS if m.id in want]

    # Every snippet must be found exactly once in the checkout before anything is built.
    bad = []
    for m in mutants:
        try:
            f, _ = locate(REPO, m)
            if args.list:
                log(f"{m.id:32} {os.path.relpath(f, REPO)}: {m.what}"
                    + (f" [equivalent, not run: {m.equivalent}]" if m.equivalent else ""))
        except RuntimeError as e:
            bad.append(str(e))
    if bad:
        log("\n\n".join(bad))
        return 2
    if args.list:
        skipped = [m.id for m in MUTANTS if m.equivalent and m not in mutants]
        log(f"{len(mutants)} mutants, every snippet found once"
            + (f"; equivalent, not run: {', '.join(skipped)}" if skipped else ""))
        return 0

    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", os.path.dirname(REPO))
    work = os.path.abspath(args.work)
    t0 = time.time()
    src = sync_tree(work)
    build = os.path.join(work, "build")
    configure(src, build, env)
    log(f"building the unmutated tree in {build}")
    ok, out, secs = build_targets(build, env, args.jobs)
    if not ok:
        log(out[-5000:])
        log("the unmutated tree does not build")
        return 2
    if not args.no_baseline:
        ok, failed, ran, secs, out = run_slice(build, args.tests, args.jobs, env, stop=False)
        log(f"baseline: {ran} tests in {secs:.0f} s")
        if not ok or ran == 0:
            log(out[-5000:])
            log("the unmutated slice does not pass: fix that first")
            return 2

    results = []
    for k, m in enumerate(mutants, 1):
        path, text = locate(src, m)
        rel = os.path.relpath(path, src)
        log(f"[{k}/{len(mutants)}] {m.id} ({rel}): {m.what}")
        t = time.time()
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text.replace(m.old, m.new))
            ok, out, bsecs = build_targets(build, env, args.jobs)
            if not ok:
                log(out[-3000:])
                results.append((m, "ERROR", "does not compile", bsecs, 0.0))
                log("    ERROR: the mutant does not compile")
                continue
            passed, failed, ran, tsecs, out = run_slice(build, args.tests, args.jobs, env,
                                                        stop=True)
            if passed:
                verdict, detail = "SURVIVED", f"{ran} tests passed"
            else:
                verdict = "killed"
                detail = failed[0] if failed else "ctest failed (see its output)"
            results.append((m, verdict, detail, bsecs, tsecs))
            log(f"    {verdict}: {detail} (build {bsecs:.0f} s, tests {tsecs:.0f} s)")
        finally:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
    # Leave the copy's build matching the source again.
    build_targets(build, env, args.jobs)

    log("\n| mutant | file | result | first failing test | build s | tests s |")
    log("| --- | --- | --- | --- | ---: | ---: |")
    for m, verdict, detail, b, t in results:
        log(f"| {m.id} | {m.path} | {verdict} | {detail} | {b:.0f} | {t:.0f} |")
    killed = sum(1 for r in results if r[1] == "killed")
    survived = [r[0].id for r in results if r[1] == "SURVIVED"]
    errors = [r[0].id for r in results if r[1] == "ERROR"]
    log(f"\n{killed} of {len(results)} mutants killed; survived: {', '.join(survived) or 'none'}; "
        f"errors: {', '.join(errors) or 'none'}; {time.time() - t0:.0f} s in all")
    return 0 if not survived and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
