"""The MPI sides' accounts of a job's traffic, read and judged.

Each rank's MPI side (framework/comm/side/, the only process of a rank that
holds MPI) writes, once per case, what it carried for the rank's program:
every collective and point-to-point message, as (operation, elements, the
communicator's size) and how many times (tests/harness/records.h,
"traffic"). It writes through a channel of its own (kit/channels.py,
side<r>), which it opens before the program starts, so no code under test
has written a word of an honest account. Code under test can open the same
channel and add lines, but never take one back: a second account of one
case, or an account of a case the job never planned, is an integrity
failure.

The judge compares a case's accounts with the reference's, recorded by
`make hidden-data` beside the expected values (kit/judge.py), for the parts
whose rules are about traffic (kit/part_table.py, `traffic`). It compares the
collectives one by one, and the elements each rank sends in messages as a
total, since a correct algorithm may send its blocks with send and recv or
with sendrecv.

An account also places the case's requests by the student call that made
them, and reads the program's memory as each call returns (side/traffic.h,
facts.CALL_MARKS). The judge compares every function's returns with the
reference's, whatever the part; a part whose rules read the other marks
(where an iallreduce began, the memory held at a return) names them in its
row, and they judge the account too (kit/rules/).

Every other request the side carried in the case is in the account too,
the kit's own (facts.KIT_REQUESTS): any request can move data. And what it
carried after the case ended, until the next case began or the program
ended, is the case's "after" account, where only the harness's own
requests belong (after_problems): a case's code that ends its account
early still has its calls counted.

    traffic = parse(side_lines)              # [(rank, line), ...] from kit/channels.py
    failures = judge_case(case, traffic, expected.traffic)
"""
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from types import ModuleType
from typing import Dict, List, Optional, Sequence, Tuple

from kit import facts

EVENT = "traffic"
Call = Tuple[str, int, int]  # (operation, elements, the communicator's size)
Account = Dict[Call, int]    # -> how many times
# The side's marks of student calls (facts.CALL_MARKS): MARK@FUNCTION, FUNCTION as traffic.cpp writes a name.
MARK = re.compile(r"(%s)%s[A-Za-z0-9_.~]{1,%d}" % ("|".join(facts.CALL_MARKS), re.escape(facts.MARK_SEPARATOR), 64))
RETURNED = facts.mark(facts.MARK_RETURNED, "")
OPERATIONS = set(facts.OPERATIONS) | set(facts.KIT_REQUESTS) | {facts.EMULATED, facts.UNPAIRED}
POINT_TO_POINT = ("send", "sendrecv")  # the calls that send elements (a recv's are counted by its sender)
MAX_LINE_BYTES = 1 << 16               # 256 kinds of call (traffic.cpp) in about 10 KB
MAX_CALLS = facts.ACCOUNT_MOST_KINDS
MAX_INT = 1 << 31
SHOWN = 3  # differences a message names
UNREAD_KIB = facts.SIDE_UNREAD_KIB  # a memory figure the side could not read


@dataclass
class Traffic:
    accounts: Dict[str, Dict[int, Account]] = field(default_factory=dict)  # case -> rank -> account
    after: Dict[str, Dict[int, Account]] = field(default_factory=dict)  # case -> rank -> what followed it
    doubled: Dict[str, int] = field(default_factory=dict)  # case -> accounts past the first, per rank
    doubled_after: Dict[str, int] = field(default_factory=dict)  # the same, of the after accounts
    malformed: int = 0


def known(op) -> bool:
    """An operation, a kit request or a mark, as a side writes them."""
    return isinstance(op, str) and (op in OPERATIONS or MARK.fullmatch(op) is not None)


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_INT


