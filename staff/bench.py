"""`make bench`: the kit's speed, measured in one run, as a table and a CSV.

  python3 -m staff.bench [--build build] [--csv build/bench.csv] [--repeat 3] [--quick] [--baseline REV]

Every timing is the median of --repeat runs (3 by default), with min and
max. Rows:
  suite, partN     `make test` on the reference (a warm build), whole, and
                   each part (python3 -m kit test partN); the original Python
                   kit took 15 s here
  mpirun floor     mpirun starting and ending an MPI program that does
                   nothing (mpi_demo --help) with 1, 4 and 8 ranks; the
                   public suite is one launch of 8 ranks
  gemm peak        the machine's peak for training: the fastest of the
                   kit's GEMM kernels (generic, AVX2, AVX-512: framework/
                   include/gemm.h) and a system CBLAS if installed, on one core,
                   the products of one iteration (build/gemm_peak)
  train ...        unified_train, one epoch of 60,000 samples: wall time of
                   the epoch (the program's own clock), samples/s, GFLOP/s
                   of the FC layers (49.1 GFLOP per epoch, whatever the
                   split: every rank's share adds up to the same products),
                   achieved/peak, test accuracy (10,000 test rows) and the
                   largest rank's peak RSS; the whole run's wall time
                   besides (start, every rank loading the data set, the
                   test) and, for rank counts up to the cores, the epoch's
                   speed-up over one rank, also without rank 0's time
                   inside collectives (communication and waiting: what
                   keeps the speed-up from ideal). Beside the jobs the
                   original Python kit was timed on, its whole run and
                   accuracy, with targets: at most half its time for one
                   rank, two thirds for more, its accuracy less 0.5 points.
  zero dp4         zero_dp_train, the same figures, on the original's work:
                   8,000 training and 1,200 test rows, global batch 100
  ledger           per training, the collective ledger's share of the epoch:
                   the calls it recorded times the cost of one record
                   (measured by the trainer), over the epoch's time
  pipeline         Part 12's trainer (an extension part): on K = 2, M = 8,
                   the bubble of equal stages (its busiest stage's idle
                   share) against (K-1)/(M+K-1), within 0.05, and this
                   MLP's; on K = 4, M = 8, one epoch's accuracy (target
                   0.80) and stage 0's peak stash under 1F1B over GPipe's
                   (target K/M)
  edit -> result   `make test-part7` on the stubs right after an edit of
                   student/func_impl.cpp (the student's loop), next to the
                   same command with nothing to rebuild and the compile of
                   that file alone, which dominates; then `make test-part3`
                   and `make test-part8` after an edit of the solution's
                   file (the ZeRO solution multiplies with gemm(); with
                   Eigen's `*` its compile alone takes about 4 s more)
  grade cold/warm  grader/grade on the reference handin, with an empty and a
                   full object cache
  batch            grader/grade --batch --jobs 2 on 2 handins: handins/min
Then the targets, each read from this run's rows: met or MISSED.
The training and pipeline rows are staff/bench_training.py's; the table
and the timed command, staff/bench_table.py's.
--quick: one run each and 8,000 training samples, to try the script out
(the original's figures then apply to the ZeRO job only).
--baseline REV (make bench BASELINE=REV): an earlier revision's trainers,
built beside this copy (staff/bench_baseline.py), each run just before
this copy's, with the ratios of their medians and the target that this
copy's whole run is no slower.
"""
import argparse
import csv
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

from kit import parts as table
from kit.paths import KIT_DIR as KIT, KITRUN, build_dir
from staff.bench_baseline import prepare
from staff.bench_table import BenchError, Table, run
from staff.bench_training import RSS_TARGET_ROW, pipeline, trainings

PYTHON = sys.executable
ORIGINAL_SUITE_SECONDS = 15.0
BATCH = 2  # handins in the batch row: one per worker


def mpirun_floor(t: Table, build: str) -> Dict[int, float]:
    floor = {}
    for ranks in (1, 4, 8):
        floor[ranks] = t.timed(f"mpirun floor, {ranks} rank{'s' if ranks > 1 else ''}",
                               [KITRUN, "-n", str(ranks), os.path.join(build, "mpi_demo"), "--help"],
                               "start and end an MPI program that does nothing")
    return floor


