"""Runs the documentation as a reader would: every ```sh block of the given Markdown files, in
order, as written, in a fresh temporary directory, and compares the outputs the text quotes.

    run_docs.py BUILD_DIR SOURCE_DIR PYTHON README.md docs/tutorial.md ...

The directory stands for a checkout after the README's first command, with wavec installed:
it holds copies of samples/ and python/, HOME is a fresh directory inside it, the build is
installed into ~/wavec (`cmake --install BUILD_DIR --prefix ~/wavec`) and ~/wavec/bin is on
PATH, so `<wavec>` in a command means ~/wavec. PYTHON (one with numpy) is the `python3` on PATH.

Markers, HTML comments that the rendered page does not show, on the line before a block:
  <!-- docs-test: file NAME -->    the block is written to NAME (a .wave or .c the text shows)
  <!-- docs-test: output -->       each line of the block must appear in the output of the
                                   previous sh block (stdout and stderr)
  <!-- docs-test: fails -->        the sh block must exit with a non-zero status
  <!-- docs-test: gpu -->          the sh block needs a GPU: skipped, saying so, without one
  <!-- docs-test: skip REASON -->  the sh block is not run; REASON is printed
Each sh block runs as one bash script with `set -e` (no pipefail: as a reader's shell runs it). A skipped block is printed with
its reason; the run fails when any block fails or a quoted output is missing."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

build, source, python = sys.argv[1], sys.argv[2], sys.argv[3]
docs = sys.argv[4:]
failures = []
ran = skipped = 0


def has_gpu():
    if os.environ.get("WAVEC_DOCS_GPU") in ("0", "1"):
        return os.environ["WAVEC_DOCS_GPU"] == "1"
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/kfd")


def blocks(path):
    """(line, marker, marker_arg, lang, text) for each fenced block of a Markdown file."""
    lines = open(path).read().split("\n")
    out, marker, arg, i = [], None, "", 0
    while i < len(lines):
        m = re.match(r"\s*<!-- docs-test: (\w+)\s*(.*?)\s*-->\s*$", lines[i])
        if m:
            marker, arg = m.group(1), m.group(2)
            i += 1
            continue
        f = re.match(r"^```(\w*)\s*$", lines[i])
        if f:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((start, marker, arg, f.group(1), "\n".join(body) + "\n"))
            marker, arg = None, ""
        elif lines[i].strip():
            marker, arg = None, ""  # a marker applies to the block right after it
        i += 1
    return out


work = tempfile.mkdtemp(prefix="wavec-docs-")
home = os.path.join(work, "home")
os.makedirs(home)
shutil.copytree(os.path.join(source, "samples"), os.path.join(work, "samples"))
shutil.copytree(os.path.join(source, "python"), os.path.join(work, "python"),
                ignore=shutil.ignore_patterns("__pycache__"))
prefix = os.path.join(home, "wavec")
p = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True,
                   text=True)
if p.returncode != 0:
    print(f"FAIL: cmake --install {build} --prefix {prefix}:\n{p.stdout}{p.stderr}")
    sys.exit(1)
pybin = os.path.join(work, ".python-bin")
os.makedirs(pybin)
os.symlink(python, os.path.join(pybin, "python3"))
env = {k: v for k, v in os.environ.items()
       if k not in ("WAVEC", "WAVE_DEVICE", "WAVEC_CACHE_DIR", "WAVEC_PY_CACHE", "XDG_CACHE_HOME",
                    "PYTHONPATH", "MAKEFLAGS")}
env.update(HOME=home, PATH=f"{prefix}/bin:{pybin}:{env.get('PATH', '/usr/bin:/bin')}")
print(f"work directory {work} (HOME={home}; wavec installed in ~/wavec)")

gpu = has_gpu()
for doc in docs:
    path = os.path.join(source, doc)
    last_output, last_where = None, None
    for line, marker, arg, lang, text in blocks(path):
        where = f"{doc}:{line}"
        if marker == "file":
            with open(os.path.join(work, arg), "w") as f:
                f.write(text)
            print(f"--- {where}: wrote {arg}")
            continue
        if marker == "output":
            if last_output is None:
                print(f"--- {where}: quoted output of a block that did not run: not compared")
                continue
            missing = [l.strip() for l in text.split("\n")
                       if l.strip() and l.strip() not in last_output]
            if missing:
                failures.append(f"{where}: the output of {last_where} lacks {missing}")
                print(f"FAIL: {where}: the output of {last_where} lacks:\n  " + "\n  ".join(missing))
            else:
                print(f"ok: {where}: the quoted output appears in the output of {last_where}")
            continue
        if lang != "sh":
            continue
        script = text.replace("<wavec>", "$HOME/wavec")
        if marker == "skip":
            skipped += 1
            last_output = None
            print(f"--- SKIPPED {where}: {arg}\n" + "".join(f"    {l}\n" for l in text.strip().split("\n")))
            continue
        if marker == "gpu" and not gpu:
            skipped += 1
            last_output = None
            print(f"--- SKIPPED {where} (GPU-only step; no /dev/nvidia0 or /dev/kfd here):\n"
                  + "".join(f"    {l}\n" for l in text.strip().split("\n")))
            continue
        print(f"--- {where}:\n" + "".join(f"    $ {l}\n" for l in script.strip().split("\n")))
        t0 = time.time()
        p = subprocess.run(["bash", "-c", "set -e\n" + script], cwd=work, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ran += 1
        last_output, last_where = p.stdout, where
        shown = p.stdout if len(p.stdout) < 3000 else p.stdout[:1500] + "\n[...]\n" + p.stdout[-1500:]
        print("".join(f"    | {l}\n" for l in shown.rstrip().split("\n")) if shown.strip() else "", end="")
        want_fail = marker == "fails"
        ok = (p.returncode != 0) if want_fail else (p.returncode == 0)
        status = f"exit {p.returncode}" + (" (expected to fail)" if want_fail else "")
        print(f"    {'ok' if ok else 'FAIL'}: {status}, {time.time() - t0:.1f} s")
        if not ok:
            failures.append(f"{where}: {status}")

print(f"{ran} blocks run, {skipped} skipped, {len(failures)} failed")
for f in failures:
    print(f"FAIL: {f}")
if not failures:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
