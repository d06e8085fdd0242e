#!/usr/bin/env python3
"""Every file a comment in src/ or runtime/ names must exist in this repository.

    python3 scripts/check_citations.py [ROOT]

Scans the `//` and `/* */` comments of every .h, .cpp and .def file under src/ and runtime/ for
file names with a known extension (docs/hardware.md, passes/kernel_plan.h, emu_image.h, ...)
and looks each up from the repository root, src/, runtime/include/ and the citing file's
directory; a bare name (no directory) may also be any file of that name in the repository. Prints every citation that resolves nowhere, with its file and
line; exit 1 if there is one. (Issue 14: a reader of the project must be able to follow them.)
"""
import os
import re
import sys

PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.(?:h|cpp|def|md|py|sh|wave|g4|c))\b")
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    missing, checked = [], 0
    names = set()
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
        names.update(files)
    for top in ("src", "runtime"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".def")):
                    continue
                path = os.path.join(dirpath, name)
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in COMMENT.finditer(text):
                    for cited in PATH.findall(m.group(0)):
                        checked += 1
                        bases = (root, os.path.join(root, "src"),
                                 os.path.join(root, "runtime", "include"), dirpath)
                        if any(os.path.exists(os.path.join(b, cited)) for b in bases):
                            continue
                        if "/" not in cited and cited in names:
                            continue
                        line = text.count("\n", 0, m.start()) + 1
                        missing.append(f"{os.path.relpath(path, root)}:{line}: {cited}")
    for m in missing:
        print("missing:", m)
    print(f"check_citations: {checked} file citations in comments, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
