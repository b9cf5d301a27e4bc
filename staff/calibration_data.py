"""`make calibration-data` (staff, where the reference is): times the
reference on this machine into kit/reference_figures.json, the figures the
limits of every machine are calibrated from (kit/calibration.py): each
student file's compile with and without the precompiled header, each run's
slowest case, a whole warm grading, and the probe. Run it on a quiet
machine after a change to the reference, a case or a part, and commit the file.

  python3 -m staff.calibration_data [--build DIR]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

from kit import parts as table
from kit.calibration import FIGURES_FILE, Figures, probe
from kit.paths import KIT_DIR


def record(build_dir: str, out: str = FIGURES_FILE, rounds: int = 2) -> Figures:
    """Times the reference on this machine: each student file's compile
    (without the precompiled header, the fewest of `rounds`), and each run's
    slowest case, public and hidden, at one CPU."""
    from kit.build import compile_one
    from kit.jobs import Driven, run_parts
    from kit.launch import JobTally
    from kit.paths import REFERENCE_DIR
    from kit.recipe import recipe
    from kit import host_limits, judge
    how = dict(recipe(build_dir), cache_dir=None)
    kinds = [kind for kind in ("pch", "plain") if kind == "plain" or how.get("pch_flags")]
    # The probe before and after the rest, the fewest seconds of both: a
    # machine's noise (another process on the same core) only ever adds CPU time.
    first = {kind: probe(how, rounds=3, kind=kind) for kind in kinds}
    compile_cpu: Dict[str, Dict[str, float]] = {"plain": {}, "pch": {}}
    with tempfile.TemporaryDirectory(prefix="kit-record-") as scratch:
        for name in table.built_files():
            for kind in ("plain", "pch") if how.get("pch_flags") else ("plain",):
                best = None
                for _ in range(rounds):
                    spent: Dict = {}
                    errors = compile_one(how, os.path.join(REFERENCE_DIR, name), os.path.join(scratch, name + ".o"),
                                         timeout=600, pch=kind == "pch", spent=spent, cpu_limit=600)
                    if errors:
                        raise RuntimeError(f"the reference's {name} does not compile:\n{errors}")
                    best = spent["cpu"] if best is None else min(best, spent["cpu"])
                compile_cpu[kind][name] = round(best, 2)
    binary = os.path.join(build_dir, "reference", "kit_tests")
    expected = judge.load_all(sum(judge.files(KIT_DIR, None), []))
    cpus = host_limits.cpus()
    slowest: Dict[str, float] = {}
    for _ in range(rounds):
        tally = JobTally()
        ran = run_parts(binary, table.built_parts(), hidden=True, tally=tally,
                        launch_args={"capture": True, "expected": expected, "time_scale": 1.0},
                        driven=Driven.of_build(build_dir, "reference"))  # as a grading runs them
        if ran.error:
            raise RuntimeError(f"the reference's cases did not run: {ran.error}")
        failed = [c for c, o in ran.outcomes.items() if not o.passed]
        if failed:
            raise RuntimeError(f"the reference failed {len(failed)} case(s), such as {failed[0]}: not recorded")
        for run in table.all_runs():
            times = [o.seconds * min(run.ranks, cpus) for c, o in ran.outcomes.items() if table.matches(run.filter, c)]
            if times:
                slowest[run.filter] = min(slowest.get(run.filter, float("inf")), max(times))
    grading_cpu, parallel = time_a_grading(build_dir)
    pace = {kind: round(min(first[kind], probe(how, rounds=3, kind=kind)), 3) for kind in kinds}
    figures = Figures(pace, compile_cpu["plain"], {k: round(v, 3) for k, v in slowest.items()},
                      f"{platform.machine()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}",
                      round(grading_cpu, 2), round(parallel, 2), compile_cpu["pch"])
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pace": figures.pace, "where": figures.where, "compile": figures.compile,
                   "compile_pch": figures.compile_pch, "cases": figures.cases,
                   "grading": {"cpu": figures.grading_cpu, "parallel": figures.grading_parallel}},
                  f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, out)
    return figures


def time_a_grading(build_dir: str) -> tuple:
    """(CPU seconds, CPUs kept busy) of the grader on the reference, warm:
    the second of two gradings, whose objects the first cached."""
    import resource
    import tarfile
    from kit.paths import REFERENCE_DIR
    with tempfile.TemporaryDirectory(prefix="kit-record-") as scratch:
        handin = os.path.join(scratch, "reference.tar")
        with tarfile.open(handin, "w") as tar:
            for name in table.IMPL_FILES:
                tar.add(os.path.join(REFERENCE_DIR, name), f"student/{name}")
        cmd = [sys.executable, os.path.join(KIT_DIR, "grader", "grade"), "--build", build_dir, handin,
               "--json", os.path.join(scratch, "report.json")]
        for attempt in range(2):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            begun = time.monotonic()
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
            wall = time.monotonic() - begun
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            with open(os.path.join(scratch, "report.json")) as f:
                report = json.load(f)
            got = sum(p["points"] for p in report["parts"])
            if report["status"] != "graded" or got != table.TOTAL_POINTS:
                raise RuntimeError(f"the reference's grading gave {got} / {table.TOTAL_POINTS} "
                                   f"({report['status']}): not recorded\n{out.stdout[-3000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return cpu, max(1.0, cpu / wall)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the build directory (default: the kit's)")
    args = ap.parse_args(argv)
    from kit.paths import build_dir
    if not os.path.isdir(os.path.join(KIT_DIR, "reference")):
        print("calibration-data: this copy has no reference/ to time (staff copies only)", file=sys.stderr)
        return 2
    f = record(build_dir(args.build))
    print(f"calibration-data: the reference timed on this machine ({f.where}) into "
          f"{os.path.relpath(FIGURES_FILE, KIT_DIR)}; the probe took " +
          ", ".join(f"{v:.2f} s ({k})" for k, v in f.pace.items()) + "; python3 -m kit.calibration shows the limits")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
