#!/usr/bin/env python3
"""`wavec --check --target=T` succeeds exactly when compiling for T succeeds (issue 14).

  check_matches_compile.py WAVEC SOURCE_DIR

For every samples/*/*.wave and tests/**/*.wave and each of gfx942, gfx90a, gfx1100, sm_80, sm_90
and sm_90a, once without -D bindings and once per distinct set of -D flags on the file's
`# ARGS:`, `# RUN-ARGS:` and `# RUN-<NAME>:` lines (as scripts/same_output.sh takes them), it
runs:
  1. `wavec --check` with WAVEC_CHECK_NO_CODEGEN=1: the front end, the distribution and the
     legalize pass alone (src/passes/legalize.h), without the code generator's MLIR step;
  2. `wavec --check` as users run it (with that MLIR step when libwavec_codegen.so is there);
  3. `wavec --emit=mlir` (the code generator's emitter);
  4. when 3 succeeded and objects are on, the target's code object (HSACO or PTX, the default
     output) in a temporary directory.
A case matches when 1, 2 and the compilation (3, and 4 when run) all succeed or all fail. Every
mismatch is printed with the diagnostics, and so is any `codegen-unsupported` (the emitter's
backstop: legalize missed something). Exit 1 on any.

Environment: JOBS (default 2) cases at a time; CHECK_MATCHES_OBJECTS=0 compiles the emitted MLIR
only (faster; the output says so), default 1; CHECK_MATCHES_ONLY=REGEX takes only the inputs whose
path from the source root matches.
"""
import collections
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TARGETS = ("gfx942", "gfx90a", "gfx1100", "sm_80", "sm_90", "sm_90a")
LINE_RE = re.compile(r"^\s*(?:#|//)\s*(?:ARGS|RUN-ARGS|RUN-[A-Za-z0-9_]+)\s*:(.*)$")
DEF_RE = re.compile(r"-D\s*([A-Za-z_][A-Za-z0-9_]*=\S+)")
ID_RE = re.compile(r" error: .*\[([a-z0-9-]+)\]$")


def cases(root, only):
    files = sorted(glob.glob(os.path.join(root, "samples/*/*.wave")) +
                   glob.glob(os.path.join(root, "tests/**/*.wave"), recursive=True))
    out = []
    for f in files:
        rel = os.path.relpath(f, root)
        if only and not only.search(rel):
            continue
        variants = [[]]
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh.read().splitlines():
                m = LINE_RE.match(line)
                if m:
                    defs = ["-D" + d for d in DEF_RE.findall(m.group(1))]
                    if defs and defs not in variants:
                        variants.append(defs)
        for t in TARGETS:
            for v in variants:
                out.append((f, rel, t, v))
    return out


def run(cmd, cwd, env):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "timed out after 300 s"


def error_ids(text):
    return sorted({m.group(1) for m in (ID_RE.search(l) for l in text.splitlines()) if m})


def one(wavec, objects, case):
    src, rel, target, defs = case
    tmp = tempfile.mkdtemp(prefix="check-matches-")
    try:
        base = [wavec, "--no-cache", "--color=never", src, "--target=" + target] + defs
        env = dict(os.environ)
        env.pop("WAVEC_CHECK_NO_CODEGEN", None)
        alone_env = dict(env, WAVEC_CHECK_NO_CODEGEN="1")
        rc_alone, err_alone = run(base + ["--check"], tmp, alone_env)
        rc_check, err_check = run(base + ["--check"], tmp, env)
        rc_mlir, err_mlir = run(base + ["--emit=mlir", "-o", os.path.join(tmp, "k.mlir")], tmp, env)
        rc_obj, err_obj = None, ""
        if objects and rc_mlir == 0:
            rc_obj, err_obj = run(base, tmp, env)  # the default output, in tmp
        compiled = rc_mlir == 0 and (rc_obj is None or rc_obj == 0)
        return dict(rel=rel, target=target, defs=" ".join(defs), alone=rc_alone == 0,
                    check=rc_check == 0, compiled=compiled, err_alone=err_alone,
                    err_check=err_check, err_compile=err_mlir + err_obj,
                    crashed=any(rc not in (0, 1, None) for rc in (rc_alone, rc_check, rc_mlir, rc_obj)),
                    obj_run=rc_obj is not None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    wavec, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    jobs = int(os.environ.get("JOBS", "2"))
    objects = os.environ.get("CHECK_MATCHES_OBJECTS", "1") != "0"
    only = re.compile(os.environ["CHECK_MATCHES_ONLY"]) if os.environ.get("CHECK_MATCHES_ONLY") else None
    todo = cases(root, only)
    print(f"{len(todo)} cases: {len(set(c[1] for c in todo))} files x {len(TARGETS)} targets "
          f"(and their -D variants), {jobs} at a time; compilation: "
          + ("--emit=mlir, then the code object" if objects
             else "--emit=mlir only (CHECK_MATCHES_OBJECTS=0: code objects not built)"), flush=True)
    start = time.time()
    results = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        for i, r in enumerate(ex.map(lambda c: one(wavec, objects, c), todo), 1):
            results.append(r)
            if i % 250 == 0:
                print(f"  {i} cases done, {time.time() - start:.0f} s", flush=True)
    bad = 0
    refused_by = collections.Counter()
    stats = collections.Counter()
    for r in results:
        name = f"{r['rel']} --target={r['target']}" + (f" {r['defs']}" if r['defs'] else "")
        stats["compiled" if r["compiled"] else "refused"] += 1
        stats["objects"] += r["obj_run"]
        if not r["alone"]:
            for i in error_ids(r["err_alone"]):
                refused_by[i] += 1
        problems = []
        if r["crashed"]:
            problems.append("a wavec run ended with neither 0 nor 1 (a crash or timeout)")
        if r["alone"] != r["compiled"]:
            problems.append(f"--check without the code generator {'succeeds' if r['alone'] else 'fails'}"
                            f" but compiling {'succeeds' if r['compiled'] else 'fails'}")
        if r["check"] != r["compiled"]:
            problems.append(f"--check {'succeeds' if r['check'] else 'fails'}"
                            f" but compiling {'succeeds' if r['compiled'] else 'fails'}")
        if "[codegen-unsupported]" in r["err_compile"] + r["err_check"]:
            problems.append("codegen-unsupported reached: the legalize pass missed a construct")
        if problems:
            bad += 1
            print(f"MISMATCH {name}: " + "; ".join(problems))
            for label, text in (("--check (legalize alone)", r["err_alone"]),
                                ("compile", r["err_compile"])):
                lines = [l for l in text.splitlines() if " error: " in l][:3]
                for l in lines:
                    print(f"    {label}: {l}")
    print(f"{len(results)} cases in {time.time() - start:.0f} s: {stats['compiled']} compile, "
          f"{stats['refused']} refused ({stats['objects']} code objects built); {bad} mismatches")
    print("refused by --check without the code generator, per diagnostic id (cases): " +
          ", ".join(f"{k} {v}" for k, v in sorted(refused_by.items(), key=lambda kv: -kv[1])))
    if not objects:
        print("NOTE: compiled with --emit=mlir only (CHECK_MATCHES_OBJECTS=0)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
