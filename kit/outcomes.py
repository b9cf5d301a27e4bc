"""A case's outcome and how it reads: the records of a finished job
(kit/launch.py) as one outcome per case of its plan, the judge
(kit/judge.py) deciding where it has expected values, and the case in
flight when a job ended failed with what its ranks recorded and their
roll-call (kit/diagnosis.py). A summary of the failures stays bounded
whatever the code under test printed.
"""
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable, Dict, List, Optional, Sequence

from kit import judge
from kit import traffic
from kit.diagnosis import rank_label, roll_call, stalled
from kit.launch import Job, reported_all


@dataclass
class CaseOutcome:
    case: str
    passed: bool
    seconds: float = 0.0
    failures: List[Dict] = field(default_factory=list)  # {"rank": r or None, "message": text}
    ended_job: bool = False  # the job died in this case, so the binary never reported it
    stalled: bool = False    # stopped with every rank inside one collective call (diagnosis.stalled)

    def summary(self, max_lines: Optional[int] = 12) -> List[str]:
        """The failures, bounded whatever the code under test printed: each
        rank's first failure (ranks with the same one on one line), then how
        many more failed on it; the runner's own diagnosis (a roll-call)
        whole. Past max_lines (None: no limit, every failure in full) the
        continuation lines of those first failures go, never a first line,
        a count or the diagnosis; the lines that say what went wrong stay
        within ESSENTIAL_LINES however many ranks failed."""
        per_rank: Dict[Optional[int], List[str]] = {}  # failures in the order they came, by rank
        for f in self.failures:
            rank = f.get("rank")
            # One message may hold several failures: the harness parts them with a blank line.
            blocks = [b.strip("\n") for b in str(f["message"]).split("\n\n") if b.strip()] or [""]
            per_rank.setdefault(rank if isinstance(rank, int) else None, []).extend(blocks)
        groups: Dict[tuple, List[int]] = {}
        for rank, blocks in per_rank.items():
            shown = tuple(blocks) if rank is None or max_lines is None else (blocks[0], len(blocks) - 1)
            groups.setdefault((rank is None,) + shown, []).extend([] if rank is None else [rank])
        lines: List[tuple] = []  # (text, essential)
        for key, ranks in groups.items():
            who = f"[{rank_label(sorted(ranks))}] " if ranks else ""
            pad = " " * len(who)
            if key[0] or max_lines is None:
                every = [line for block in key[1:] for line in (block.splitlines() or [""])]
                lines += [((pad if i else who) + clipped(line), True) for i, line in enumerate(every)]
                continue
            first, more = key[1], key[2]
            body = first.splitlines() or [""]
            lines.append((who + clipped(body[0]), True))
            lines += [(pad + clipped(line), False) for line in body[1:]]
            if more:
                lines.append((pad + f"(and {more} more failure{'s' if more > 1 else ''} on "
                                    f"{'each of these ranks' if len(ranks) > 1 else 'this rank'})", True))
        if max_lines is None or len(lines) <= max_lines:
            return [text for text, _ in lines]
        extra = [i for i, (_, essential) in enumerate(lines) if not essential]
        # Room left goes to the earliest continuation lines, values last.
        extra.sort(key=lambda i: (is_value_dump(lines[i][0]), i))
        cut = set(extra[max(0, max_lines - (len(lines) - len(extra))):])
        kept = [text for i, (text, _) in enumerate(lines) if i not in cut][:max(max_lines, ESSENTIAL_LINES)]
        dropped = len(lines) - len(kept)
        if dropped:
            kept.append(f"... ({dropped} more line{'s' if dropped > 1 else ''}; VERBOSE=1 shows everything)")
        return kept


# However many ranks fail and whatever they print, a case's summary keeps at
# most this many lines that say what went wrong, each at most LINE_CHARS long.
ESSENTIAL_LINES = 24
LINE_CHARS = 300


