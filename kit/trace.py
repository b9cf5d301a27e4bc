"""Draws a trace (a trainer's --trace file, or a failing case's from
`make test-partN TRACE=1`) as a PNG timeline, for those who won't open a
browser; the same file opens in ui.perfetto.dev and chrome://tracing.

  python3 -m kit trace TRACE.json [--png OUT.png] [--check-overlap]

One row per rank, on one clock (each host's steady clock, shifted by the
host's measured offset from rank 0's host). Wide pale bars are the phases of
training (forward, backward, optimizer, evaluate); the narrow bars on them
are the collectives, labelled with operation, reduction and element count
where there is room. A request (an iallreduce) runs on a thin lane below its
rank, from its start to the moment the kit saw it complete; a wait() for
one is a call on the rank's row. A collective ends on no rank before its last rank has
come: the thin front part of a bar is time that rank waited for the others,
and the rank without one is the one they waited for. A call the ranks
disagreed on is outlined in magenta (MISMATCH), and the call a rank still
waited in when the watchdog stopped its case in red (WAITING). A
point-to-point call (send, recv, sendrecv) is a narrow bar labelled with its
other end and tag, and an arrow runs from each message's send to its recv
(the flow events Perfetto draws too). The top
panel is the whole run; for a training, the bottom one zooms into one
iteration. Also prints, per rank, its collectives (an iallreduce counts as
one, its time blocked in wait() as time in collectives), the time in them and
the bytes they moved.

A case the watchdog stopped leaves one part per rank (CASE.rank<N>.json);
give the CASE.json path and the parts are merged into it first.

--check-overlap checks that one call's spans overlap on all its ranks (the
clock is shared), within 200 us plus the stated uncertainty; exit status 1
if not.
"""
import argparse
import glob
import json
import os
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

from kit import gnuplot

PHASE_COLORS = {"forward": "#88ccee", "backward": "#44aa99", "optimizer": "#ddcc77", "evaluate": "#dddddd",
                "finish": "#cc99bb", "compute": "#44aa99"}
OP_COLORS = {"allreduce": "#cc3311", "allgather": "#0077bb", "reduce_scatter": "#aa4499", "split": "#333333",
             "barrier": "#333333", "send": "#ee7733", "recv": "#882255", "sendrecv": "#997700",
             "iallreduce": "#ee3377", "wait": "#555555"}
REQUEST_LANE = 0.46  # a request runs beside the rank's calls and phases: on a thin lane below its row
ARROW_COLOR = "#444444"  # a point-to-point message, from its send to its recv
MISMATCH_COLOR, PENDING_COLOR = "#ee00cc", "#ff0000"
SLACK_US = 200.0
PLOT_PIXELS = 1000  # the plot area's width in the PNG, for how much time a label covers
LABELS_PER_RANK = 16  # more collectives than this in a panel, per rank: no labels but the marked calls'


def part_paths(path: str) -> List[str]:
    base = glob.escape(os.path.splitext(path)[0])
    return sorted(glob.glob(base + ".rank*.json"))


def merge_parts(path: str) -> bool:
    """Merges the per-rank parts a stopped case left (PATH minus .json,
    .rank<N>.json) into PATH, unless PATH is newer than all of them; the parts
    are removed. True if PATH was written."""
    parts = part_paths(path)
    if not parts:
        return False
    if os.path.exists(path) and os.path.getmtime(path) >= max(os.path.getmtime(p) for p in parts):
        return False
    ranks = []
    for p in parts:
        with open(p) as f:
            ranks.append(json.load(f))
    ranks.sort(key=lambda r: r["rank"])
    starts = [e["ts"] for r in ranks for e in r["events"]]
    origin = min(starts) if starts else 0.0
    events = []
    for r in ranks:
        events += [{"name": "process_name", "ph": "M", "pid": r["rank"], "args": {"name": f"rank {r['rank']}"}},
                   {"name": "process_sort_index", "ph": "M", "pid": r["rank"], "args": {"sort_index": r["rank"]}}]
        for e in r["events"]:
            events.append(dict(e, ts=e["ts"] - origin))
    other = {"ranks": len(ranks), "stopped_by_watchdog": True,
             "clock": ranks[0].get("clock_source", ""),
             "clock_uncertainty_us": max((r["clock"]["uncertainty_us"] for r in ranks), default=0.0),
             "clocks": [r["clock"] for r in ranks]}
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}, f)
        f.write("\n")
    for p in parts:
        os.unlink(p)
    return True


