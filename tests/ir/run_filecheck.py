#!/usr/bin/env python3
"""Runs wavec with the file's `# RUN-ARGS:` arguments and pipes stdout through FileCheck.

A `# FILECHECK-INPUT: stderr` line checks wavec's stderr instead (--print-ir-after dumps).
"""
import re
import subprocess
import sys


def main():
    wavec, filecheck, path = sys.argv[1], sys.argv[2], sys.argv[3]
    args = []
    stream = "stdout"
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*#\s*RUN-ARGS:\s*(.*)$", line)
        if m:
            args += m.group(1).split()
        m = re.match(r"\s*#\s*FILECHECK-INPUT:\s*(\w+)", line)
        if m:
            stream = m.group(1)
    proc = subprocess.run([wavec, path, "--color=never"] + args, capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != 0:
        print(f"wavec failed ({proc.returncode}):\n{proc.stderr}")
        return 1
    output = proc.stderr if stream == "stderr" else proc.stdout
    check = subprocess.run([filecheck, path, "--comment-prefixes=NOTE"], input=output,
                           text=True, capture_output=True)
    if check.returncode != 0:
        print(check.stderr)
        print(f"--- wavec {stream}:\n" + output)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
