"""A trace drawn as a PNG timeline (gnuplot): one row per rank, its phases
as wide pale bars and its calls as narrow bars on them, the time a rank
waited for the others thin; requests on a lane below the row, messages as
arrows, the calls the ranks disagreed on or still waited in when the
watchdog stopped the case outlined. The whole run, or the window around a
stopped case's calls, and for a training one iteration zoomed in.
"""
import os
from typing import Dict, List, Optional, Tuple

from kit import gnuplot
from kit.trace_file import communication, label_of, last_arrivals, request

PHASE_COLORS = {"forward": "#88ccee", "backward": "#44aa99", "optimizer": "#ddcc77", "evaluate": "#dddddd",
                "finish": "#cc99bb", "compute": "#44aa99"}
OP_COLORS = {"allreduce": "#cc3311", "allgather": "#0077bb", "reduce_scatter": "#aa4499", "split": "#333333",
             "barrier": "#333333", "send": "#ee7733", "recv": "#882255", "sendrecv": "#997700",
             "iallreduce": "#ee3377", "wait": "#555555"}
REQUEST_LANE = 0.46  # a request runs beside the rank's calls and phases: on a thin lane below its row
ARROW_COLOR = "#444444"  # a point-to-point message, from its send to its recv
MISMATCH_COLOR, PENDING_COLOR = "#ee00cc", "#ff0000"
PLOT_PIXELS = 1000  # the plot area's width in the PNG, for how much time a label covers
LABELS_PER_RANK = 16  # more collectives than this in a panel, per rank: no labels but the marked calls'


def one_iteration(events: List[Dict]) -> Optional[Tuple[float, float]]:
    """The window of one iteration of rank 0, the third (past the first
    iterations' start-up costs): from the end of one optimizer step to the end
    of the next, or from one forward phase to the next where there is no
    optimizer. A pipeline stage runs one forward per micro-batch, so only the
    optimizer marks its steps."""
    first = min(x["pid"] for x in events)
    ends = sorted(e["ts"] + e["dur"] for e in events if e["pid"] == first and e["name"] == "optimizer")
    if len(ends) < 2:
        ends = sorted(e["ts"] for e in events if e["pid"] == first and e["name"] == "forward")
    if len(ends) < 2:
        return None
    i = min(2, len(ends) - 2)
    return ends[i], ends[i + 1]


def stopped_window(events: List[Dict]) -> Optional[Tuple[float, float, float]]:
    """For a case the watchdog stopped: (start, end, stopped at) of a window
    that shows every rank's calls, the calls still waiting running off its
    right edge; None if no call waits, or the calls would show anyway."""
    pending = [e for e in events if e.get("args", {}).get("pending")]
    if not pending:
        return None
    first = min(e["ts"] for e in events)
    stop = max(e["ts"] + e["dur"] for e in pending)
    seen = max([e["ts"] + e["dur"] for e in events if e not in pending] + [e["ts"] for e in pending])
    end = first + max(1.3 * (seen - first), 50.0)
    return (first, end, stop - first) if end < stop else None


def panel(events: List[Dict], window: Optional[Tuple[float, float]], arrivals: Dict[int, float],
          sent: List[Tuple[int, float, int, float]] = ()):
    """gnuplot rows for one panel: (boxes, outlines, labels, arrows). A box
    row is x_ms y x_low x_high y_low y_high color; an arrow row x y dx dy,
    from a message's send to its recv."""
    boxes, outlines, labels, arrows = [], [], [], []
    origin = window[0] if window else 0.0
    shown = [e for e in events if not window or (e["ts"] + e["dur"] >= window[0] and e["ts"] <= window[1])]
    ranks = {e["pid"] for e in shown} or {0}
    coll = [e for e in shown if communication(e)]
    label_all = len(coll) <= LABELS_PER_RANK * len(ranks)
    if window:
        width_ms = (window[1] - window[0]) / 1000
    else:
        width_ms = max((e["ts"] + e["dur"] for e in shown), default=1.0) / 1000 * 1.05
    ms_per_char = width_ms * 6.2 / PLOT_PIXELS
    lanes: Dict[Tuple[int, float], float] = {}  # (rank, y offset) -> where its last label ends, ms

    def place(x_ms: float, rank: int, text: str, offsets) -> None:
        """In the first lane where it clears the previous label; nowhere if none."""
        for dy in offsets:
            if lanes.get((rank, dy), -1e300) <= x_ms:
                lanes[(rank, dy)] = x_ms + (len(text) + 1) * ms_per_char
                labels.append(f'{x_ms:.4f} {rank + dy} "{text}"')
                return

    def box(lo_us, hi_us, y, half, color, rows=boxes):
        if window:  # a span the watchdog stopped may run far past the panel
            hi_us = min(hi_us, window[1])
        lo, hi = (lo_us - origin) / 1000, (hi_us - origin) / 1000
        hi = max(hi, lo + 1e-4)
        rows.append(f"{(lo + hi) / 2:.4f} {y} {lo:.4f} {hi:.4f} {y - half} {y + half} 0x{color[1:]}")

    for e in sorted(shown, key=lambda e: (communication(e), request(e))):  # phases first, calls and requests on top
        start, end = e["ts"], e["ts"] + e["dur"]
        if request(e):
            box(start, end, e["pid"] + REQUEST_LANE, 0.04, OP_COLORS["iallreduce"])
            continue
        if not communication(e):
            box(start, end, e["pid"], 0.4, PHASE_COLORS.get(e["name"], "#bbbbbb"))
            continue
        a = e["args"]
        color = OP_COLORS.get(a.get("op", ""), "#000000")
        waited_until = min(max(arrivals.get(id(e), start), start), end)
        if waited_until > start:
            box(start, waited_until, e["pid"], 0.06, color)
        if end > waited_until:
            box(waited_until, end, e["pid"], 0.2, color)
        if "mismatch" in a or a.get("pending"):
            box(start, end, e["pid"], 0.3, MISMATCH_COLOR if "mismatch" in a else PENDING_COLOR, outlines)
    # Marked calls first, below their bars, so that no other label takes their place.
    marked = [e for e in coll if "mismatch" in e["args"] or e["args"].get("pending")]
    for e in sorted(marked, key=lambda e: e["ts"]):
        mark = "MISMATCH: " if "mismatch" in e["args"] else f"WAITING when stopped, {e['dur'] / 1e6:.1f} s: "
        place((max(e["ts"], origin) - origin) / 1000, e["pid"], mark + label_of(e), (0.45,))
    if label_all:
        for e in sorted((e for e in coll if e not in marked), key=lambda e: e["ts"]):
            place((max(e["ts"], origin) - origin) / 1000, e["pid"], label_of(e), (-0.29, 0.31))
    for source, left, dest, arrived in sent:
        if not window or (arrived >= window[0] and left <= window[1]):
            x0, x1 = (left - origin) / 1000, (arrived - origin) / 1000
            arrows.append(f"{x0:.4f} {source} {x1 - x0:.4f} {dest - source}")
    return boxes, outlines, labels, arrows


