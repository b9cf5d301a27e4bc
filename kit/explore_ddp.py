"""The explorer's bucket panel (Part 13, an extension part): `make explore`
runs ddp_train for a range of bucket caps on 2 and 4 ranks, and sets each
run's step time against its cap, with the allreduces a step makes, in a
table and a PNG.

  python3 -m kit explore          (the panel comes last, when the kit holds Part 13)

The model has more, smaller parameters than the assignment's (HIDDEN_LAYERS
hidden layers of WIDTH), so that the caps make a range of bucket counts,
and layers that compute long enough for an allreduce to hide behind them.
Each run trains on ten batches, then ddp_train measures 10 steps three
ways (a blocking allreduce per parameter; the buckets handed over after
backward; the buckets started as they fill) from the ledger's spans.
"""
import os
import statistics
from typing import Dict, List, Optional

from kit import gnuplot
from kit.explore import finish_panel, run_panel_program, series_files

RANKS = (2, 4)
CAPS_KIB = (0, 64, 4096, 8192, 16384)
HIDDEN_LAYERS, WIDTH = 4, 512
WAYS = ("per_parameter", "buckets_after", "buckets_at_once")


def run(build: str, impl: str, out: str, ranks: int, cap_kib: int, problems: List[str]) -> Optional[Dict]:
    cmd = ["-n", str(ranks), os.path.join(build, impl, "ddp_train"), "--bucket_kb", str(cap_kib),
           "--hidden_layers", str(HIDDEN_LAYERS), "--width", str(WIDTH), "--num_train_samples", "600",
           "--num_test_samples", "200", "--measure_steps", "10"]
    return run_panel_program(cmd, os.path.join(out, f"ddp-n{ranks}-cap{cap_kib}"), f"ddp {ranks} ranks, {cap_kib} KiB",
                             "ddp", problems)


def row_of(d: Dict, cap_kib: int) -> Dict:
    row = {"ranks": d["ranks"], "cap_kib": cap_kib, "buckets": len(d["plan"])}
    for way in WAYS:
        w = d["ways"][way]
        row[f"{way}_step_ms"] = w["step_seconds"] * 1e3
        row[f"{way}_allreduces"] = w["allreduces_per_step"]
        row[f"{way}_overlap"] = w["overlap_share"]
    return row


def chart(rows: List[Dict], png: str) -> Optional[str]:
    # No buckets is the same whatever the cap: each run measured it once; the line is their median.
    plain = {n: statistics.median([r["per_parameter_step_ms"] for r in rows if r["ranks"] == n] or [0]) for n in RANKS}
    # A log axis has no 0: "one bucket per parameter" sits at 16 KiB, left of the others.
    paths = series_files(rows, png, "ranks", RANKS, "cap_kib", lambda r: (
        f"{max(r['cap_kib'], 16)} {r['buckets_at_once_step_ms']} {r['buckets_after_step_ms']} "
        f"{plain[r['ranks']]} {r['buckets_at_once_allreduces']:.0f} {100 * r['buckets_at_once_overlap']:.1f}"))
    plots, counts = [], []
    for n, color in zip(RANKS, ("#0077bb", "#cc3311")):
        d = paths[n]
        plots += [f'"{d}" using 1:2 with linespoints lw 2 pt 7 lc rgb "{color}" title "{n} ranks, buckets as they fill"',
                  f'"{d}" using 1:3 with linespoints lw 1 dt 2 pt 6 lc rgb "{color}" title "{n} ranks, buckets after backward"',
                  f'"{d}" using 1:4 with lines lw 1 dt 3 lc rgb "{color}" title "{n} ranks, no buckets"',
                  f'"{d}" using 1:2:(sprintf($5 == 1 ? "%d call" : "%d calls", $5)) with labels offset 0,1 font ",9" tc rgb "{color}" '
                  f'notitle']
        counts.append(f'"{d}" using 1:6 with linespoints lw 2 pt 7 lc rgb "{color}" title "{n} ranks"')
    script = f"""
set terminal pngcairo size 1400,1000 font ",11" noenhanced
set output "{png}"
set multiplot layout 2,1 title "Gradient buckets: an MLP of {HIDDEN_LAYERS} hidden layers of {WIDTH}, one step a rank (forward, backward, averaging)"
set logscale x 2
set xtics ("one per\\nparameter" 16, 64, 4096, 8192, 16384)
set xrange [10:25000]
set xlabel "bucket cap, KiB"
set grid
set key outside right top
set yrange [0:*]
set ylabel "ms per step (slowest rank)"
set title "step time against the bucket cap; labels: the allreduces a step makes; no buckets: a blocking allreduce per parameter (the runs' median)"
plot {", ".join(plots)}
set yrange [0:100]
set ylabel "% of the allreduces' time"
set title "buckets started as they fill: the share of the allreduces' time that lay inside backward's computing (from the ledger's spans)"
plot {", ".join(counts)}
unset multiplot
"""
    return gnuplot.draw(script, paths.values())


def panel(build: str, impl: str, out: str) -> List[str]:
    """Runs, prints and draws the panel; returns the problems found (a failed run)."""
    print(f"\nGradient buckets (Part 13): {HIDDEN_LAYERS} hidden layers of {WIDTH}, on {' and '.join(map(str, RANKS))} "
          f"ranks, caps of {', '.join(map(str, CAPS_KIB))} KiB", flush=True)
    problems: List[str] = []
    reports = [(run(build, impl, out, n, cap, problems), cap) for n in RANKS for cap in CAPS_KIB]
    rows = [row_of(d, cap) for d, cap in reports if d is not None]
    print(f"  {'ranks':>5} {'cap KiB':>8} {'buckets':>8}   {'step ms: as they fill':>21} {'after backward':>15} "
          f"{'no buckets':>11}   {'overlapped':>10}")
    for r in rows:
        print(f"  {r['ranks']:>5} {r['cap_kib']:>8} {r['buckets']:>8}   {r['buckets_at_once_step_ms']:>21.2f} "
              f"{r['buckets_after_step_ms']:>15.2f} {r['per_parameter_step_ms']:>11.2f}   "
              f"{100 * r['buckets_at_once_overlap']:>9.1f}%")
    print("  no buckets: a blocking allreduce per parameter; overlapped: the share of the allreduces' time inside "
          "backward's computing when the buckets start as they fill")
    finish_panel(rows, out, "ddp", chart)
    return problems
