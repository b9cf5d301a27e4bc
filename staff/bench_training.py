"""The training rows of `make bench` (staff/bench.py): each trainer's epoch,
accuracy, memory and speed-up, beside the original Python kit's figures,
and Part 12's pipeline (its bubble, accuracy and stash).
"""
import json
import os
import statistics
import tempfile
from typing import Dict, List, NamedTuple, Optional, Tuple

from kit.facts import CLASSES, FEATURES, HIDDEN
from kit.paths import KITRUN
from staff.bench_baseline import Baseline
from staff.bench_table import Table, run

CORES = os.cpu_count() or 1
RSS_TARGET_ROW = "train naive mp2 dp4"  # the row whose memory has a target (staff/bench.py, TARGETS)


class Training(NamedTuple):
    label: str
    ranks: int
    program: str
    flags: List[str]
    samples: Optional[int] = None  # training rows; None: the run's (60,000, or 8,000 with --quick)
    test_samples: int = 10000
    original: Optional[Tuple[float, float]] = None  # the original Python kit: (whole run in s, test accuracy)


TRAININGS = [
    Training("train mp1 dp1", 1, "unified_train", ["--mp_size", "1", "--dp_size", "1"], original=(6.20, 0.820)),
    Training("train naive mp2 dp4", 8, "unified_train", ["--mp_size", "2", "--dp_size", "4"], original=(17.2, 0.820)),
    Training("train megatron mp4 dp2", 8, "unified_train", ["--mp_size", "4", "--dp_size", "2", "--megatron-mp"],
             original=(12.4, 0.844)),
    Training("train dp2", 2, "unified_train", ["--mp_size", "1", "--dp_size", "2"]),
    Training("train dp4", 4, "unified_train", ["--mp_size", "1", "--dp_size", "4"]),
    Training("zero dp4", 4, "zero_dp_train", ["--dp_size", "4", "--batch_size", "100"], samples=8000,
             test_samples=1200, original=(2.40, 0.822)),
]
# The original's figures: the original Python kit (NumPy on one-thread
# OpenBLAS, Open MPI's default transports) on this machine class (2 cores),
# the same data, model, samples, epochs and batches; medians of 3 taken
# under some background load, so rough. Its suite took ORIGINAL_SUITE_SECONDS.
ORIGINAL_NOTE = "original Python kit on this machine class"
ACCURACY_SLACK = 0.005  # the kit's accuracy may be at most this far below the original's
SINGLE_RANK_SHARE = 1 / 2  # a training's whole run may take at most this share of the original's
MULTI_RANK_SHARE = 2 / 3


def fc_gflop(samples: int, din: int = FEATURES, hidden: int = HIDDEN, dout: int = CLASSES) -> float:
    """FC products of one epoch: forward and weight gradients of both layers,
    and FC2's input gradient (FC1's is never needed)."""
    return (2 * samples * (din * hidden + hidden * dout) * 2 + 2 * samples * hidden * dout) / 1e9



def train_once(kitrun: str, program: str, job: Training, rows: int) -> Tuple[float, Dict]:
    """One run of a training: its whole wall time, and its report."""
    with tempfile.TemporaryDirectory(prefix="kit-bench-") as tmp:
        report = os.path.join(tmp, "report.json")
        wall, _ = run([kitrun, "-n", str(job.ranks), program, *job.flags, "--num_train_samples", str(rows),
                       "--num_test_samples", str(job.test_samples), "--report", report])
        with open(report) as f:
            return wall, json.load(f)


