"""`make bench`: the kit's speed, measured in one run, as a table and a CSV.

  python3 -m staff.bench [--build build] [--csv build/bench.csv] [--repeat 3] [--quick]

Every timing is the median of --repeat runs (3 by default), with min and
max. Rows:
  suite, partN     `make test` on the reference (a warm build), whole, and
                   each part (python3 -m kit test partN); the original Python
                   kit took 15 s here
  mpirun floor     mpirun starting and ending an MPI program that does
                   nothing (mpi_demo --help) with 1, 4 and 8 ranks; the
                   public suite is one launch of 8 ranks
  gemm peak        Eigen on one core, the products of one training
                   iteration (build/gemm_peak): the yardstick for training
  train ...        unified_train, one epoch of 60,000 samples: wall time of
                   the epoch (the program's own clock), samples/s, GFLOP/s
                   of the FC layers (49.1 GFLOP per epoch, whatever the
                   split: every rank's share adds up to the same products),
                   achieved/peak, and the largest rank's peak RSS; the
                   whole run's wall time besides (start, every rank
                   loading the data set, the test) and, for rank counts up
                   to the cores, the epoch's speed-up over one rank, also
                   without rank 0's time inside collectives (communication
                   and waiting: what keeps the speed-up from ideal)
  zero dp4         zero_dp_train, the same figures
  ledger           per training, the collective ledger's share of the epoch:
                   the calls it recorded times the cost of one record
                   (measured by the trainer), over the epoch's time
  edit -> result   `make test-part7` on the stubs right after an edit of
                   student/func_impl.cpp (the student's loop), next to the
                   same command with nothing to rebuild and the compile of
                   that file alone, which dominates
  grade cold/warm  grader/grade on the reference handin, with an empty and a
                   full object cache
  batch            grader/grade --batch --jobs 2 on 2 handins: handins/min
Then the targets, each read from this run's rows: met or MISSED.
--quick: one run each and 8,000 training samples, to try the script out.
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
from typing import Dict, List, Optional, Tuple

from kit import parts as table
from kit.paths import KIT_DIR as KIT, KITRUN, build_dir
PYTHON = sys.executable
ORIGINAL_SUITE_SECONDS = 15.0
CORES = os.cpu_count() or 1
BATCH = 2  # handins in the batch row: one per worker
TRAININGS = [  # (label, ranks, program, flags)
    ("train mp1 dp1", 1, "unified_train", ["--mp_size", "1", "--dp_size", "1"]),
    ("train naive mp2 dp4", 8, "unified_train", ["--mp_size", "2", "--dp_size", "4"]),
    ("train megatron mp4 dp2", 8, "unified_train", ["--mp_size", "4", "--dp_size", "2", "--megatron-mp"]),
    ("train dp2", 2, "unified_train", ["--mp_size", "1", "--dp_size", "2"]),
    ("train dp4", 4, "unified_train", ["--mp_size", "1", "--dp_size", "4"]),
    ("zero dp4", 4, "zero_dp_train", ["--dp_size", "4"]),
]


def fc_gflop(samples: int, din: int = 784, hidden: int = 256, dout: int = 10) -> float:
    """FC products of one epoch: forward and weight gradients of both layers,
    and FC2's input gradient (FC1's is never needed)."""
    return (2 * samples * (din * hidden + hidden * dout) * 2 + 2 * samples * hidden * dout) / 1e9


class BenchError(Exception):
    pass


def run(cmd: List[str], timeout: float = 600, env: Optional[Dict] = None, cwd: str = KIT) -> Tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, env=env)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise BenchError(f"`{' '.join(cmd)}` failed with status {proc.returncode}:\n{tail}")
    return seconds, proc.stdout


class Table:
    def __init__(self, repeat: int):
        self.repeat = repeat
        self.rows: List[Dict] = []

    def add(self, what: str, values: List[float], unit: str, note: str = "") -> float:
        med = statistics.median(values)
        self.rows.append({"row": what, "median": med, "min": min(values), "max": max(values), "unit": unit,
                          "note": note})
        print(f"  {what:<40} {med:>10.3f} {min(values):>10.3f} {max(values):>10.3f}  {unit:<11} {note}", flush=True)
        return med

    def timed(self, what: str, cmd: List[str], note: str = "", **kw) -> float:
        return self.add(what, [run(cmd, **kw)[0] for _ in range(self.repeat)], "s", note)


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
          f"the suite is one launch of {ranks} ranks (kit/suite.py): it can't go below this")
    med = t.timed("public suite (make test)", ["make", "--no-print-directory", "test", "IMPL=reference",
                                                f"BUILD={build}", f"PYTHON={PYTHON}"],
                  f"original Python kit {ORIGINAL_SUITE_SECONDS:.0f} s; target 1.5 s")
    t.add("  speed-up over the original", [ORIGINAL_SUITE_SECONDS / med], "x", "target >= 10")
    base = [PYTHON, "-m", "kit", "test", "--build", build, "--impl", "reference"]
    for key in dict.fromkeys(p.key.split("_")[0] for p in table.PARTS):
        t.timed(f"  {key}", base + [key])


def gemm_peak(t: Table, build: str, seconds: float) -> float:
    values = []
    for _ in range(t.repeat):
        _, out = run([os.path.join(build, "gemm_peak"), "--json", "--seconds", str(seconds)])
        values.append(json.loads(out.strip().splitlines()[-1])["gflops"])
    return t.add("gemm peak (Eigen, 1 core)", values, "GFLOP/s", "the products of one iteration, batch 60")


def trainings(t: Table, build: str, samples: int, peak: float) -> None:
    gflop = fc_gflop(samples)
    epoch_of, compute_of = {}, {}
    for label, ranks, program, flags in TRAININGS:
        epochs, rss, rss_total, walls, collective, ledger = [], [], [], [], [], []
        for _ in range(t.repeat):
            with tempfile.TemporaryDirectory(prefix="kit-bench-") as tmp:
                report = os.path.join(tmp, "report.json")
                wall, _ = run([KITRUN, "-n", str(ranks), os.path.join(build, "reference", program), *flags,
                               "--num_train_samples", str(samples), "--num_test_samples", "1000", "--report", report])
                with open(report) as f:
                    r = json.load(f)
            walls.append(wall)
            epochs.append(float(r["epoch_seconds"][0]))
            rss.append(float(r["peak_rss_bytes"]) / 2**20)
            rss_total.append(float(r["peak_rss_bytes_total"]) / 2**20)
            collective.append(float(r["collective_seconds"]))
            ledger.append(100 * r["ledger_calls"] * r["ledger_seconds_per_call"] / sum(r["epoch_seconds"]))
        epoch_of[label] = t.add(f"{label}: epoch", epochs, "s", f"{ranks} rank{'s' if ranks > 1 else ''}, {samples} samples")
        t.add(f"{label}: whole run", walls, "s", "+ mpirun, every rank loading the data set, the test")
        if ranks > 1:
            t.add(f"{label}: in collectives", [c / e for c, e in zip(collective, epochs)], "share",
                  "rank 0's share of the epoch inside collectives, waiting included")
        compute_of[label] = statistics.median(e - c for e, c in zip(epochs, collective))
        t.add(f"{label}: samples/s", [samples / e for e in epochs], "1/s")
        t.add(f"{label}: FC GFLOP/s", [gflop / e for e in epochs], "GFLOP/s",
                         f"{gflop:.1f} GFLOP per epoch")
        usable = peak * min(ranks, CORES)  # the peak of the cores the ranks can use
        t.add(f"{label}: achieved / peak", [gflop / e / usable for e in epochs], "ratio",
              "target >= 0.70" if ranks == 1 else f"of {min(ranks, CORES)} x the 1-core peak ({CORES} cores)")
        t.add(f"{label}: peak RSS per rank", rss, "MiB", "largest rank, data set included")
        t.add(f"{label}: peak RSS, all ranks", rss_total, "MiB",
              "sum of the ranks' peaks" + ("; before one copy per machine: 4.3 GB; target <= 1024 MiB"
                                           if label == RSS_TARGET_ROW else ""))
        t.add(f"{label}: ledger overhead", ledger, "%", "rank 0's records x cost per record / epoch; target < 2 %")
    single = epoch_of[TRAININGS[0][0]]
    for label, ranks, _, _ in TRAININGS[1:]:
        if ranks <= CORES:  # beyond the cores, ranks share them: no speed-up to expect
            t.add(f"{label}: speed-up over 1 rank", [single / epoch_of[label]], "x",
                  f"{ranks} ranks on {CORES} cores; ideal {ranks}")
            t.add(f"{label}: speed-up outside collectives", [single / compute_of[label]], "x",
                  "the epoch less rank 0's time in collectives: what communication costs")


def edit_to_result(t: Table, build: str) -> None:
    """The student's loop: edit one file, see the part's result."""
    source = os.path.join(KIT, "student", "func_impl.cpp")
    with open(source) as f:
        # A bench killed mid-way (kill -9) may have left its edit: drop it.
        original = re.sub(r"(// bench edit \d+\n)+\Z", "", f.read())
    cmd = ["make", "--no-print-directory", "test-part7", f"BUILD={build}", f"PYTHON={PYTHON}"]
    run(cmd)  # up to date first
    edits = []
    try:
        for i in range(t.repeat):
            with open(source, "w") as f:
                f.write(original + f"// bench edit {i}\n")
            edits.append(run(cmd)[0])
    finally:
        with open(source, "w") as f:
            f.write(original)
    run(cmd)
    t.add("edit -> result (make test-part7)", edits, "s", "after editing student/func_impl.cpp; target ~0.7 s + compile")
    t.timed("  nothing to rebuild", cmd, "the same command, up to date")
    command = next(c for c in json.load(open(os.path.join(build, "compile_commands.json")))
                   if os.path.realpath(c["file"]) == os.path.realpath(source))
    compile_cmd = command.get("arguments") or ["sh", "-c", command["command"]]
    t.add("  compile func_impl.cpp alone", [run(compile_cmd, cwd=command["directory"])[0] for _ in range(t.repeat)],
          "s", "with the precompiled Eigen header (the rest: make, the static check, mpirun)")


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


RSS_TARGET_ROW = "train naive mp2 dp4"
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
    for row, sense, bound in TARGETS + ledger:
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
        trainings(t, build, samples, peak)
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
