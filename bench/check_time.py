#!/usr/bin/env python3
"""Wall and CPU time of a wavec invocation (or any command): median and spread of N runs.

usage: bench/check_time.py [--runs N] [--vs OTHER_EXECUTABLE] WAVEC ARGS...

Prints the load average before and after, the wall time and the user+sys CPU time of the
command (the CPU time is what other processes on a shared machine disturb least). With --vs,
OTHER_EXECUTABLE runs with the same arguments, alternating with WAVEC run by run, so that both
see the same load; each gets its own line.
"""
import os
import statistics
import subprocess
import sys
import time


def run_once(argv):
    """(wall ms, user+sys ms) of one run; exits on failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if status != 0:
        print(err, file=sys.stderr)
        sys.exit(1)
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def summary(values):
    values = sorted(values)
    return (f"median {statistics.median(values):.1f} ms, min {values[0]:.1f} ms, "
            f"max {values[-1]:.1f} ms")


def main():
    argv = sys.argv[1:]
    runs, other = 20, None
    while argv[:1] in (["--runs"], ["--vs"]):
        if argv[0] == "--runs":
            runs = int(argv[1])
        else:
            other = argv[1]
        argv = argv[2:]
    if not argv:
        print(__doc__)
        return 2
    commands = [argv] + ([[other] + argv[1:]] if other else [])
    for cmd in commands:
        run_once(cmd)  # warm the page cache
    load_before = os.getloadavg()
    times = [([], []) for _ in commands]
    for _ in range(runs):
        for cmd, (walls, cpus) in zip(commands, times):
            wall, cpu = run_once(cmd)
            walls.append(wall)
            cpus.append(cpu)
    load_after = os.getloadavg()
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    for cmd, (walls, cpus) in zip(commands, times):
        print(f"{' '.join(cmd)}: {runs} runs\n  wall {summary(walls)}\n  user+sys {summary(cpus)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