def trainings(t: Table, build: str, samples: int, peak: float, baseline: Optional[Baseline] = None) -> None:
    epoch_of, compute_of = {}, {}
    for job in TRAININGS:
        label, ranks = job.label, job.ranks
        rows = job.samples or samples
        gflop = fc_gflop(rows)
        epochs, rss, rss_total, walls, collective, ledger, accuracy = [], [], [], [], [], [], []
        before: List[Tuple[float, Dict]] = []  # the baseline's runs, each just before one of ours
        for _ in range(t.repeat):
            if baseline:
                before.append(train_once(baseline.kitrun, baseline.program(job.program), job, rows))
            wall, r = train_once(KITRUN, os.path.join(build, "reference", job.program), job, rows)
            walls.append(wall)
            epochs.append(float(r["epoch_seconds"][0]))
            rss.append(float(r["peak_rss_bytes"]) / 2**20)
            rss_total.append(float(r["peak_rss_bytes_total"]) / 2**20)
            collective.append(float(r["collective_seconds"]))
            ledger.append(100 * r["ledger_calls"] * r["ledger_seconds_per_call"] / sum(r["epoch_seconds"]))
            accuracy.append(float(r["test_accuracy"]))
        # The original's figures apply only to the same work (not to --quick's shorter TP runs).
        original = job.original if rows == (job.samples or 60000) else None
        epoch_of[label] = t.add(f"{label}: epoch", epochs, "s", f"{ranks} rank{'s' if ranks > 1 else ''}, {rows} samples")
        wall_note = "+ mpirun, every rank loading the data set, the test"
        if original:
            share = SINGLE_RANK_SHARE if ranks == 1 else MULTI_RANK_SHARE
            wall_note = f"{ORIGINAL_NOTE}: {original[0]:.2f} s; target <= {share * original[0]:.2f}"
            t.targets.append((f"{label}: whole run", "<=", share * original[0]))
        t.add(f"{label}: whole run", walls, "s", wall_note)
        t.add(f"{label}: test accuracy", accuracy, "share", f"{job.test_samples} test rows" + (
            f"; {ORIGINAL_NOTE}: {original[1]:.3f}" if original else ""))
        if original:
            t.targets.append((f"{label}: test accuracy", ">=", original[1] - ACCURACY_SLACK))
        if ranks > 1:
            t.add(f"{label}: in collectives", [c / e for c, e in zip(collective, epochs)], "share",
                  "rank 0's share of the epoch inside collectives, waiting included")
        compute_of[label] = statistics.median(e - c for e, c in zip(epochs, collective))
        t.add(f"{label}: samples/s", [rows / e for e in epochs], "1/s")
        t.add(f"{label}: FC GFLOP/s", [gflop / e for e in epochs], "GFLOP/s", f"{gflop:.1f} GFLOP per epoch")
        usable = peak * min(ranks, CORES)  # the peak of the cores the ranks can use
        t.add(f"{label}: achieved / peak", [gflop / e / usable for e in epochs], "ratio",
              "of the machine's GEMM peak; target >= 0.70" if ranks == 1
              else f"of {min(ranks, CORES)} x the 1-core peak ({CORES} cores)")
        t.add(f"{label}: peak RSS per rank", rss, "MiB", "largest rank, data set included")
        t.add(f"{label}: peak RSS, all ranks", rss_total, "MiB",
              "sum of the ranks' peaks" + ("; before one copy per machine: 4.3 GB; target <= 1024 MiB"
                                           if label == RSS_TARGET_ROW else ""))
        t.add(f"{label}: ledger overhead", ledger, "%", "rank 0's records x cost per record / epoch; target < 2 %")
        if baseline:
            side_by_side(t, label, baseline.rev, before, walls, epochs, accuracy)
    single = epoch_of[TRAININGS[0].label]
    for job in TRAININGS[1:]:
        if job.ranks <= CORES and job.samples is None:  # beyond the cores, ranks share them: no speed-up to expect
            t.add(f"{job.label}: speed-up over 1 rank", [single / epoch_of[job.label]], "x",
                  f"{job.ranks} ranks on {CORES} cores; ideal {job.ranks}")
            t.add(f"{job.label}: speed-up outside collectives", [single / compute_of[job.label]], "x",
                  "the epoch less rank 0's time in collectives: what communication costs")


