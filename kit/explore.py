"""The configuration explorer (Part 10, `make explore`): trains the MLP under
every parallel strategy the kit offers, then prints one table, writes it as
CSV and draws a PNG chart of communication volume and peak memory.

  python3 -m kit explore [--impl student|reference] [--full] [--out DIR]

By default each run uses the first 6000 training and 1000 test samples (one
short epoch); --full trains on all 60000. Every measured byte count is
checked against the ring formula of framework/comm.h.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import time
from typing import Dict, List, NamedTuple, Optional

from kit.paths import KITRUN, build_dir

FEATURES, HIDDEN, CLASSES = 784, 256, 10
GLOBAL_BATCH = 60


class Config(NamedTuple):
    strategy: str  # dp, naive, megatron, zero3
    mp: int
    dp: int

    @property
    def ranks(self) -> int:
        return self.mp * self.dp

    @property
    def name(self) -> str:
        if self.strategy == "zero3":
            return f"ZeRO-3 dp{self.dp}"
        if self.strategy == "dp":
            return f"pure DP dp{self.dp}"
        return f"{'Megatron' if self.strategy == 'megatron' else 'naive'} mp{self.mp} dp{self.dp}"


CONFIGS = [Config("dp", 1, d) for d in (1, 2, 4, 8)] + \
          [Config("naive", 2, d) for d in (1, 2, 4)] + \
          [Config("megatron", m, d) for m, d in ((2, 1), (4, 1), (8, 1), (2, 4), (4, 2))] + \
          [Config("zero3", 1, d) for d in (2, 4, 8)]


def ring(n: int, elements: int, passes: int) -> int:
    """comm.h's per-rank bytes of one call, with its integer arithmetic."""
    return passes * (n - 1) * elements * 8 // n


def batches(rows: int, local_batch: int) -> List[int]:
    full, rest = divmod(rows, local_batch)
    return [local_batch] * full + ([rest] if rest else [])


