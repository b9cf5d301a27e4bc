"""Diagnosis of a case that ended its job: from the roll-call records the
ranks of a stopped case wrote (tests/harness/records.h: each rank's state,
and its call as data), what each rank was doing and, for ranks waiting in
point-to-point calls, what they wait for: a tag mismatch, a cycle, a
message nobody takes. Functions of their arguments and the parts table
(roll_call reads KIT_TIME_SCALE only when not given the limit's scale):
the answers in, the text out; staff/tests/test_roll_call.py tests them.
"""
from typing import Dict, List, Optional

from kit import facts
from kit import limits as kit_limits
from kit import parts as table
from kit import records as rec


def rank_label(ranks: List[int]) -> str:
    """"rank 2", "ranks 0,3": how the kit names ranks, in Python (C++: rank_list, comm_runtime.h)."""
    return ("rank " if len(ranks) == 1 else "ranks ") + ",".join(map(str, ranks))


def roll_call(case: str, answers: Dict[int, Dict], limit_scale: Optional[float] = None, limits=None) -> str:
    """The roll-call of a case its watchdog stopped: the time limit it ran
    past (on this machine, `limits`, kit/calibration.py, and what it comes
    from), then what each rank was doing, in one sentence when every rank
    did the same, else ranks with the same state on one line, then what
    the ranks waiting in point-to-point calls wait for (point_to_point_diagnosis):
        the case did not finish within its time limit of 5 s; what each rank was doing:
          rank 0:      waiting in allreduce #3 on dp_comm (2 elements) in collect_weight_grad
          ranks 1,2,3: finished the case after 2 collectives on dp_comm"""
    run = next((r for r in table.all_runs() if table.matches(r.filter, case)), None)
    ranks = run.ranks if run else max(answers) + 1
    states: Dict[str, List[int]] = {}
    for rank in range(ranks):
        state = answers[rank]["state"] if rank in answers else "did not answer (stopped or killed before it could)"
        states.setdefault(state, []).append(rank)
    seconds = max(a["seconds"] for a in answers.values())
    head = "the case did not finish"
    if run:
        base = limits.case_seconds(run) if limits is not None else run.case_seconds
        allowed = base * limit_scale if limit_scale is not None else kit_limits.limit(base)
        head += f" within its time limit of {allowed:.3g} s"
        if limits is not None:
            head += f" ({limits.case_basis(run)})"
        if seconds > 1.2 * allowed:  # the watchdog stretches the limit on a busy machine
            head += f" (stretched to {seconds:.1f} s: the machine was busy)"
    else:
        head += f" (stopped after {seconds:.1f} s)"
    diagnosis = point_to_point_diagnosis(answers)
    if len(states) == 1 and not diagnosis:
        (state, who), = states.items()
        return f"{head}; {f'all {len(who)} ranks' if len(who) > 1 else rank_label(who)}: {state}"
    width = max(len(rank_label(r)) for r in states.values()) + 1
    lines = [f"{head}; what each rank was doing:"]
    lines += [f"  {(rank_label(r) + ':').ljust(width)} {state}" for state, r in states.items()]
    return "\n".join(lines + diagnosis)


def stalled(case: str, answers: Dict[int, Dict]) -> bool:
    """Whether the case was stopped while MPI still owed its ranks a call:
    every rank of the case waiting in a collective call of one communicator
    (the same group on every rank), those at its earliest call all in the
    same call (its number there, operation and elements), the rest in later
    calls. A rank in a later call has finished the earliest, which none can
    before every rank has entered it; so every rank has entered it, and MPI
    finishes it whatever the code under test does. A case stopped there was
    stopped by a stalled host, never by a hang of its code. Only the driven
    mode's roll-call says so (each rank's call from its side's page, which
    the student's process never holds); the usual mode's writes -1 for the
    call's number and group, and is never a stall."""
    run = next((r for r in table.all_runs() if table.matches(r.filter, case)), None)
    if run is None or set(answers) != set(range(run.ranks)):
        return False
    waits = [answer.get("wait") for answer in answers.values() if answer.get("phase") == "running"]
    if len(waits) != len(answers) or not all(w and w["op"] in facts.COLLECTIVES for w in waits):
        return False
    if len({w["group"] for w in waits}) != 1 or waits[0]["group"] < 1 or min(w["seq"] for w in waits) < 1:
        return False
    earliest = min(w["seq"] for w in waits)
    return len({(w["op"], w["count"]) for w in waits if w["seq"] == earliest}) == 1


def _p2p(answer: Optional[Dict]) -> Optional[Dict]:
    wait = answer.get("wait") if answer else None
    return wait if wait and wait["op"] in rec.POINT_TO_POINT else None