def _account(record, rank: int) -> Optional[Account]:
    if not isinstance(record, dict) or record.get("event") != EVENT or record.get("rank") != rank:
        return None
    calls, case = record.get("calls"), record.get("case")
    if not isinstance(case, str) or not isinstance(calls, list) or len(calls) > MAX_CALLS:
        return None
    if not _whole(record.get("overflow")) or record.get("section", "case") not in ("case", "after"):
        return None
    out: Account = {}
    for c in calls:
        if not (isinstance(c, list) and len(c) == 4 and known(c[0]) and all(_whole(x) for x in c[1:])):
            return None
        out[(c[0], c[1], c[2])] = out.get((c[0], c[1], c[2]), 0) + c[3]
    if record["overflow"]:
        out[("overflow", 0, 0)] = record["overflow"]  # never in the reference's: the case then differs
    return out


def parse(lines) -> Traffic:
    """The accounts of (rank, line) pairs from the sides' channels."""
    out = Traffic()
    for rank, line in lines:
        try:
            record = json.loads(line) if len(line) <= MAX_LINE_BYTES else None
        except (ValueError, RecursionError, UnicodeDecodeError):
            record = None
        account = _account(record, rank)
        if account is None:
            out.malformed += 1
            continue
        after = record.get("section") == "after"
        mine = (out.after if after else out.accounts).setdefault(record["case"], {})
        if rank in mine:
            doubled = out.doubled_after if after else out.doubled
            doubled[record["case"]] = doubled.get(record["case"], 0) + 1
        mine[rank] = account
    return out


def summary(account: Account) -> Tuple[Counter, int]:
    """What the judge compares: the collectives, call by call, and the
    elements sent in messages, as a total."""
    collectives: Counter = Counter()
    sent = 0
    for (op, count, ranks), times in account.items():
        if op == facts.EMULATED or op in facts.UNJUDGED_REQUESTS or (MARK.fullmatch(op) and not op.startswith(RETURNED)):
            continue  # the part's rules read the marks (kit/rules/); how a request completes is the code's choice
        if op in POINT_TO_POINT:
            sent += count * times
        elif op != "recv":
            collectives[(op, count, ranks)] += times
    return collectives, sent


def _call_text(call: Call, times: int) -> str:
    op, count, ranks = call
    if op == "overflow":
        return f"{times} calls past what one account holds"
    again = f" ({times} times)" if times > 1 else ""
    if op == facts.UNPAIRED:
        return f"a student call's mark its MPI side could not pair{again}"
    where = f" on {ranks} rank{'s' if ranks != 1 else ''}" if ranks else ""  # a wait or a test names no communicator
    if op in facts.KIT_REQUESTS:  # the kit's own: named as the kit calls them
        size = f" of {count} {'bytes' if op == 'gather_text' else 'elements'}" if count else ""
        return f"{op!r} request{size}{where}{again}"
    what = op.replace("_", "-") if op != "iallreduce" else "iallreduce"
    size = f" of {count} element{'s' if count != 1 else ''}" if count else ""  # a barrier, split or wait moves none
    return f"{what}{size}{where}{again}"