def suite(t: Table, build: str, floor: Dict[int, float]) -> None:
    ranks = max(run_.ranks for p in table.PARTS for run_ in p.public_runs())
    t.add("mpirun floor of the suite", [floor[ranks]], "s",
          f"the suite is one launch of {ranks} ranks (`make test`): it can't go below this")
    med = t.timed("public suite (make test)", ["make", "--no-print-directory", "test", "IMPL=reference",
                                                f"BUILD={build}", f"PYTHON={PYTHON}"],
                  f"original Python kit {ORIGINAL_SUITE_SECONDS:.0f} s; target 1.5 s")
    t.add("  speed-up over the original", [ORIGINAL_SUITE_SECONDS / med], "x", "target >= 10")
    base = [PYTHON, "-m", "kit", "test", "--build", build, "--impl", "reference"]
    for key in dict.fromkeys(p.key.split("_")[0] for p in table.PARTS):
        t.timed(f"  {key}", base + [key])


def gemm_peak(t: Table, build: str, seconds: float) -> float:
    """The machine's peak for the epoch's products: the fastest of the kit's
    kernels and any system CBLAS (build/gemm_peak measures them all)."""
    runs = []
    for _ in range(t.repeat):
        _, out = run([os.path.join(build, "gemm_peak"), "--json", "--seconds", str(seconds)])
        runs.append(json.loads(out.strip().splitlines()[-1]))
    for name in runs[0]["candidates"]:
        note = "the layers' kernel" if name == runs[0]["layers_kernel"] else ""
        t.add(f"  gemm {name}", [r["candidates"][name] for r in runs], "GFLOP/s", note)
    best = statistics.mode(r["best"] for r in runs)
    return t.add("gemm peak (machine, 1 core)", [r["gflops"] for r in runs], "GFLOP/s",
                 f"fastest: {best}; the products of one iteration, batch 60")



def timed_edits(repeat: int, path: str, cmd: List[str]) -> List[float]:
    """Seconds of `cmd` after each of `repeat` one-line edits of `path`,
    which is restored afterwards."""
    with open(path) as f:
        # A bench killed mid-way (kill -9) may have left its edit: drop it.
        original = re.sub(r"(// bench edit \d+\n)+\Z", "", f.read())
    run(cmd)  # up to date first
    edits = []
    try:
        for i in range(repeat):
            with open(path, "w") as f:
                f.write(original + f"// bench edit {i}\n")
            edits.append(run(cmd)[0])
    finally:
        with open(path, "w") as f:
            f.write(original)
    run(cmd)
    return edits


def edit_to_result(t: Table, build: str) -> None:
    """The student's loop: edit one file, see the part's result."""
    source = os.path.join(KIT, "student", "func_impl.cpp")
    cmd = ["make", "--no-print-directory", "test-part7", f"BUILD={build}", f"PYTHON={PYTHON}"]
    t.add("edit -> result (make test-part7)", timed_edits(t.repeat, source, cmd), "s",
          "after editing student/func_impl.cpp; target ~0.7 s + compile")
    t.timed("  nothing to rebuild", cmd, "the same command, up to date")
    command = next(c for c in json.load(open(os.path.join(build, "compile_commands.json")))
                   if os.path.realpath(c["file"]) == os.path.realpath(source))
    compile_cmd = command.get("arguments") or ["sh", "-c", command["command"]]
    t.add("  compile func_impl.cpp alone", [run(compile_cmd, cwd=command["directory"])[0] for _ in range(t.repeat)],
          "s", "with the precompiled Eigen header (the rest: make, the static check, mpirun)")
    # The same loop on whole solutions: the stubs compile no product at all.
    for part, name in (("part3", "func_impl.cpp"), ("part8", "zero_dp_stage3.cpp")):
        cmd = ["make", "--no-print-directory", f"test-{part}", "IMPL=reference", f"BUILD={build}", f"PYTHON={PYTHON}"]
        t.add(f"edit -> result (make test-{part}, a solution)",
              timed_edits(t.repeat, os.path.join(KIT, "reference", name), cmd), "s", f"after editing reference/{name}")