def doing(rank: int, answer: Optional[Dict]) -> str:
    """What a rank was doing, from its roll-call record's data (never its text)."""
    if answer is None:
        return f"rank {rank} did not answer the roll-call"
    if answer.get("phase") == "finished":
        return f"rank {rank} finished the case"
    if answer.get("phase") == "failed":
        return f"rank {rank} failed (above)"
    wait = answer.get("wait")
    if _p2p(answer):
        parts = ([f"sends to rank {wait['to']} (tag {wait['send_tag']})"] if wait["to"] >= 0 else []) + \
                ([f"waits for rank {wait['from']} (tag {wait['recv_tag']})"] if wait["from"] >= 0 else [])
        return f"rank {rank} " + " and ".join(parts)
    if wait and wait["op"] == "wait":
        return f"rank {rank} waits for a request of its own to complete"
    if wait:
        return f"rank {rank} waits in {wait['op']}, a collective"
    return f"rank {rank} is still running, in no call of the communicator"


def point_to_point_diagnosis(answers: Dict[int, Dict]) -> List[str]:
    """What the ranks that wait in point-to-point calls wait for, from the
    roll-call's records (each rank's call as data, and where it was in the
    case), in this order: a message whose two ends differ only in the tag
    ("rank 1 sends to rank 0 with tag 1, but rank 0 waits for tag 0 from
    rank 1: the tags differ"); a cycle of ranks each waiting for the next
    (waiting_cycle); then each message of a rank outside the cycle that
    nobody takes, naming what its other end does instead (finished the
    case, waits for another rank, waits in a collective, ...)."""
    ends = {rank: w for rank, w in ((r, _p2p(a)) for r, a in answers.items()) if w}
    lines, mismatched = [], set()
    for rank, w in sorted(ends.items()):
        peer = ends.get(w["to"])
        if w["to"] >= 0 and peer and peer["from"] == rank and peer["recv_tag"] != w["send_tag"]:
            lines.append(f"  rank {rank} sends to rank {w['to']} with tag {w['send_tag']}, but rank {w['to']} waits "
                         f"for tag {peer['recv_tag']} from rank {rank}: the tags differ")
            mismatched.add((rank, w["to"]))
    cycle, members = waiting_cycle(ends, mismatched)
    if cycle:
        lines.append(cycle)
    for rank, w in sorted(ends.items()):
        if rank in members:
            continue
        sender = ends.get(w["to"])
        if w["to"] >= 0 and (rank, w["to"]) not in mismatched and not (sender and sender["from"] == rank):
            lines.append(f"  rank {rank} sends to rank {w['to']} (tag {w['send_tag']}), which nobody receives: "
                         f"{doing(w['to'], answers.get(w['to']))}")
        source = ends.get(w["from"])
        if w["from"] >= 0 and (w["from"], rank) not in mismatched and not (source and source["to"] == rank):
            lines.append(f"  rank {rank} waits for a message from rank {w['from']} (tag {w['recv_tag']}), which "
                         f"nobody sends: {doing(w['from'], answers.get(w['from']))}")
    return lines


def waiting_cycle(ends: Dict[int, Dict], mismatched=frozenset()):
    """(the line that names a cycle of ranks each waiting for the next in a
    point-to-point call, "ranks 0 -> 1 -> 0: a cycle of sends, ...", and its
    ranks), or (None, empty set). `ends`: the ranks waiting in point-to-point
    calls, each call as its roll-call record gives it (op, to, send_tag,
    from, recv_tag). A rank waits for a waiting peer that does not take part
    in its message: a send's dest that is not receiving from it, a recv's
    source that is not sending to it. A pair in `mismatched` (sender,
    receiver) does take part, with another tag: a tag mismatch, never a
    cycle. If the ranks all wait on one another so, none ever returns."""
    def receives(peer: int, source: int, tag: int) -> bool:
        return ends[peer]["from"] == source and ends[peer]["recv_tag"] == tag

    def sends(peer: int, dest: int, tag: int) -> bool:
        return ends[peer]["to"] == dest and ends[peer]["send_tag"] == tag

    blocked_on: Dict[int, List[int]] = {}
    for rank, w in ends.items():
        blocked_on[rank] = []
        if w["to"] >= 0 and w["to"] in ends and not receives(w["to"], rank, w["send_tag"]) \
                and (rank, w["to"]) not in mismatched:
            blocked_on[rank].append(w["to"])
        if w["from"] >= 0 and w["from"] in ends and not sends(w["from"], rank, w["recv_tag"]) \
                and (w["from"], rank) not in mismatched:
            blocked_on[rank].append(w["from"])
    for start in sorted(blocked_on):
        path, at = [start], start
        while blocked_on.get(at):
            nxt = blocked_on[at][0]
            if nxt in path:
                loop = path[path.index(nxt):] + [nxt]
                named = {ends[r]["op"] for r in loop}
                what = {"send": "a cycle of sends", "recv": "a cycle of receives"}.get(
                    named.pop() if len(named) == 1 else "", "a cycle of point-to-point calls")
                return (f"  ranks {' -> '.join(map(str, loop))}: {what}, each waiting for the next, "
                        "so none ever returns (one of them must receive first, or use sendrecv)"), set(loop)
            path.append(nxt)
            at = nxt
    return None, set()
