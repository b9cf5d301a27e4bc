"""The configuration explorer (Part 10, `make explore`): trains the MLP under
every parallel strategy the kit offers, then prints one table, writes it as
CSV and draws a PNG chart of communication volume and peak memory.

  python3 -m kit explore [--impl student|reference] [--full] [--out DIR]

By default each run uses the first 6000 training and 1000 test samples (one
short epoch); --full trains on all 60000. Every measured byte count is
checked against the ring formula of framework/include/comm.h.
"""
import argparse
import csv
import importlib
import json
import os
import subprocess
import time
from typing import Dict, List, NamedTuple, Optional

from kit import facts, gnuplot
from kit.facts import CLASSES, FEATURES, GLOBAL_BATCH, HIDDEN
from kit import parts as table
from kit.paths import KITRUN, build_dir


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
    return facts.ring_bytes(elements, n, passes)


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


LAYERS = ((FEATURES, HIDDEN), (HIDDEN, CLASSES))
PARAMETERS = sum(i * o + o for i, o in LAYERS)  # the model's parameter count (Psi)


def persistent_formula(c: Config) -> Dict[str, int]:
    """Rank 0's bytes that persist between iterations, by the formulas:
    data parallelism keeps every parameter and gradient; naive and Megatron
    keep 1/mp of the layers they shard (Megatron leaves FC2's bias whole);
    ZeRO-3 keeps 1/dp of the parameters, gradients and Adam's two moments,
    each tensor padded to a multiple of dp. Doubles, 8 bytes each."""
    if c.strategy == "zero3":
        shard = sum(-(-n // c.dp) for i, o in LAYERS for n in (i * o, o))
        return {"parameters": 8 * shard, "gradients": 8 * shard, "optimizer": 16 * shard}
    if c.strategy == "megatron":
        elements = FEATURES * HIDDEN // c.mp + HIDDEN // c.mp + HIDDEN // c.mp * CLASSES + CLASSES
    else:  # dp (mp 1) and naive: every layer's outputs split over mp
        elements = sum(i * (o // c.mp) + o // c.mp for i, o in LAYERS)
    return {"parameters": 8 * elements, "gradients": 8 * elements, "optimizer": 0}


# ---- from the toy model to real ones (the ZeRO paper's memory formulas) ----
# Mixed-precision Adam: 2 bytes of fp16 parameters and 2 of gradients per
# parameter, and K = 12 bytes of optimizer state (fp32 parameters, momentum,
# variance). Communication per iteration in parameters' worth of fp16:
# data parallelism's allreduce moves 2 Psi, ZeRO-3 moves 3 Psi (a gather in
# forward and in backward, a reduce-scatter of gradients).
SCALE_MODELS = [  # (name, parameters, data-parallel ranks)
    ("ZeRO paper example", 7_500_000_000, 64),
    ("GPT-2 small", 124_000_000, 8),
    ("GPT-2 medium", 355_000_000, 8),
    ("GPT-2 large", 774_000_000, 8),
    ("GPT-2 XL", 1_558_000_000, 16),
    (f"this MLP ({FEATURES}-{HIDDEN}-{CLASSES})", PARAMETERS, 4),
]
K = 12


def scale_row(name: str, psi: int, nd: int) -> Dict:
    gb = lambda b: b / 1e9  # noqa: E731 (decimal GB, as the paper)
    return {"model": name, "parameters": psi, "dp_ranks": nd, "bytes_per_parameter": 2, "K": K,
            "dp_gb": gb((2 + 2 + K) * psi), "os_gb": gb(2 * psi + 2 * psi + K * psi / nd),
            "os_g_gb": gb(2 * psi + (2 + K) * psi / nd), "os_g_p_gb": gb((2 + 2 + K) * psi / nd),
            "dp_comm_gb_per_iteration": gb(2 * 2 * psi), "zero3_comm_gb_per_iteration": gb(3 * 2 * psi)}


def write_scale(out: str) -> List[Dict]:
    rows = [scale_row(*m) for m in SCALE_MODELS]
    with open(os.path.join(out, "scale.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"\nPer-rank memory of model states (GB) for real models, by the ZeRO paper's formulas: fp16 parameters and "
          f"gradients (2 bytes each), K = {K} bytes of Adam state per parameter:")
    print(f"  {'model':<24} {'params':>8} {'ranks':>5} {'DP':>9} {'P_os':>9} {'P_os+g':>9} {'P_os+g+p':>9}"
          f"   comm/iteration DP, ZeRO-3")
    def gb(v: float) -> str:  # one decimal, as the paper, where that shows anything
        return f"{v:.1f}" if v >= 1 else f"{v:.3f}" if v >= 0.001 else f"{v:.1e}"

    def count(n: int) -> str:
        return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"

    for r in rows:
        print(f"  {r['model']:<24} {count(r['parameters']):>8} {r['dp_ranks']:>5} {gb(r['dp_gb']):>9} "
              f"{gb(r['os_gb']):>9} {gb(r['os_g_gb']):>9} {gb(r['os_g_p_gb']):>9}   "
              f"{gb(r['dp_comm_gb_per_iteration'])} GB, {gb(r['zero3_comm_gb_per_iteration'])} GB")
    return rows


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


# ---- what the extension parts' panels share (kit/explore_pipeline.py, kit/explore_ddp.py) ----

def run_panel_program(cmd: List[str], stem: str, what: str, key: str, problems: List[str]) -> Optional[Dict]:
    """Runs one program of a panel under kitrun (cmd: the program and its
    flags), its output in STEM.log and its report in STEM.json; returns the
    report's `key` member, or None after a line (and a problem) naming
    `what` as failed."""
    with open(stem + ".log", "w") as f:
        proc = subprocess.run([KITRUN] + cmd + ["--report", stem + ".json"], stdout=f, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or not os.path.exists(stem + ".json"):
        print(f"  {what}: failed (exit status {proc.returncode}); see {stem}.log")
        problems.append(f"{what} failed")
        return None
    with open(stem + ".json") as f:
        return json.load(f)[key]


def series_files(rows: List[Dict], png: str, group: str, groups, order: str, line) -> Dict:
    """A chart's data, one gnuplot file per value of rows' `group` member
    (PNG's base.VALUE.dat), its rows in the order of their `order` member,
    each written as line(row); returns value -> file."""
    paths = {}
    for value in groups:
        paths[value] = f"{os.path.splitext(png)[0]}.{value}.dat"
        with open(paths[value], "w") as f:
            for r in sorted((r for r in rows if r[group] == value), key=lambda r: r[order]):
                f.write(line(r) + "\n")
    return paths


def finish_panel(rows: List[Dict], out: str, name: str, draw) -> None:
    """Writes a panel's rows as OUT/NAME.csv (the columns that are no
    lists) and draws OUT/NAME.png with draw(rows, png), saying where."""
    with open(os.path.join(out, f"{name}.csv"), "w") as f:
        keys = [k for k in rows[0] if not isinstance(rows[0][k], list)] if rows else []
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join(str(r[k]) for k in keys) + "\n")
    png = os.path.join(out, f"{name}.png")
    problem = draw(rows, png) if rows else "no run finished; no chart drawn"
    print(f"explore: {problem}" if problem else f"{name} table: {os.path.join(out, name + '.csv')}\n"
                                                 f"{name} chart: {png}")


def chart(rows: List[Dict], out: str) -> Optional[str]:
    data = os.path.join(out, "explore.dat")
    with open(data, "w") as f:
        for r in rows:
            # A log axis can't show 0: a strategy that sends nothing on a communicator has no bar there.
            def sent(kib: float) -> str:
                return f"{kib:.3f}" if kib > 0 else "NaN"
            f.write('"{}" {} {} {:.4f} {:.4f} {:.4f} {:.4f} {:.4f} {:.4f}\n'.format(
                r["configuration"], sent(r["mp_kib_per_iteration"]), sent(r["dp_kib_per_iteration"]),
                r["parameters_kib"] / 1024, r["gradients_kib"] / 1024, r["optimizer_kib"] / 1024,
                r["transient_kib"] / 1024, r["compute_ms_per_iteration"], r["communication_ms_per_iteration"]))
    png = os.path.join(out, "explore.png")
    # Room above the tallest bar for its label, on the log axis.
    top = 4 * max([1.0] + [r[k] for r in rows for k in ("mp_kib_per_iteration", "dp_kib_per_iteration")])
    script = f"""
set terminal pngcairo size 1400,1350 font ",11" noenhanced
set output "{png}"
set multiplot layout 3,1 title "Parallel strategies of the {FEATURES}-{HIDDEN}-{CLASSES} MLP: rank 0, per training iteration"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set grid ytics
set yrange [0:*]
set xtics rotate by -30 scale 0
set key outside right top
set ylabel "KiB sent (log scale)"
set title "What it sends: KiB per iteration, on a log axis (model-parallel KiB beside data-parallel MiB); each bar labelled"
set style histogram clustered gap 1
set logscale y
set yrange [0.5:{top:.0f}]
plot "{data}" using 2:xtic(1) title "model parallel (mp_comm)" lc rgb "#4477aa", \\
     "" using 3 title "data parallel / ZeRO (dp_comm)" lc rgb "#ee8866", \\
     "" using ($0 - 1.0/6):2:(sprintf($2 < 10 ? "%.1f" : "%.0f", $2)) with labels offset 0,0.7 font ",9" notitle, \\
     "" using ($0 + 1.0/6):3:(sprintf($3 < 10 ? "%.1f" : "%.0f", $3)) with labels offset 0,0.7 font ",9" notitle
unset logscale y
set yrange [0:*]
set style histogram rowstacked
set ylabel "MiB"
set title "What it keeps: memory per rank; persistent (parameters, gradients, optimizer state), then the transient peak"
plot "{data}" using 4:xtic(1) title "parameters" lc rgb "#332288", \\
     "" using 5 title "gradients" lc rgb "#88ccee", \\
     "" using 6 title "optimizer state (Adam)" lc rgb "#117733", \\
     "" using 7 title "activations, buffers (transient)" lc rgb "#dddddd"
set ylabel "ms"
set title "What it costs: time per iteration, computing and inside collectives (waiting included)"
plot "{data}" using 8:xtic(1) title "compute" lc rgb "#44aa99", \\
     "" using 9 title "communication" lc rgb "#cc6677"
unset multiplot
"""
    problem = gnuplot.draw(script)  # explore.dat stays, beside the CSV
    if problem:
        print(f"explore: {problem}")
        return None
    return png


def check_rows(rows: List[Dict], accuracy: float, mismatches: int) -> List[str]:
    problems = [f"{r['configuration']}: accuracy {r['test_accuracy']:.4f} below {accuracy}"
                for r in rows if r["test_accuracy"] < accuracy]
    problems += [f"{r['configuration']}: share in collectives {r['collective_share']:.3f} above 1"
                 for r in rows if r["collective_share"] > 1]
    problems += [f"{r['configuration']}: kept memory differs from the formula" for r in rows
                 if not r["persistent_matches_formula"]]
    if mismatches:
        problems.append(f"{mismatches} configuration(s) moved other bytes than comm.h's formula")
    # ZeRO-3 keeps 1/dp of what data parallelism with the same Adam keeps
    # (parameters, gradients, two moments), up to the padding.
    for r in (r for r in rows if r["strategy"] == "zero3"):
        kept = 1024 * (r["parameters_kib"] + r["gradients_kib"] + r["optimizer_kib"])
        replica = 4 * 8 * PARAMETERS
        padding = 4 * 8 * len(LAYERS) * 2 * (r["dp_size"] - 1)
        if not replica / r["dp_size"] <= kept <= replica / r["dp_size"] + padding:
            problems.append(f"{r['configuration']}: keeps {kept:.0f} bytes, not 1/{r['dp_size']} of {replica}")
    scale = {m["model"]: m for m in (scale_row(*x) for x in SCALE_MODELS)}["ZeRO paper example"]
    paper = (scale["dp_gb"], scale["os_gb"], scale["os_g_gb"], scale["os_g_p_gb"])
    if [round(v, 1) for v in paper] != [120.0, 31.4, 16.6, 1.9]:
        problems.append(f"the ZeRO paper's example gives {paper}, not 120, 31.4, 16.6 and 1.9 GB")
    return problems


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
        training = sum(report["epoch_seconds"])
        iterations = max(1, report["iterations"])
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
            "parameters_kib": report["memory"]["parameters"] / 1024,
            "gradients_kib": report["memory"]["gradients"] / 1024,
            "optimizer_kib": report["memory"]["optimizer"] / 1024,
            "transient_kib": report["memory"]["transient"] / 1024,
            "persistent_matches_formula": all(report["memory"][k] == v for k, v in persistent_formula(c).items()),
            "seconds_per_epoch": training / max(1, len(report["epoch_seconds"])),
            # rank 0's time inside collectives during the same epochs (waiting included), so at most 1
            "collective_share": report["collective_seconds"] / max(1e-9, training),
            "compute_ms_per_iteration": 1000 * (training - report["collective_seconds"]) / iterations,
            "communication_ms_per_iteration": 1000 * report["collective_seconds"] / iterations,
            "test_accuracy": report["test_accuracy"],
        })

    pure_dp = {r["dp_size"]: r["dp_kib_per_iteration"] for r in rows if r["strategy"] == "dp"}
    print()
    header = f"{'configuration':<20} {'ranks':>5} {'MP KiB/it':>10} {'DP KiB/it':>10} {'formula':>10} " \
             f"{'kept KiB':>9} {'peak MiB':>8} {'RSS MiB':>8} {'s/epoch':>8} {'in coll.':>8} {'accuracy':>9}  note"
    print(header)
    print("-" * len(header))
    for r in rows:
        note = "" if r["matches_formula"] else "differs from the formula"
        if not r["persistent_matches_formula"]:
            note = (note + "; " if note else "") + "kept memory differs from the formula"
        if r["strategy"] == "zero3" and pure_dp.get(r["dp_size"]):
            note = (note + "; " if note else "") + f"{r['dp_kib_per_iteration'] / pure_dp[r['dp_size']]:.3f}x pure DP"
        print(f"{r['configuration']:<20} {r['ranks']:>5} {r['mp_kib_per_iteration']:>10.1f} "
              f"{r['dp_kib_per_iteration']:>10.1f} {r['formula_kib_per_iteration']:>10.1f} "
              f"{r['parameters_kib'] + r['gradients_kib'] + r['optimizer_kib']:>9.0f} {r['model_heap_mib']:>8.2f} "
              f"{r['peak_rss_mib']:>8.1f} "
              f"{r['seconds_per_epoch']:>8.2f} {r['collective_share']:>8.0%} {r['test_accuracy']:>9.4f}  {note}")
    csv_path = os.path.join(out, "explore.csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["configuration"])
        writer.writeheader()
        writer.writerows(rows)
    print("kept KiB: rank 0's parameters, gradients and optimizer state, which persist between iterations; "
          "peak MiB: the largest rank's heap peak for the model and its training")
    write_scale(out)
    png = chart(rows, out) if rows else None
    print(f"\n{len(rows)} of {len(CONFIGS)} runs finished in {time.monotonic() - started:.0f} s; "
          f"{len(rows) - mismatches} of {len(rows)} match comm.h's formula")
    print(f"table: {csv_path}\nscale: {os.path.join(out, 'scale.csv')}" + (f"\nchart: {png}" if png else ""))
    # The panels of the extension parts this copy holds (graded or not).
    panel_problems = []
    for part in table.built_parts():
        if part.adds.explore:
            panel_problems += importlib.import_module(f"kit.{part.adds.explore}").panel(args.build, args.impl, out)
    if len(rows) != len(CONFIGS):
        return 1
    if args.check is not None:
        problems = check_rows(rows, args.check, mismatches) + panel_problems
        for p in problems:
            print(f"check failed: {p}")
        if problems:
            return 1
        print(f"check passed: every configuration reached {args.check}, matched the byte and memory formulas, "
              "and spent at most its whole epoch in collectives")
    return 0

