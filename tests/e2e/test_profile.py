#!/usr/bin/env python3
"""wave-run --profile on an emulator device: the profile of a sample kernel runs, its JSON parses
with the documented keys (docs/user-guide.md, "Profiling on the emulator") and its counters obey
the rules they must (efficiency within [0, 1], conflicts = wavefronts - phases, a GEMM has matrix
instructions, ...). For a launch whose geometry the caller knows: `--expect-mma N` (matrix
instructions executed, over all waves), `--expect-store-bytes B` (global bytes stored: the
output's size, each element written once) and `--min-global-bytes B` (bytes requested from global
memory: at least the compulsory traffic, every input read once and the output written once).
Bars (issue 19): `--max-conflicts N` (shared-memory bank conflicts of the whole kernel, the main
loop's included) and `--min-efficiency F` (the kernel's global coalescing efficiency, 0..1).

usage: test_profile.py WAVE_RUN FILE.wave TARGET [--expect-mma N] [--expect-store-bytes B]
                       [--min-global-bytes B] [--max-conflicts N] [--min-efficiency F]
                       [--shared] -- WAVE_RUN_ARGS...
       test_profile.py WAVE_RUN FILE.wave --errors      (bad uses of --profile)
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run(args, threads=None):
    env = dict(os.environ)
    if threads:
        env["WAVE_EMU_THREADS"] = str(threads)
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)


CLASSES = ["mma", "alu", "global_memory", "shared_memory", "barrier", "shuffle", "other"]
KERNEL_KEYS = ["name", "device", "target", "wave_size", "launches", "grid", "block", "lds_bytes",
               "threads", "waves", "occupancy", "instructions", "global", "shared", "sites"]
GLOBAL_KEYS = ["requested_bytes", "unique_bytes", "sectors", "moved_bytes", "segments_64",
               "segments_128", "efficiency"]
SHARED_KEYS = ["requested_bytes", "phases", "wavefronts", "bank_conflicts"]
OCC_KEYS = ["unit", "max_waves", "waves_per_workgroup", "workgroups", "waves", "fraction",
            "limited_by", "workgroups_by_waves", "workgroups_by_lds", "workgroups_by_registers",
            "lds_per_unit", "registers_known", "vgprs", "agprs", "sgprs", "registers"]
SITE_KEYS = ["pc", "location", "file", "line", "col", "op", "space", "bytes_per_lane",
             "executions", "lane_accesses"]


def check_global(g, where):
    for key in GLOBAL_KEYS:
        if key not in g:
            fail(f"{where}: no '{key}'")
            return
    if not 0.0 <= g["efficiency"] <= 1.0:
        fail(f"{where}: efficiency {g['efficiency']} outside [0, 1]")
    if g["moved_bytes"] != 32 * g["sectors"]:
        fail(f"{where}: moved_bytes {g['moved_bytes']} != 32 x {g['sectors']} sectors")
    if g["unique_bytes"] > min(g["requested_bytes"], g["moved_bytes"]):
        fail(f"{where}: unique bytes {g['unique_bytes']} exceed requested or moved")
    if not g["segments_128"] <= g["segments_64"] <= g["sectors"] <= 2 * g["segments_64"]:
        fail(f"{where}: segments and sectors out of order: {g}")


def check_shared(s, where):
    for key in SHARED_KEYS:
        if key not in s:
            fail(f"{where}: no '{key}'")
            return
    if s["bank_conflicts"] != s["wavefronts"] - s["phases"] or s["wavefronts"] < s["phases"]:
        fail(f"{where}: conflicts {s['bank_conflicts']} != wavefronts {s['wavefronts']} - "
             f"phases {s['phases']}")


def check_kernel(k, target, source, opts):
    for key in KERNEL_KEYS:
        if key not in k:
            fail(f"kernel: no '{key}' in {sorted(k)}")
            return
    if k["target"] != target or k["device"] != "emu:" + target:
        fail(f"target {k['target']} / device {k['device']}, expected {target}")
    if k["launches"] != 1:
        fail(f"launches {k['launches']}, expected 1")
    occ = k["occupancy"]
    if not isinstance(occ, dict) or any(key not in occ for key in OCC_KEYS):
        fail(f"occupancy lacks keys: {occ}")
    else:
        if not 0 < occ["fraction"] <= 1 or occ["waves"] != occ["workgroups"] * occ[
                "waves_per_workgroup"]:
            fail(f"implausible occupancy {occ}")
        if occ["limited_by"] not in ("waves", "lds", "registers"):
            fail(f"limited_by {occ['limited_by']}")
        if target.startswith("gfx") and not occ["registers_known"]:
            fail("AMD occupancy without the code object's VGPRs")
        if k["lds_bytes"] > 0 and occ["workgroups_by_lds"] is None:
            fail("shared memory used but no LDS limit")
    ins = k["instructions"]
    for c in CLASSES:
        if c not in ins.get("per_wave", {}) or c not in ins.get("thread_total", {}):
            fail(f"instructions: no class '{c}'")
            return
    if ins["per_wave"]["global_memory"] <= 0 or ins["per_wave"]["alu"] <= 0:
        fail(f"a kernel without global memory or ALU instructions: {ins['per_wave']}")
    check_global(k["global"], "kernel global")
    check_shared(k["shared"], "kernel shared")
    if k["global"]["sectors"] == 0:
        fail("no global sectors")
    sites = k["sites"]
    if not sites:
        fail("no memory instruction sites")
    sums = {"requested_bytes": 0, "sectors": 0}
    stored = 0
    for s in sites:
        where = f"site {s.get('location')}"
        if any(key not in s for key in SITE_KEYS):
            fail(f"{where}: keys {sorted(s)}")
            continue
        if os.path.basename(s["file"]) != os.path.basename(source) or s["line"] <= 0:
            fail(f"{where}: not located in {source}")
        if s["location"] != f"{s['file']}:{s['line']}:{s['col']}":
            fail(f"{where}: location does not match file:line:col")
        if s["executions"] <= 0 or s["lane_accesses"] < s["executions"]:
            fail(f"{where}: executions {s['executions']}, lane accesses {s['lane_accesses']}")
        if s["space"] == "global":
            check_global(s["global"], where)
            for key in sums:
                sums[key] += s["global"][key]
            if "store" in s["op"]:
                stored += s["global"]["requested_bytes"]
        elif s["space"] == "shared":
            check_shared(s["shared"], where)
        else:
            fail(f"{where}: space {s['space']}")
    for key, total in sums.items():
        if total != k["global"][key]:
            fail(f"sites' global {key} sum to {total}, the kernel says {k['global'][key]}")
    if opts["mma"] is not None:
        if ins["mma_wave_instructions"] != opts["mma"]:
            fail(f"matrix instructions {ins['mma_wave_instructions']}, expected {opts['mma']}")
        if ins["per_wave"]["mma"] <= 0:
            fail("a GEMM whose waves issue no MMA")
    if opts["stored"] is not None and stored != opts["stored"]:
        fail(f"global bytes stored {stored}, expected {opts['stored']}")
    if opts["min_global"] is not None and k["global"]["requested_bytes"] < opts["min_global"]:
        fail(f"global bytes requested {k['global']['requested_bytes']}, less than the "
             f"compulsory {opts['min_global']}")
    if opts["max_conflicts"] is not None:
        worst = [(s["location"], s["op"], s["shared"]["bank_conflicts"]) for s in sites
                 if s["space"] == "shared" and s["shared"]["bank_conflicts"] > 0]
        if k["shared"]["bank_conflicts"] > opts["max_conflicts"]:
            fail(f"{k['shared']['bank_conflicts']} bank conflicts, at most "
                 f"{opts['max_conflicts']} allowed: {worst}")
    if opts["min_efficiency"] is not None and k["global"]["efficiency"] < opts["min_efficiency"]:
        fail(f"global coalescing efficiency {k['global']['efficiency']:.3f} below "
             f"{opts['min_efficiency']}")
    if opts["shared"]:
        if not any(s["space"] == "shared" for s in sites) or k["shared"]["phases"] == 0:
            fail("a kernel staged through shared memory has no shared sites")


def profile_run(wave_run, source, target, opts, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "profile.json")
        base = [wave_run, source, "--device", "emu:" + target, "--seed", "7"] + args
        r = run(base + ["--check", "--profile-format=json", "--profile-output", out], threads=1)
        print(r.stdout + r.stderr)
        if r.returncode != 0:
            fail(f"--profile-format=json exit {r.returncode}")
            return
        try:
            doc = json.load(open(out))
        except ValueError as e:
            fail(f"the JSON profile does not parse: {e}")
            return
        if doc.get("profile_version") != 1 or len(doc.get("kernels", [])) != 1:
            fail(f"document: version {doc.get('profile_version')}, "
                 f"{len(doc.get('kernels', []))} kernels")
            return
        check_kernel(doc["kernels"][0], target, source, opts)
        # JSON on standard output: the document alone (wave-run's lines go to standard error);
        # workgroups spread over 3 host threads count the same as on one.
        r = run(base + ["--profile-format=json"], threads=3)
        try:
            again = json.loads(r.stdout)
            if again["kernels"][0] != doc["kernels"][0]:
                fail("the profiles on 1 and 3 host threads differ")
        except (ValueError, KeyError, IndexError) as e:
            fail(f"standard output is not the JSON profile alone: {e}: {r.stdout[:200]}")
        # The text report.
        r = run(base + ["--profile"])
        text = r.stdout
        for want in ["profile of ", "occupancy:", "instructions per wave:", "global memory:",
                     "bank conflicts", os.path.basename(source) + ":"]:
            if want not in text:
                fail(f"the text report lacks '{want}'")
        if r.returncode != 0:
            fail(f"--profile exit {r.returncode}: {r.stderr}")


def errors(wave_run, source):
    cases = [
        (["--device", "cuda://0", "--profile"], "emulator device"),
        (["--device", "hip://0", "--profile"], "emulator device"),
        (["--reference", "--profile"], "emulator"),
        (["--device", "emu:gfx942", "--profile", "--bench", "3"], "exclude"),
        (["--device", "emu:gfx942", "--profile-format=xml"], "expected text or json"),
    ]
    for args, want in cases:
        r = run([wave_run, source, "--size", "M=64", "--size", "N=64", "--size", "K=256"] + args)
        if r.returncode != 2 or want not in r.stderr or "Traceback" in r.stderr:
            fail(f"{' '.join(args)}: exit {r.returncode}, stderr {r.stderr.strip()!r}")
    # Without --profile nothing is counted or printed.
    r = run([wave_run, source, "--device", "emu:gfx942", "--size", "M=64", "--size", "N=64",
             "--size", "K=256"])
    if r.returncode != 0 or "profile of" in r.stdout:
        fail(f"a plain run: exit {r.returncode}, output {r.stdout!r}")


def main():
    wave_run, source = sys.argv[1], sys.argv[2]
    if sys.argv[3] == "--errors":
        errors(wave_run, source)
    else:
        target, rest = sys.argv[3], sys.argv[4:]
        split = rest.index("--") if "--" in rest else len(rest)
        flags, args = rest[:split], rest[split + 1:]
        opts = {"mma": None, "stored": None, "min_global": None, "max_conflicts": None,
                "min_efficiency": None, "shared": "--shared" in flags}
        names = {"--expect-mma": "mma", "--expect-store-bytes": "stored",
                 "--min-global-bytes": "min_global", "--max-conflicts": "max_conflicts"}
        for i, f in enumerate(flags):
            if f in names:
                opts[names[f]] = int(flags[i + 1])
            elif f == "--min-efficiency":
                opts["min_efficiency"] = float(flags[i + 1])
        profile_run(wave_run, source, target, opts, args)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
