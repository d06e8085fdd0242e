#!/usr/bin/env python3
"""Golden diagnostics test: runs wavec on one malformed .wave file and compares its diagnostics.

The file states what it expects in comments:
  # ARGS: --target=sm_90 -DM=12        extra command-line arguments (optional)
  # EXPECT: 7:11: error: unknown name 'fo'; did you mean 'foo'? [unknown-name]
  # EXPECT-NOTE: 3:8: note: previous definition is here
  # EXIT: 1                             expected exit code (default 1)
Every EXPECT line must match one diagnostic line exactly (after the file name), and every
error or warning wavec prints must be expected: nothing more, nothing less. The output file
named by -o (if any) must not exist afterwards.
"""
import os
import re
import subprocess
import sys
import tempfile


def main():
    wavec, path = sys.argv[1], sys.argv[2]
    text = open(path, encoding="utf-8", errors="replace").read()
    args, expects, exit_code = [], [], 1
    for line in text.splitlines():
        m = re.match(r"\s*#\s*(ARGS|EXPECT|EXPECT-NOTE|EXIT):\s?(.*)$", line)
        if not m:
            continue
        kind, value = m.group(1), m.group(2).rstrip()
        if kind == "ARGS":
            args += value.split()
        elif kind == "EXIT":
            exit_code = int(value)
        else:
            expects.append(value)
    if not expects and exit_code != 0:
        print(f"{path}: no EXPECT lines")
        return 1
    out_file = os.path.join(tempfile.mkdtemp(prefix="wavec-golden-"), "out.txt")
    cmd = [wavec, path, "--color=never", "-o", out_file] + args
    if "--emit" not in " ".join(args):
        cmd.append("--check")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    got = []
    prefix = path + ":"
    for line in proc.stderr.splitlines():
        if line.startswith(prefix):
            got.append(line[len(prefix):].strip())
        elif line.startswith("wavec: "):
            got.append(line[len("wavec: "):])
    ok = True
    for e in expects:
        if e not in got:
            print(f"missing expected diagnostic:\n  {e}")
            ok = False
    for g in got:
        if re.search(r" (error|warning|fatal error): ", g) and g not in expects:
            print(f"unexpected diagnostic:\n  {g}")
            ok = False
    if proc.returncode != exit_code:
        print(f"exit code {proc.returncode}, expected {exit_code}")
        ok = False
    if exit_code != 0 and os.path.exists(out_file):
        print("an output file was written although compilation failed")
        ok = False
    if not ok:
        print("--- command:", " ".join(cmd))
        print("--- stderr:\n" + proc.stderr)
        return 1
    print(f"ok: {len(expects)} diagnostic(s) matched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
