"""Draws a trace (a trainer's --trace file, or a failing case's from
`make test-partN TRACE=1`) as a PNG timeline, for those who won't open a
browser; the same file opens in ui.perfetto.dev and chrome://tracing.

  python3 -m kit trace TRACE.json [--png OUT.png]

One row per rank. Wide pale bars are the phases of training (forward,
backward, optimizer, evaluate); the narrow dark bars on them are the
collectives. The top panel is the whole run; the bottom one zooms into one
training iteration, where a long collective on one rank next to a short one
on another is time spent waiting for the slower rank. Also prints, per rank,
the time in collectives and the bytes they moved.
"""
import argparse
import json
import os
import shutil
import subprocess
from typing import Dict, List, Optional, Tuple

PHASE_COLORS = {"forward": "#88ccee", "backward": "#44aa99", "optimizer": "#ddcc77", "evaluate": "#dddddd"}
OP_COLORS = {"allreduce": "#cc3311", "allgather": "#0077bb", "reduce_scatter": "#aa4499", "split": "#333333",
             "barrier": "#333333"}


def load(path: str) -> Tuple[List[Dict], Dict]:
    with open(path) as f:
        trace = json.load(f)
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"], trace.get("otherData", {})


def summary(events: List[Dict]) -> List[str]:
    ranks = sorted({e["pid"] for e in events})
    lines = [f"{'rank':>4} {'span ms':>10} {'collectives':>11} {'in coll. ms':>11} {'share':>6} {'MiB moved':>10}"]
    for r in ranks:
        mine = [e for e in events if e["pid"] == r]
        coll = [e for e in mine if e.get("cat") == "collective"]
        span = (max(e["ts"] + e["dur"] for e in mine) - min(e["ts"] for e in mine)) / 1000 if mine else 0.0
        in_coll = sum(e["dur"] for e in coll) / 1000
        moved = sum(e["args"].get("bytes", 0) for e in coll) / 2**20
        lines.append(f"{r:>4} {span:>10.1f} {len(coll):>11} {in_coll:>11.1f} {in_coll / max(span, 1e-9):>6.0%} "
                     f"{moved:>10.2f}")
    return lines


def one_iteration(events: List[Dict]) -> Optional[Tuple[float, float]]:
    """The window from one forward phase of rank 0 to its next (the third
    iteration, past the first iterations' start-up costs)."""
    starts = sorted(e["ts"] for e in events if e["pid"] == min(x["pid"] for x in events) and e["name"] == "forward")
    if len(starts) < 2:
        return None
    i = min(2, len(starts) - 2)
    return starts[i], starts[i + 1]


def boxes(events: List[Dict], window: Optional[Tuple[float, float]]) -> List[str]:
    """gnuplot rows: x_ms y x_low x_high y_low y_high color."""
    rows = []
    origin = window[0] if window else 0.0
    for e in sorted(events, key=lambda e: e.get("cat") == "collective"):  # phases first, collectives on top
        start, end = e["ts"], e["ts"] + e["dur"]
        if window and (end < window[0] or start > window[1]):
            continue
        collective = e.get("cat") == "collective"
        color = OP_COLORS.get(e["args"].get("op", ""), "#000000") if collective else PHASE_COLORS.get(e["name"], "#bbbbbb")
        half = 0.2 if collective else 0.4
        lo, hi = (start - origin) / 1000, (end - origin) / 1000
        rows.append(f"{(lo + hi) / 2:.4f} {e['pid']} {lo:.4f} {max(hi, lo + 1e-4):.4f} {e['pid'] - half} "
                    f"{e['pid'] + half} 0x{color[1:]}")
    return rows


def draw(events: List[Dict], png: str) -> Optional[str]:
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "gnuplot is not installed (sudo apt-get install gnuplot-nox); no PNG drawn"
    ranks = sorted({e["pid"] for e in events})
    window = one_iteration(events)
    base = os.path.splitext(png)[0]
    panels = [("whole run", boxes(events, None), None)]
    if window:
        panels.append(("one training iteration of rank 0 (a long collective beside a short one is waiting)",
                       boxes(events, window), (window[1] - window[0]) / 1000))
    data_files = []
    for i, (_, rows, _) in enumerate(panels):
        path = f"{base}.panel{i}.dat"
        with open(path, "w") as f:
            f.write("\n".join(rows) + "\n")
        data_files.append(path)
    keys = ", ".join(f'NaN with boxes lc rgb "{c}" title "{n}"' for n, c in list(PHASE_COLORS.items()) +
                     [(op, OP_COLORS[op]) for op in ("allreduce", "allgather", "reduce_scatter")] +
                     [("split, barrier", OP_COLORS["split"])])
    ytics = ", ".join(f'"rank {r}" {r}' for r in ranks)
    script = [f'set terminal pngcairo size 1400,{300 + 110 * len(ranks) * len(panels)} font ",11" noenhanced',
              f'set output "{png}"',
              f'set multiplot layout {len(panels)},1 title "Each rank\'s phases (wide) and collectives (narrow)"',
              f"set ytics ({ytics})", f"set yrange [{max(ranks) + 0.7}:-0.7]", "set style fill solid 1.0 noborder",
              "set key outside right top", "set grid xtics", "set xlabel \"milliseconds\""]
    for (title, _, width), path in zip(panels, data_files):
        script += [f'set title "{title}"', f"set xrange [0:{width:.4f}]" if width else "set autoscale x",
                   f'plot "{path}" using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable notitle, {keys}']
    script.append("unset multiplot")
    proc = subprocess.run([gnuplot], input="\n".join(script).encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for path in data_files:
        os.unlink(path)
    if proc.returncode != 0:
        return "gnuplot failed:\n" + proc.stdout.decode(errors="replace")
    return None


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m kit trace", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="a trace JSON file")
    ap.add_argument("--png", help="where to draw it (default: beside the trace, .png)")
    args = ap.parse_args(argv)
    try:
        events, other = load(args.trace)
    except (OSError, ValueError, KeyError) as e:
        print(f"kit trace: {args.trace} is not a trace the kit wrote: {e}")
        return 2
    if not events:
        print(f"kit trace: {args.trace} holds no spans")
        return 1
    print("\n".join(summary(events)))
    png = args.png or os.path.splitext(args.trace)[0] + ".png"
    problem = draw(events, png)
    print(f"kit trace: {problem}" if problem else f"timeline: {png}\ntrace:    {args.trace} (open it in ui.perfetto.dev)")
    return 1 if problem else 0
