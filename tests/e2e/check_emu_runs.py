#!/usr/bin/env python3
"""Checks that the emulator cases of the suite really run (issue 15): a broken emulator must show
up as failures, never as a suite of skipped tests.

usage: check_emu_runs.py registered BUILD_DIR SOURCE_DIR
       check_emu_runs.py results JUNIT_XML BUILD_DIR SOURCE_DIR

The expected end-to-end emulator cases are derived here from the sources, independently of
tests/e2e/CMakeLists.txt: every line of tests/e2e/samples.cases and every `# RUN-<CASE>:` line of
tests/e2e/kernels/*.wave, once per emulated target of the file's `# TARGETS:` line (default
gfx942 and sm_90), as the test `e2e/<stem>/<case>/emu_<target>`.

`registered` (a CTest test): every expected case is registered with CTest, and no emulator test
may skip (exit 77) unless its kernel says `# CODEGEN-PENDING:`.
`results` (scripts/test.sh, after the suite ran with --output-junit): every expected case, and
every other emulator test (sample_emu/*, emu/*, e2e/seeded_bugs/*), ran and passed; none
skipped or was left out. A kernel with a `# CODEGEN-PENDING:` line may skip.
"""
import glob
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

EMU_TARGETS = {"gfx942", "gfx90a", "gfx1100", "sm_80", "sm_90", "sm_90a"}
OTHER_EMU = re.compile(r"^(sample_emu/|emu/|e2e/seeded_bugs/)")
E2E_EMU = re.compile(r"^e2e/[^/]+/[^/]+/emu_[a-z0-9_]+$")


def targets_of(text):
    m = re.search(r"^# TARGETS:[ ]*(.*)$", text, re.M)
    return m.group(1).split() if m else ["gfx942", "sm_90"]


def expected_cases(src):
    """{test name: pending?} of every end-to-end emulator case the sources define."""
    cases = {}

    def add(path, case):
        text = open(path, encoding="utf-8").read()
        pending = re.search(r"^# CODEGEN-PENDING:", text, re.M) is not None
        stem = os.path.splitext(os.path.basename(path))[0]
        for t in targets_of(text):
            cases[f"e2e/{stem}/{case}/emu_{t}"] = pending

    for line in open(os.path.join(src, "tests/e2e/samples.cases"), encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([^ ]+) ([A-Za-z0-9_]+): *(.*)$", line)
        if m:
            add(os.path.join(src, m.group(1)), m.group(2))
    for path in sorted(glob.glob(os.path.join(src, "tests/e2e/kernels/*.wave"))):
        for m in re.finditer(r"^# RUN-([A-Z0-9_]+):", open(path, encoding="utf-8").read(), re.M):
            add(path, m.group(1).lower())
    return cases


def registered_tests(build):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                         stdout=subprocess.PIPE, check=True, text=True).stdout
    tests = {}
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        tests[t["name"]] = props
    return tests


def is_emu(name):
    return bool(E2E_EMU.match(name) or OTHER_EMU.match(name))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "registered" and len(sys.argv) == 4:
        junit, build, src = None, sys.argv[2], sys.argv[3]
    elif mode == "results" and len(sys.argv) == 5:
        junit, build, src = sys.argv[2], sys.argv[3], sys.argv[4]
    else:
        print(__doc__)
        return 2
    expected = expected_cases(src)
    tests = registered_tests(build)
    problems = []
    missing = sorted(n for n in expected if n not in tests)
    if missing:
        problems.append(f"{len(missing)} emulator cases the sources define are not registered "
                        f"with CTest (e.g. {', '.join(missing[:5])})")
    pending = {n for n, p in expected.items() if p}
    for name, props in sorted(tests.items()):
        if is_emu(name) and props.get("SKIP_RETURN_CODE") is not None and name not in pending:
            problems.append(f"{name} may skip (SKIP_RETURN_CODE): emulator tests must run")
    emu_tests = sorted(n for n in tests if is_emu(n))
    if junit:
        status = {}
        for case in ET.parse(junit).getroot().iter("testcase"):
            s = case.get("status", "")
            if case.find("skipped") is not None:
                s = "skipped"
            elif case.find("failure") is not None or case.find("error") is not None:
                s = "fail"
            status[case.get("name")] = s
        ran = [n for n in emu_tests if status.get(n) == "run"]
        for n in emu_tests:
            s = status.get(n)
            if s == "run" or (n in pending and s in ("skipped", "notrun")):
                continue
            problems.append(f"{n}: {s or 'not in this run'}")
        print(f"emulator tests: {len(ran)} of {len(emu_tests)} ran and passed "
              f"({len(expected)} end-to-end cases expected from the sources, "
              f"{len(pending)} of them codegen-pending)")
    else:
        print(f"emulator tests registered: {len(emu_tests)} "
              f"({len(expected)} end-to-end cases expected from the sources, "
              f"{len(pending)} of them codegen-pending)")
    for p in problems[:50]:
        print("FAIL: " + p)
    if len(problems) > 50:
        print(f"FAIL: ... and {len(problems) - 50} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