def draw(events: List[Dict], png: str, sent: List[Tuple[int, float, int, float]] = ()) -> Optional[str]:
    """`sent`: the point-to-point messages (messages()), drawn as arrows."""
    ranks = sorted({e["pid"] for e in events})
    arrivals = last_arrivals(events)
    window = one_iteration(events)
    base = os.path.splitext(png)[0]
    stopped = stopped_window(events)
    if stopped:
        panels = [(f"every rank's calls until the watchdog stopped the case, {stopped[2] / 1e6:.1f} s after its "
                   f"first (outlined in red: still waiting)", panel(events, stopped[:2], arrivals, sent),
                   (stopped[1] - stopped[0]) / 1000)]
    else:
        panels = [("whole run" if window else "every rank's calls", panel(events, None, arrivals, sent), None)]
    if window:
        panels.append(("one training iteration of rank 0", panel(events, window, arrivals, sent),
                       (window[1] - window[0]) / 1000))
    data_files = []
    for i, (_, rows, _) in enumerate(panels):
        paths = []
        for kind, lines in zip(("boxes", "outlines", "labels", "arrows"), rows):
            path = f"{base}.panel{i}.{kind}.dat"
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            paths.append((path, bool(lines)))
        data_files.append(paths)
    present = {e["name"] for e in events} | {e["args"].get("op") for e in events if communication(e)}
    if any(request(e) for e in events):
        present.add("a request (iallreduce), its start to its completion, below its rank")
    keys = ", ".join(f'NaN with boxes lc rgb "{c}" title "{n}"' for n, c in
                     [(n, c) for n, c in PHASE_COLORS.items() if n in present] +
                     [(op, OP_COLORS[op]) for op in ("allreduce", "allgather", "reduce_scatter", "send", "recv",
                                                     "sendrecv", "wait") if op in present] +
                     [(k, OP_COLORS["iallreduce"]) for k in present if k.startswith("a request")] +
                     [("split, barrier", OP_COLORS["split"])] * bool({"split", "barrier"} & present))
    if sent:
        keys += f', NaN with vectors lc rgb "{ARROW_COLOR}" title "a message, send to recv"'
    keys += ', NaN with lines lw 4 lc rgb "#555555" title "thin: waiting for", NaN with lines lc rgb "#ffffff" title ' \
            '"the last rank to come"'
    marked = {k for e in events for k in ("mismatch", "pending") if e.get("args", {}).get(k)}
    if "mismatch" in marked:
        keys += f', NaN with boxes fs empty lw 3 lc rgb "{MISMATCH_COLOR}" title "ranks disagree"'
    if "pending" in marked:
        keys += f', NaN with boxes fs empty lw 3 lc rgb "{PENDING_COLOR}" title "waiting when stopped"'
    ytics = ", ".join(f'"rank {r}" {r}' for r in ranks)
    height = 300 + 130 * len(ranks) * len(panels)
    script = [f'set terminal pngcairo size 1400,{height} font ",11" noenhanced',
              f'set output "{png}"',
              f'set multiplot layout {len(panels)},1 title "Each rank\'s phases (wide) and communication calls '
              f'(narrow; labels: operation, reduction or other end, elements), on one clock"',
              f"set ytics ({ytics})", f"set yrange [{max(ranks) + 0.75}:-0.75]", "set style fill solid 1.0 noborder",
              "set key outside right top", "set grid xtics", "set xlabel \"milliseconds\""]
    for (title, _, width), paths in zip(panels, data_files):
        (boxes, _), (outlines, any_outline), (labels, any_label), (arrows, any_arrow) = paths
        plot = [f'"{boxes}" using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable notitle']
        if any_arrow:
            plot.append(f'"{arrows}" using 1:2:3:4 with vectors head filled size screen 0.008,20 lw 1.5 '
                        f'lc rgb "{ARROW_COLOR}" notitle')
        if any_outline:
            plot.append(f'"{outlines}" using 1:2:3:4:5:6:7 with boxxyerror fs empty border lw 3 lc rgb variable '
                        f'notitle')
        if any_label:
            plot.append(f'"{labels}" using 1:2:3 with labels left offset 0.2,0 font ",9" notitle')
        script += [f'set title "{title}"', f"set xrange [0:{width:.4f}]" if width else "set autoscale x",
                   "plot " + ", ".join(plot) + ", " + keys]
    script.append("unset multiplot")
    return gnuplot.draw("\n".join(script), [path for paths in data_files for path, _ in paths])