def expected_bytes(c: Config, train_rows: int) -> Dict[str, float]:
    """Per-iteration bytes of rank 0 by the formula, for the reference's algorithm."""
    usable = train_rows // c.dp * c.dp
    sizes = batches(usable // c.dp, GLOBAL_BATCH // c.dp)
    mp_total = dp_total = 0
    for r in sizes:
        if c.strategy == "zero3":
            for n_in, n_out in ((FEATURES, HIDDEN), (HIDDEN, CLASSES)):
                s_w, s_b = -(-n_in * n_out // c.dp), -(-n_out // c.dp)
                # W gathered in forward and again in backward, its gradient reduce-scattered;
                # b gathered in forward only, its gradient reduce-scattered.
                dp_total += 3 * ring(c.dp, s_w * c.dp, 1) + 2 * ring(c.dp, s_b * c.dp, 1)
            continue
        if c.strategy == "megatron":
            mp_total += ring(c.mp, r * CLASSES, 2)
            grads = [FEATURES * HIDDEN // c.mp, HIDDEN // c.mp, HIDDEN // c.mp * CLASSES, CLASSES]
        else:
            mp_total += ring(c.mp, r * HIDDEN, 1) + ring(c.mp, r * CLASSES, 1) + ring(c.mp, r * HIDDEN, 1)
            grads = [FEATURES * HIDDEN // c.mp, HIDDEN // c.mp, HIDDEN * CLASSES // c.mp, CLASSES // c.mp]
        dp_total += sum(ring(c.dp, g, 2) for g in grads)
    return {"mp": mp_total / len(sizes), "dp": dp_total / len(sizes)}


def run(c: Config, build: str, impl: str, out: str, train_rows: int, test_rows: int) -> Optional[Dict]:
    report = os.path.join(out, f"{c.strategy}-mp{c.mp}-dp{c.dp}.json")
    if c.strategy == "zero3":
        cmd = [os.path.join(build, impl, "zero_dp_train"), "--dp_size", str(c.dp)]
    else:
        cmd = [os.path.join(build, impl, "unified_train"), "--mp_size", str(c.mp), "--dp_size", str(c.dp)]
        if c.strategy == "megatron":
            cmd.append("--megatron-mp")
    cmd += ["--num_train_samples", str(train_rows), "--num_test_samples", str(test_rows), "--report", report]
    log = os.path.join(out, f"{c.strategy}-mp{c.mp}-dp{c.dp}.log")
    with open(log, "w") as f:
        proc = subprocess.run([KITRUN, "-n", str(c.ranks)] + cmd, stdout=f, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or not os.path.exists(report):
        with open(log) as f:
            tail = f.read().strip().splitlines()[-3:]
        print(f"  {c.name}: failed (exit status {proc.returncode}); see {log}")
        for line in tail:
            print(f"      {line}")
        return None
    with open(report) as f:
        return json.load(f)


def chart(rows: List[Dict], out: str) -> Optional[str]:
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("explore: gnuplot is not installed (sudo apt-get install gnuplot-nox); no chart drawn")
        return None
    data = os.path.join(out, "explore.dat")
    with open(data, "w") as f:
        for r in rows:
            f.write('"{}" {:.3f} {:.3f} {:.3f}\n'.format(r["configuration"], r["mp_kib_per_iteration"],
                                                        r["dp_kib_per_iteration"], r["model_heap_mib"]))
    png = os.path.join(out, "explore.png")
    script = f"""
set terminal pngcairo size 1400,900 font ",11" noenhanced
set output "{png}"
set multiplot layout 2,1 title "Parallel strategies of the 784-256-10 MLP (per rank, rank 0)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set grid ytics
set xtics rotate by -30 scale 0
set key top left
set ylabel "KiB sent per iteration"
set title "Communication volume per training iteration"
plot "{data}" using 2:xtic(1) title "model parallel (mp_comm)" lc rgb "#4477aa", \\
     "" using 3 title "data parallel / ZeRO (dp_comm)" lc rgb "#ee8866"
set style histogram clustered
set ylabel "MiB"
set title "Peak heap of the largest rank for the model and its training (data set excluded)"
plot "{data}" using 4:xtic(1) title "model memory" lc rgb "#44aa99"
unset multiplot
"""
    proc = subprocess.run([gnuplot], input=script.encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        print("explore: gnuplot failed:\n" + proc.stdout.decode(errors="replace"))
        return None
    return png


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m kit explore", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", choices=["student", "reference"], default="student")
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    ap.add_argument("--full", action="store_true", help="train on all 60000 samples, test on all 10000")
    ap.add_argument("--out", help="where to write the table, the chart and the logs (default BUILD/explore)")
    ap.add_argument("--check", type=float, metavar="ACCURACY",
                    help="exit 1 unless every run reaches this test accuracy and matches the formula (the kit's CI)")
    args = ap.parse_args(argv)
    args.build = build_dir(args.build)
    out = args.out or os.path.join(args.build, "explore")
    os.makedirs(out, exist_ok=True)
    train_rows, test_rows = (60000, 10000) if args.full else (6000, 1000)

    print(f"explore: each run trains one epoch on the first {train_rows:,} of the 60,000 training samples and tests "
          f"on {test_rows:,}" + ("" if args.full else " (a short run, so accuracy is lower than make train's; "
                                                      "FULL=1 for whole epochs)"), flush=True)
    rows: List[Dict] = []
    mismatches = 0
    started = time.monotonic()
    for c in CONFIGS:
        print(f"  running {c.name} on {c.ranks} rank{'s' if c.ranks > 1 else ''} ...", flush=True)
        report = run(c, args.build, args.impl, out, train_rows, test_rows)
        if report is None:
            continue
        expected = expected_bytes(c, report["train_rows"])
        match = abs(expected["mp"] - report["mp_bytes_per_iteration"]) < 0.5 and \
            abs(expected["dp"] - report["dp_bytes_per_iteration"]) < 0.5
        mismatches += not match
        rows.append({
            "configuration": c.name, "strategy": c.strategy, "mp_size": c.mp, "dp_size": c.dp, "ranks": c.ranks,
            "mp_kib_per_iteration": report["mp_bytes_per_iteration"] / 1024,
            "dp_kib_per_iteration": report["dp_bytes_per_iteration"] / 1024,
            "formula_kib_per_iteration": (expected["mp"] + expected["dp"]) / 1024,
            "matches_formula": match,
            "model_heap_mib": report["model_heap_bytes"] / 2**20,
            "peak_rss_mib": report["peak_rss_bytes"] / 2**20,
            "seconds_per_epoch": sum(report["epoch_seconds"]) / max(1, len(report["epoch_seconds"])),
            # rank 0's share of the training time inside collectives, waiting included
            "collective_share": report["collective_seconds"] / max(1e-9, sum(report["epoch_seconds"])),
            "test_accuracy": report["test_accuracy"],
        })

    pure_dp = {r["dp_size"]: r["dp_kib_per_iteration"] for r in rows if r["strategy"] == "dp"}
    print()
    header = f"{'configuration':<20} {'ranks':>5} {'MP KiB/it':>10} {'DP KiB/it':>10} {'formula':>10} " \
             f"{'model MiB':>9} {'RSS MiB':>8} {'s/epoch':>8} {'in coll.':>8} {'accuracy':>9}  note"
    print(header)
    print("-" * len(header))
    for r in rows:
        note = "" if r["matches_formula"] else "differs from the formula"
        if r["strategy"] == "zero3" and pure_dp.get(r["dp_size"]):
            note = (note + "; " if note else "") + f"{r['dp_kib_per_iteration'] / pure_dp[r['dp_size']]:.3f}x pure DP"
        print(f"{r['configuration']:<20} {r['ranks']:>5} {r['mp_kib_per_iteration']:>10.1f} "
              f"{r['dp_kib_per_iteration']:>10.1f} {r['formula_kib_per_iteration']:>10.1f} {r['model_heap_mib']:>9.2f} "
              f"{r['peak_rss_mib']:>8.1f} "
              f"{r['seconds_per_epoch']:>8.2f} {r['collective_share']:>8.0%} {r['test_accuracy']:>9.4f}  {note}")
    csv_path = os.path.join(out, "explore.csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["configuration"])
        writer.writeheader()
        writer.writerows(rows)
    png = chart(rows, out) if rows else None
    print(f"\n{len(rows)} of {len(CONFIGS)} runs finished in {time.monotonic() - started:.0f} s; "
          f"{len(rows) - mismatches} of {len(rows)} match comm.h's formula")
    print(f"table: {csv_path}" + (f"\nchart: {png}" if png else ""))
    if len(rows) != len(CONFIGS):
        return 1
    if args.check is not None:
        weak = [r["configuration"] for r in rows if r["test_accuracy"] < args.check]
        if weak or mismatches:
            print(f"check failed: below {args.check}: {', '.join(weak) or 'none'}; formula mismatches: {mismatches}")
            return 1
        print(f"check passed: every configuration reached {args.check} and matched the formula")
    return 0