def differences(got: Account, want: Account) -> List[str]:
    """How one rank's account differs from the reference's, in words."""
    got_calls, got_sent = summary(got)
    want_calls, want_sent = summary(want)
    # The communicator's calls first: the kit's own requests follow them
    # (an agreement precedes each collective), so they are named last.
    order = lambda item: (item[0][0] in facts.KIT_REQUESTS, item[0])  # noqa: E731
    made = lambda c: "made a kit" if c[0] in facts.KIT_REQUESTS else "made"  # noqa: E731
    returns = lambda calls: {c: n for c, n in calls.items() if c[0].startswith(RETURNED)}  # noqa: E731
    got_returns, want_returns = returns(got_calls), returns(want_calls)
    calls = lambda counted, mine: Counter({c: n for c, n in counted.items() if c not in mine})  # noqa: E731
    got_calls, want_calls = calls(got_calls, got_returns), calls(want_calls, want_returns)
    out = [f"{made(c)} {_call_text(c, n)}, which the reference doesn't"
           for c, n in sorted((got_calls - want_calls).items(), key=order)]
    out += [f"made no {'kit ' if c[0] in facts.KIT_REQUESTS else ''}{_call_text(c, n)}, which the reference makes"
            for c, n in sorted((want_calls - got_calls).items(), key=order)]
    # The functions are named as the reference's account names them: a name
    # only the program's account holds came through its link, and no message
    # quotes it.
    for c in sorted(set(want_returns) | set(got_returns)):
        g, w = got_returns.get(c, 0), want_returns.get(c, 0)
        if g != w and c in want_returns:
            out.append(f"returned from {c[0][len(RETURNED):]} {g} time(s), where the reference returns "
                       f"{w}: its MPI side is told of each student call (did a call not return, or the "
                       f"program talk to its side itself?)")
    strange = sum(n for c, n in got_returns.items() if c not in want_returns)
    if strange:
        out.append(f"returned {strange} time(s) from student calls the reference never makes (did the program "
                   f"talk to its side itself?)")
    if got_sent != want_sent:
        out.append(f"sent {got_sent} elements in messages, where the reference sends {want_sent}")
    return out


def judge_case(case: str, traffic: Traffic, expected: Dict[str, Dict[int, Account]],
               rules: Sequence[ModuleType] = ()) -> List[Dict]:
    """The failures in one case's traffic ({"rank", "message"}); none if every
    rank's account matches the reference's and keeps the part's `rules`
    (kit/rules/), or none was recorded for it."""
    want = expected.get(case)
    if want is None:
        return []
    failures: List[Dict] = []
    if traffic.doubled.get(case):
        failures.append({"rank": None, "message": "integrity: two accounts of this case's traffic from one rank's "
                                                  "MPI side, which writes one (written by code under test?)"})
    got = traffic.accounts.get(case, {})
    for rank in sorted(want):
        if rank not in got:
            failures.append({"rank": rank, "message": "its MPI side gave no account of this case's traffic (the "
                                                      "program never named the case to it?)"})
            continue
        # A part's own rules first: a report shows each rank's first failure,
        # and a rule names what the part is about, where the comparison lists calls.
        for rule in rules:
            broken = rule.problems(got[rank], want[rank])
            if broken:
                more = f"; and {len(broken) - SHOWN} more" if len(broken) > SHOWN else ""
                heading, joint = getattr(rule, "HEADING", ""), getattr(rule, "JOINT", "; ")
                failures.append({"rank": rank, "message": heading + joint.join(broken[:SHOWN]) + more})
        found = differences(got[rank], want[rank])
        if found:
            more = f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
            failures.append({"rank": rank, "message": "its communication differs from the reference's: it "
                                                      + "; it ".join(found[:SHOWN]) + more})
    return failures


def _beyond(account: Account, allowed: Dict[str, int]) -> List[Tuple[Call, int]]:
    """The calls of an after account past what the harness makes there, by operation."""
    times: Counter = Counter()
    for (op, _count, _ranks), n in account.items():
        times[op] += n
    return [(call, n) for call, n in account.items()
            if call[0] not in facts.UNJUDGED_REQUESTS and times[call[0]] > allowed.get(call[0], 0)]


