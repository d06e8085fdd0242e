#!/usr/bin/env python3
"""Runs wavec with the file's `# RUN-ARGS:` arguments and pipes stdout through FileCheck.

With a `# RUN-STDERR: 1` line it checks stderr instead (the --print-ir-after dumps), and with
`# RUN-EXIT: N` wavec must exit N (default 0)."""
import re
import subprocess
import sys


def main():
    wavec, filecheck, path = sys.argv[1], sys.argv[2], sys.argv[3]
    args, use_stderr, exit_code = [], False, 0
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*#\s*RUN-ARGS:\s*(.*)$", line)
        if m:
            args += m.group(1).split()
        m = re.match(r"\s*#\s*RUN-STDERR:\s*1\s*$", line)
        use_stderr |= m is not None
        m = re.match(r"\s*#\s*RUN-EXIT:\s*(\d+)\s*$", line)
        if m:
            exit_code = int(m.group(1))
    proc = subprocess.run([wavec, path, "--color=never"] + args, capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != exit_code:
        print(f"wavec exited {proc.returncode}, expected {exit_code}:\n{proc.stderr}")
        return 1
    out = proc.stderr if use_stderr else proc.stdout
    check = subprocess.run([filecheck, path, "--comment-prefixes=NOTE"], input=out,
                           text=True, capture_output=True)
    if check.returncode != 0:
        print(check.stderr)
        print("--- wavec output:\n" + out)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
