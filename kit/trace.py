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
import os
from typing import Dict, List, Optional

from kit.timeline import draw
from kit.trace_file import (SLACK_US, collective, label_of, load, merge_parts, overlap_problems, point_to_point,
                            request)


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