def job_problems(traffic: Traffic, plan: List[str], ranks_of: Dict[str, int], complete: bool) -> List[str]:
    """What in a job's accounts no honest job's sides write, whatever the
    case's part: only code under test that speaks for the harness on the
    link makes a side write them, so each fails every case of the job. The
    words count; they never name a case (its name may be what the code wrote).
      - a second account of a case (or of what followed it) from one rank;
      - an account from a rank the case's group does not hold (ranks 0 to n-1);
      - after a case, requests the harness never makes there;
      - no account of a case, or of what followed it, from a rank of its
        group, in a job that reported every case of its plan and ended by
        itself (each side writes them at the case's end, and at the next
        case or the program's end)."""
    out = []
    doubled = sum(traffic.doubled.values()) + sum(traffic.doubled_after.values())
    if doubled:
        out.append(f"{doubled} account(s) of a case's traffic given twice by one rank's MPI side")
    outside = sum(1 for kept in (traffic.accounts, traffic.after) for case, by_rank in kept.items()
                  if case in ranks_of for rank in by_rank if rank >= ranks_of[case])
    if outside:
        out.append(f"{outside} account(s) of traffic from ranks outside their case's group")
    allowed = dict(facts.BETWEEN_CASES, **facts.AFTER_A_FAILURE)
    beyond = sum(1 for by_rank in traffic.after.values() for account in by_rank.values() if _beyond(account, allowed))
    if beyond:
        out.append(f"{beyond} MPI side(s) carried calls between two cases that the harness never makes there")
    if complete:
        unaccounted = sum(1 for case in plan for rank in range(ranks_of.get(case, 0))
                          if rank not in traffic.accounts.get(case, {}))
        if unaccounted:
            out.append(f"{unaccounted} MPI side(s) gave no account of a case their rank ran")
        missing = sum(1 for case in plan for rank in traffic.accounts.get(case, {})
                      if rank not in traffic.after.get(case, {}))
        if missing:
            out.append(f"{missing} MPI side(s) gave no account of what followed a case")
    return out


def after_problems(case: str, traffic: Traffic, ranks: List[int], passed: bool, job_ended: bool) -> List[Dict]:
    """The failures in what the sides carried after a case ended, until the
    next began ({"rank", "message"}): only the harness's own requests belong
    there (facts.BETWEEN_CASES, and after a failure facts.AFTER_A_FAILURE).
    Code under test that ends its case's account early, and then makes a
    call, makes it here. A side that gave no such account was stopped
    before it could, which only a job the runner stopped excuses."""
    allowed = dict(facts.BETWEEN_CASES, **({} if passed else facts.AFTER_A_FAILURE))
    got = traffic.after.get(case, {})
    failures: List[Dict] = []
    for rank in ranks:
        if rank not in got:
            if job_ended:
                failures.append({"rank": rank, "message": "integrity: its MPI side gave no account of what followed "
                                                          "this case (the case was ended twice, or never?)"})
            continue
        extra = _beyond(got[rank], allowed)
        if extra:
            shown = "; ".join(("a kit " if c[0] in facts.KIT_REQUESTS else "") + _call_text(c, n)
                              for c, n in sorted(extra)[:SHOWN])
            failures.append({"rank": rank, "message": f"integrity: its MPI side carried calls after this case had "
                                                      f"ended, before the next began, which only code under test "
                                                      f"makes: {shown}"})
    return failures


def unplanned(traffic: Traffic, plan: List[str]) -> List[str]:
    """Cases with an account that the job never planned (a side writes only the names its program gives)."""
    planned = set(plan)
    return sorted(c for c in set(traffic.accounts) | set(traffic.after) if c not in planned)


# In the expected values' files (kit/judge.py), one line per rank of a case:
#     traffic <Suite.Case> <rank> <op>:<elements>:<ranks>:<times> ...
def dump_lines(case: str, accounts: Dict[int, Account]) -> List[str]:
    return [f"traffic {case} {rank} " + " ".join(f"{op}:{count}:{ranks}:{times}"
                                                 for (op, count, ranks), times in sorted(accounts[rank].items()))
            for rank in sorted(accounts)]


def load_line(words: List[str], into: Dict[str, Dict[int, Account]]) -> None:
    """One `traffic` line's words; ValueError if it is none."""
    if len(words) < 3 or not words[2].isdigit():
        raise ValueError("not a traffic line")
    account: Account = {}
    for item in words[3:]:
        op, count, ranks, times = item.split(":")
        if not known(op):
            raise ValueError(f"unknown operation {op!r}")
        account[(op, int(count), int(ranks))] = int(times)
    into.setdefault(words[1], {})[int(words[2])] = account
