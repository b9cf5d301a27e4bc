"""A trace file of the kit's (a trainer's --trace, a failing case's from
`make test-partN TRACE=1`) read: the per-rank parts a stopped case left,
merged; its spans, sorted into phases, collectives, point-to-point calls
and requests; the calls they make up across ranks, and whether each call's
spans overlap on all its ranks, as one shared clock says they must.
`python3 -m kit trace` (kit/trace.py) prints and draws it.
"""
import glob
import json
import os
from collections import defaultdict
from typing import Dict, List, Tuple

SLACK_US = 200.0


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


def last_arrivals(events: List[Dict]) -> Dict[int, float]:
    """id(span) -> when the last rank of its call came (what it waited for
    until then); a call some rank never came to is waiting throughout."""
    out = {}
    for call in calls(events):
        last = max(e["ts"] for e in call) if complete(call) else float("inf")
        for e in call:
            out[id(e)] = last
    return out
