#!/usr/bin/env python3
"""The emitter's generic files never test a vendor or print a vendor's dialect (issue 14).

usage: scripts/check_vendor_neutral.py REPO_ROOT

Scans src/codegen/emitter/ and src/codegen/mlir_emitter.cpp for code (comments stripped) that
names `Vendor::` or writes `nvvm.`, `rocdl.` or `amdgpu.` operations: those belong to the target
lowering (src/codegen/target_lowering.h, amd/, nvidia/). Prints each offending line and exits 1;
exits 0 when there is none.
"""
import pathlib
import re
import sys

PATTERN = re.compile(r"Vendor::|\bnvvm\.|\brocdl\.|\bamdgpu\.")


def code_of(line, in_block):
    """The line without // and /* */ comments; whether a block comment is still open."""
    out = ""
    i = 0
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return out, True
            i, in_block = end + 2, False
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            in_block, i = True, i + 2
        else:
            out += line[i]
            i += 1
    return out, in_block


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    files = sorted((root / "src/codegen/emitter").glob("*.[ch]*")) + [
        root / "src/codegen/mlir_emitter.cpp"]
    bad = []
    for f in files:
        in_block = False
        for n, line in enumerate(f.read_text().splitlines(), 1):
            code, in_block = code_of(line, in_block)
            if PATTERN.search(code):
                bad.append(f"{f.relative_to(root)}:{n}: {line.strip()}")
    for b in bad:
        print(b)
    print(f"{len(files)} generic emitter files, {len(bad)} vendor-specific lines")
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main())