def grading(t: Table, build: str) -> None:
    with tempfile.TemporaryDirectory(prefix="kit-bench-") as tmp:
        handin = os.path.join(tmp, "reference.tar")
        run([PYTHON, "-m", "kit", "handin", "--build", build, "--source", "reference", "--output", handin])
        grade = [PYTHON, os.path.join(KIT, "grader", "grade"), "--build", build, handin]
        cache = os.path.join(build, "impl_cache")
        cold = []
        for _ in range(t.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            seconds, out = run(grade)
            if json.loads(out.splitlines()[-1])["scoreboard"] != [float(table.TOTAL_POINTS)]:
                raise BenchError(f"the reference did not score {table.TOTAL_POINTS}:\n{out[-2000:]}")
            cold.append(seconds)
        t.add("grade one handin, cold cache", cold, "s", "compiles all three files")
        t.timed("grade one handin, warm", grade, "target <= 20 s")
        batch_dir = os.path.join(tmp, "batch")
        os.makedirs(batch_dir)
        for i in range(BATCH):
            shutil.copy(handin, os.path.join(batch_dir, f"student{i}.tar"))
        cmd = [PYTHON, os.path.join(KIT, "grader", "grade"), "--build", build, "--batch", batch_dir, "--jobs", "2", "--regrade",
               "--csv", os.path.join(tmp, "out", "gradebook.csv")]
        times = [run(cmd)[0] for _ in range(t.repeat)]
        t.add(f"batch --jobs 2 ({BATCH} handins)", times, "s")
        t.add("  throughput", [BATCH * 60 / s for s in times], "handins/min")


TARGETS = [  # (row, "<=" or ">=", bound): targets on the median; every "ledger overhead" row too (<= 2 %)
    (f"{RSS_TARGET_ROW}: peak RSS, all ranks", "<=", 1024.0),
    ("public suite (make test)", "<=", 1.5),
    ("speed-up over the original", ">=", 10.0),
    ("train mp1 dp1: achieved / peak", ">=", 0.70),
    ("grade one handin, warm", "<=", 20.0),
]


def verdicts(t: Table) -> List[str]:
    """One line per target, read from this run's rows."""
    median = {r["row"].strip(): r["median"] for r in t.rows}
    lines = []
    ledger = [(r, "<=", 2.0) for r in median if r.endswith("ledger overhead")]
    for row, sense, bound in TARGETS + t.targets + ledger:
        value = median[row]
        met = value <= bound if sense == "<=" else value >= bound
        lines.append(f"  {'met   ' if met else 'MISSED'} {row}: {value:.3f} (target {sense} {bound:g})")
    for row in (r for r in median if "speed-up" in r and "original" not in r):
        lines.append(f"  {'':6} {row}: {median[row]:.2f}x")
    return lines


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    ap.add_argument("--csv", help="default: BUILD/bench.csv")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one run each, 8000 training samples")
    ap.add_argument("--baseline", metavar="REV", help="an earlier revision whose trainers run in turn with this "
                                                      "copy's (staff/bench_baseline.py)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    build = build_dir(args.build)
    for binary in ("mpi_demo", "gemm_peak", "reference/unified_train", "reference/zero_dp_train",
                   "reference/kit_tests"):
        if not os.access(os.path.join(build, binary), os.X_OK):
            print(f"bench: {build}/{binary} is missing; run `make build` in a staff copy (with reference/)",
                  file=sys.stderr)
            return 2
    t = Table(1 if args.quick else args.repeat)
    samples = 8000 if args.quick else 60000
    started = time.monotonic()
    print(f"  {'what':<40} {'median':>10} {'min':>10} {'max':>10}  {'unit':<11} note")
    try:
        floor = mpirun_floor(t, build)
        suite(t, build, floor)
        peak = gemm_peak(t, build, 0.5 if args.quick else 1.0)
        trainings(t, build, samples, peak, prepare(args.baseline, build) if args.baseline else None)
        if "part12_pipeline" in table.CONFIGURATION.held:  # the configuration says whether it was built
            pipeline(t, build, samples)
        edit_to_result(t, build)
        grading(t, build)
    except (BenchError, subprocess.TimeoutExpired) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    out = args.csv or os.path.join(build, "bench.csv")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    new = not os.path.exists(out)
    with open(out, "a", newline="") as f:  # appended: one block per run, to compare over time
        writer = csv.writer(f)
        if new:
            writer.writerow(["date", "row", "median", "min", "max", "unit", "note"])
        for r in t.rows:
            writer.writerow([stamp, r["row"].strip(), f"{r['median']:.4f}", f"{r['min']:.4f}", f"{r['max']:.4f}",
                             r["unit"], r["note"]])
    print("targets:\n" + "\n".join(verdicts(t)))
    print(f"bench: {len(t.rows)} rows in {time.monotonic() - started:.0f} s; appended to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
