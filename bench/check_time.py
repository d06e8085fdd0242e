#!/usr/bin/env python3
"""Wall time of `wavec --check` (or any wavec invocation): median and spread of N runs.

usage: bench/check_time.py [--runs N] WAVEC ARGS...
"""
import statistics
import subprocess
import sys
import time


def main():
    argv = sys.argv[1:]
    runs = 20
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    if not argv:
        print(__doc__)
        return 2
    subprocess.run(argv, capture_output=True)  # warm the page cache
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run(argv, capture_output=True)
        times.append((time.perf_counter() - t) * 1000)
        if p.returncode != 0:
            print(p.stderr.decode(), file=sys.stderr)
            return 1
    times.sort()
    print(f"{' '.join(argv)}: median {statistics.median(times):.1f} ms, "
          f"min {times[0]:.1f} ms, max {times[-1]:.1f} ms over {runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