def side_by_side(t: Table, label: str, rev: str, before: List[Tuple[float, Dict]], walls: List[float],
                 epochs: List[float], accuracy: List[float]) -> None:
    """The baseline's rows beside this copy's, from runs taken in turns: the
    ratios of medians, and the target that this copy is no slower."""
    t.add(f"{label}: whole run, {rev}", [w for w, _ in before], "s", "the baseline, run in turn with this copy")
    t.add(f"{label}: epoch, {rev}", [float(r["epoch_seconds"][0]) for _, r in before], "s")
    ratio = statistics.median(walls) / statistics.median(w for w, _ in before)
    t.add(f"{label}: whole run / {rev}'s", [ratio], "ratio", "target <= 1.0 (no slower than the baseline)")
    t.targets.append((f"{label}: whole run / {rev}'s", "<=", 1.0))
    epoch_ratio = statistics.median(epochs) / statistics.median(float(r["epoch_seconds"][0]) for _, r in before)
    t.add(f"{label}: epoch / {rev}'s", [epoch_ratio], "ratio")
    theirs = statistics.median(float(r["test_accuracy"]) for _, r in before)
    t.add(f"{label}: test accuracy - {rev}'s", [statistics.median(accuracy) - theirs], "share", "target 0: the same model")


def pipeline_report(build: str, stages: int, schedule: str, samples: int) -> Dict:
    with tempfile.TemporaryDirectory(prefix="kit-bench-") as tmp:
        report = os.path.join(tmp, "report.json")
        run([KITRUN, "-n", str(stages), os.path.join(build, "reference", "pipeline_train"), "--micro_batches", "8",
             "--schedule", schedule, "--num_train_samples", str(samples), "--report", report])
        with open(report) as f:
            return json.load(f)


def pipeline(t: Table, build: str, samples: int) -> None:
    """Part 12's trainer (an extension part): the bubble of equal stages on
    K = 2 (no stage waits for a core here) against (K-1)/(M+K-1); then, on
    K = 4, the accuracy of one epoch and stage 0's peak stash, 1F1B's
    against GPipe's."""
    for schedule in ("gpipe", "1f1b"):
        label = f"pipeline K2 M8 {schedule}"
        reports = [pipeline_report(build, 2, schedule, 6000)["pipeline"] for _ in range(t.repeat)]
        formula = reports[0]["bubble_formula"]
        t.add(f"{label}: bubble, equal stages", [r["bubble_equal_stages"] for r in reports], "share",
              f"the busiest stage's idle share; (K-1)/(M+K-1) = {formula:.3f}")
        t.add(f"{label}: off the formula", [abs(r["bubble_equal_stages"] - formula) for r in reports], "share",
              "target <= 0.05")
        t.targets.append((f"{label}: off the formula", "<=", 0.05))
        t.add(f"{label}: bubble, this MLP", [r["bubble_measured"] for r in reports], "share",
              f"stage 0 ({FEATURES}x{HIDDEN}) sets the pace; played out with free messages: "
              f"{statistics.median(r['bubble_played'] for r in reports):.3f}")
    for schedule in ("gpipe", "1f1b"):
        label = f"pipeline K4 M8 {schedule}"
        reports = [pipeline_report(build, 4, schedule, samples) for _ in range(t.repeat)]
        t.add(f"{label}: test accuracy", [r["test_accuracy"] for r in reports], "",
              f"{samples} samples" + ("; target >= 0.80" if samples == 60000 else ""))
        if samples == 60000:
            t.targets.append((f"{label}: test accuracy", ">=", 0.80))
        if schedule == "1f1b":
            stash = [r["pipeline"]["stash"] for r in reports]
            shares = [s["1f1b"]["bytes"][0] / s["gpipe"]["bytes"][0] for s in stash]
            t.add(f"{label}: stage 0's stash, of GPipe's", shares, "share", "target <= K/M = 0.5")
            t.targets.append((f"{label}: stage 0's stash, of GPipe's", "<=", 0.5))