def clipped(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + f" ... ({len(line) - LINE_CHARS} characters cut)"


def is_value_dump(line: str) -> bool:
    """A line of printed matrix values (an `expected:` or `actual:` block, a
    row of one), the first thing a short summary can do without."""
    body = line.strip()
    if body.startswith("[rank") and "] " in body:
        body = body.split("] ", 1)[1].strip()
    return body.startswith(("expected: (", "actual:   (", "actual: (", "[", "..."))


def outcomes_of(job: Job, done: Dict[str, CaseOutcome], expected: Optional[judge.Expected] = None,
                wanted: Optional[List[str]] = None,
                rules_of: Callable[[str], Sequence[ModuleType]] = lambda case: ()) -> List[CaseOutcome]:
    """The job's records as outcomes of the cases of its plan that `done`
    does not hold yet: its results, then the case it died in, if it did.
    With `expected`, only the judge's cases (`wanted`) count, and a case the
    ranks' own checks pass must also satisfy the judge, its traffic the
    rules of its part (`rules_of`, kit/rules/) too."""
    plan = job.records.plan or []
    if wanted is not None:
        judged_cases = set(wanted)
        plan = [c for c in plan if c in judged_cases]
    planned = set(plan)
    claims: Dict[str, List[Dict]] = {}  # case -> its result records, in file order
    for r in job.records.results:
        claims.setdefault(r["case"], []).append(r)
    new: List[CaseOutcome] = []
    for case, mine in claims.items():
        if case not in planned or case in done:
            continue
        # Each rank's messages come as its own records; a result carries
        # the ranks' shared verdict (and, from an older harness, messages).
        failures = [f for r in mine for f in r["failures"] if isinstance(f, dict)]
        failures += [f for f in job.records.failures.get(case, []) if f not in failures]
        ok = all(r["status"] == "pass" for r in mine) and not failures  # a rank's message fails a "pass" too
        if not ok and not failures:
            failures.append({"rank": None, "message": "a rank's checks failed, and it recorded no message (its "
                                                      "record channel was closed or written over?)"})
        if len(mine) > 1:
            failures.append({"rank": None, "message": f"integrity: {len(mine)} results for this case, where the "
                                                      "harness writes one (records written by code under test?)"})
            ok = False
        if expected is not None and (wanted is not None or case in expected.values or case in expected.traffic):
            judged = judge.judge_case(case, job.records.values.get(case, {}), expected,
                                      job.records.doubled.get(case, 0))
            if case in expected.traffic:  # first: code under test ended the case early, so its account is short
                judged = traffic.after_problems(case, job.traffic, sorted(expected.traffic[case]), ok,
                                                job_ended=job.stopped is None and reported_all(job.records)) + judged
            judged += traffic.judge_case(case, job.traffic, expected.traffic, rules_of(case))
            if judged and ok:
                failures, ok = judged, False
        # The longest a result says: records written by code under test can
        # add a claim, never shorten the harness's own.
        new.append(CaseOutcome(case, ok, max(float(r["seconds"]) for r in mine), [] if ok else failures))
    finished = {o.case for o in new} | set(done)
    missing = [c for c in plan if c not in finished]
    if missing:
        in_flight = missing[0]
        failures = list(job.records.failures.get(in_flight, []))
        if in_flight in job.records.rollcalls:
            failures.append({"rank": None, "message": roll_call(in_flight, job.records.rollcalls[in_flight], job.limit_scale, job.limits)})
        if job.stopped:
            failures.append({"rank": None, "message": f"{job.stopped}: stopped after {job.seconds:.0f} s without "
                                                      "finishing this case (a deadlock or an endless loop?)"})
        elif not failures:
            failures.append({"rank": None, "message": f"the job ended during this case with exit status "
                                                      f"{job.returncode} and no result (a rank exited early or "
                                                      "was killed?)"})
        new.append(CaseOutcome(in_flight, False, job.seconds, failures, ended_job=True,
                               stalled=stalled(in_flight, job.records.rollcalls.get(in_flight, {}))))
    if job.anomalies:  # written by code under test, somewhere in the job: none of its cases stands
        said = [{"rank": None, "message": f"integrity: {a} (written by code under test: every case of its job "
                                          "fails)"} for a in job.anomalies]
        new = [CaseOutcome(o.case, False, o.seconds, said + ([] if o.passed else o.failures), o.ended_job)
               for o in new]
    return new