def load(path: str) -> Tuple[List[Dict], Dict]:
    """The spans, and the trace's otherData, which holds the messages too
    (otherData.messages, from the flow events: see messages)."""
    with open(path) as f:
        trace = json.load(f)
    other = dict(trace.get("otherData", {}), messages=messages(trace["traceEvents"]))
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"], other


def collective(e: Dict) -> bool:
    return e.get("cat") == "collective"


def point_to_point(e: Dict) -> bool:
    return e.get("cat") == "p2p"


def request(e: Dict) -> bool:
    """A request's span (iallreduce): from its start to the kit's seeing it complete."""
    return e.get("cat") == "request"


def communication(e: Dict) -> bool:
    """A call the rank was in: a collective, a point-to-point call, or a wait for a request."""
    return collective(e) or point_to_point(e) or e.get("cat") == "wait"


def messages(trace_events: List[Dict]) -> List[Tuple[int, float, int, float]]:
    """(from rank, sent at, to rank, arrived at) of each point-to-point
    message: a flow event "s" at its send and "f" at its recv share an id."""
    left = {e["id"]: e for e in trace_events if e.get("cat") == "p2p" and e.get("ph") == "s"}
    return [(left[e["id"]]["pid"], left[e["id"]]["ts"], e["pid"], e["ts"]) for e in trace_events
            if e.get("cat") == "p2p" and e.get("ph") == "f" and e["id"] in left]


def calls(events: List[Dict]) -> List[List[Dict]]:
    """The spans of each collective call, one per member rank that made it:
    a call is its communicator's members (args.ranks), its place in their
    sequence (args.seq), its operation and element count (which the ranks
    agree on, but in a call the agreement check refused). Two communicators of the same members may both be at the same
    place: their calls pair up in time order."""
    per_key: Dict[tuple, Dict[int, List[Dict]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        a = e.get("args", {})
        if (collective(e) or request(e)) and "ranks" in a:
            # The ranks of a refused call disagree on its operation or count, not on its place.
            what = ("refused",) if "mismatch" in a else (a["op"], a["elements"])
            per_key[(tuple(a["ranks"]), a["seq"]) + what][e["pid"]].append(e)
    out = []
    for per_rank in per_key.values():
        lists = [sorted(v, key=lambda e: e["ts"]) for v in per_rank.values()]
        for i in range(max(len(v) for v in lists)):
            out.append([v[i] for v in lists if i < len(v)])
    return out


def complete(call: List[Dict]) -> bool:
    return {e["pid"] for e in call} == set(call[0]["args"]["ranks"])


def overlap_problems(events: List[Dict], slack_us: float = SLACK_US) -> Tuple[int, List[str]]:
    """(calls checked, problems): every call that all its ranks made must
    have spans that overlap, within slack_us: no rank can leave a collective
    before every rank has entered it."""
    checked, problems = 0, []
    for call in calls(events):
        if not complete(call):
            continue
        checked += 1
        last_in = max(call, key=lambda e: e["ts"])
        first_out = min(call, key=lambda e: e["ts"] + e["dur"])
        gap = last_in["ts"] - (first_out["ts"] + first_out["dur"])
        if gap > slack_us:
            problems.append(f"{first_out['name']} #{first_out['args']['seq']} (ranks {first_out['args']['ranks']}): "
                            f"rank {first_out['pid']} left it {gap:.0f} us before rank {last_in['pid']} entered it")
    return checked, problems


def summary(events: List[Dict], other: Optional[Dict] = None) -> List[str]:
    """Per rank: its collectives, blocking and non-blocking alike (a request
    is one call, its bytes are moved bytes, and the time the rank was blocked
    on it, its wait()s, is time in collectives), then the marked calls and
    each rank's point-to-point calls and requests."""
    ranks = sorted({e["pid"] for e in events})
    lines = [f"{'rank':>4} {'span ms':>10} {'collectives':>11} {'in coll. ms':>11} {'share':>6} {'MiB moved':>10}"]
    for r in ranks:
        mine = [e for e in events if e["pid"] == r]
        coll = [e for e in mine if collective(e) or request(e)]
        span = (max(e["ts"] + e["dur"] for e in mine) - min(e["ts"] for e in mine)) / 1000 if mine else 0.0
        in_coll = sum(e["dur"] for e in mine if collective(e) or e.get("cat") == "wait") / 1000
        moved = sum(e["args"].get("bytes", 0) for e in coll) / 2**20
        lines.append(f"{r:>4} {span:>10.1f} {len(coll):>11} {in_coll:>11.1f} {in_coll / max(span, 1e-9):>6.0%} "
                     f"{moved:>10.2f}")
    if other and "clocks" in other:
        hosts = sorted({c["host"] for c in other["clocks"]})
        lines.append(f"clock: one per host ({len(hosts)} host{'s' if len(hosts) != 1 else ''}); offsets measured "
                     f"to within {other.get('clock_uncertainty_us', 0):.1f} us")
    for e in events:
        a = e.get("args", {})
        if "mismatch" in a:
            lines.append(f"rank {e['pid']}: MISMATCH at {label_of(e)} on {a['communicator']}: "
                         f"{a['mismatch'].splitlines()[0]}")
        if a.get("pending"):
            where = f"{label_of(e)} #{a['seq']}" if collective(e) else label_of(e)
            lines.append(f"rank {e['pid']}: WAITING in {where} on {a['communicator']} "
                         f"when the watchdog stopped the case")
    for r in ranks:
        p2p = [e for e in events if e["pid"] == r and point_to_point(e)]
        if p2p:
            lines.append(f"rank {r}: {len(p2p)} point-to-point call{'s' if len(p2p) != 1 else ''}, "
                         f"{sum(e['dur'] for e in p2p) / 1000:.1f} ms, "
                         f"{sum(e['args'].get('bytes', 0) for e in p2p) / 2**20:.2f} MiB sent")
        requests = [e for e in events if e["pid"] == r and request(e)]
        if requests:
            waited = sum(e["dur"] for e in events if e["pid"] == r and e.get("cat") == "wait") / 1000
            lines.append(f"rank {r}: {len(requests)} request{'s' if len(requests) != 1 else ''} (iallreduce), "
                         f"{sum(e['dur'] for e in requests) / 1000:.1f} ms in flight, {waited:.1f} ms of it "
                         f"blocked in wait(), {sum(e['args'].get('bytes', 0) for e in requests) / 2**20:.2f} MiB")
    return lines


def label_of(e: Dict) -> str:
    a = e["args"]
    if point_to_point(e):  # "send to 1 (tag 0) 8", "sendrecv to 2 (tag 1) from 0 (tag 1) 8"
        text = a["op"]
        if "dest" in a:
            text += f" to {a['dest']} (tag {a['send_tag']})"
        if "source" in a:
            text += f" from {a['source']} (tag {a['recv_tag']})"
        return text + f" {a['elements']}"
    text = a["op"]
    if a.get("reduction"):
        text += " " + a["reduction"]
    if a["op"] not in ("split", "barrier"):
        text += f" {a['elements']}"
    return text


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


def last_arrivals(events: List[Dict]) -> Dict[int, float]:
    """id(span) -> when the last rank of its call came (what it waited for
    until then); a call some rank never came to is waiting throughout."""
    out = {}
    for call in calls(events):
        last = max(e["ts"] for e in call) if complete(call) else float("inf")
        for e in call:
            out[id(e)] = last
    return out


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


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m kit trace", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="a trace JSON file")
    ap.add_argument("--png", help="where to draw it (default: beside the trace, .png)")
    ap.add_argument("--check-overlap", action="store_true",
                    help="check that each call's spans overlap across its ranks (exit 1 if not)")
    args = ap.parse_args(argv)
    merge_parts(args.trace)
    try:
        events, other = load(args.trace)
    except (OSError, ValueError, KeyError) as e:
        print(f"kit trace: {args.trace} is not a trace the kit wrote: {e}")
        return 2
    if not events:
        print(f"kit trace: {args.trace} holds no spans")
        return 1
    print("\n".join(summary(events, other)))
    status = 0
    if args.check_overlap:
        slack = SLACK_US + 2 * other.get("clock_uncertainty_us", 0.0)
        checked, problems = overlap_problems(events, slack)
        for p in problems:
            print(f"overlap: {p}")
        print(f"overlap: {checked - len(problems)} of {checked} calls overlap on all their ranks "
              f"(slack {slack:.0f} us)")
        status = 1 if problems or not checked else 0
    png = args.png or os.path.splitext(args.trace)[0] + ".png"
    problem = draw(events, png, other["messages"])
    print(f"kit trace: {problem}" if problem else f"timeline: {png}\ntrace:    {args.trace} (open it in ui.perfetto.dev)")
    return 1 if problem else status
