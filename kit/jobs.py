"""Runs test cases of the kit's test binary under MPI and gives one outcome
per case, whatever the student code does.

A job is one mpirun of the test binary. Its ranks write records
(tests/harness/records.h), each through a channel of its own that this process
drains as they arrive (kit/channels.py): a plan, what student functions
returned, a result per case, and, from any rank, its failures at once and
an abort record when a case can't finish. When a job ends before its plan
is done, the case in flight is failed with what the ranks recorded, and a
new job runs the cases after it. Outcomes come only from the records, never
from the program's output, and the records are evidence, never a verdict: with expected values
(`Launch.expected`, the grader's), the judge (kit/judge.py) decides every
case, the list of cases is the judge's own, and a case the ranks never
reported fails.
"""
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from kit import host_limits
from kit import judge
from kit.channels import Channels
from kit import parts as table
from kit import records as rec
from kit.paths import KITRUN
from kit.processes import kill_session


@dataclass
class CaseOutcome:
    case: str
    passed: bool
    seconds: float = 0.0
    failures: List[Dict] = field(default_factory=list)  # {"rank": r or None, "message": text}
    ended_job: bool = False  # the job died in this case, so the binary never reported it

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


@dataclass
class Launch:
    """How to start a job; the grader swaps in its sandboxed prefix."""
    binary: str
    ranks: int
    timeout: float
    prefix: List[str] = field(default_factory=lambda: [KITRUN])
    env: Optional[Dict[str, str]] = None
    capture: bool = False          # False: the job's output goes to ours
    results_dir: Optional[str] = None  # where the job's record channels are made (the sandbox can reach it)
    cwd: Optional[str] = None
    after_job: Optional[Callable[[], None]] = None   # e.g. end every process of the sandbox user
    trace_dir: Optional[str] = None  # where the binary writes the trace of each failing case
    cancel: Optional[threading.Event] = None  # set: stop the job now and start no other
    time_scale: Optional[float] = None  # the limits' factor, if not KIT_TIME_SCALE's (kit.parts.time_scale)
    case_share: float = 1.0  # a further factor on the cases' own limits (a hung part's: kit.parts.HUNG_PART_SHARE)
    hidden_salt: Optional[int] = None  # for jobs of hidden cases only: their inputs' salt (judge.Expected.salt)
    expected: Optional[judge.Expected] = None  # the judge's values; a case it has none for: the ranks' checks
    judges_cases: bool = False  # grading: the judge's cases alone count, and each of them has an outcome
    # The system-call filter defends the grade; the student's own runs go
    # without it, so a shape error can still quote the line (addr2line).
    # KIT_SYSCALL_FILTER=on (the kit's own checks) or off (staff) decides.
    syscall_filter: bool = field(default_factory=lambda: os.environ.get("KIT_SYSCALL_FILTER") == "on")
    # time.monotonic() by which the last job must have ended (the grading
    # platform's time limit, less what the reports take), or None.
    deadline: Optional[float] = None

    def scale(self) -> float:
        return self.time_scale if self.time_scale is not None else table.time_scale()


@dataclass
class JobTally:
    """What the jobs of one run_cases call add up to, besides the outcomes."""
    output: str = ""               # captured stdout+stderr of all jobs (capture=True)
    launches: int = 0
    error: Optional[str] = None    # the binary could not run at all
    integrity: List[str] = field(default_factory=list)  # what in the results files no honest run writes
    observed: Optional[Dict] = None  # set to {} to collect every value record (make hidden-data)
    unjudged: List[str] = field(default_factory=list)  # planned cases the judge has no values for
    unfiltered: List[str] = field(default_factory=list)  # why a job ran without the system-call filter
    dropped: int = 0               # bytes of output not kept (see OutputTap)
    hangs: int = 0                 # cases stopped for time (the watchdog, or the runner's job limit)
    slow: int = 0                  # cases that finished, but took over SLOW_SHARE of their limits
    out_of_time: List[str] = field(default_factory=list)  # cases the deadline left unrun or unfinished
    jobs: List[Dict] = field(default_factory=list)  # each job's seconds, cases run, and why it was stopped


class OutputTap:
    """Drains a job's output as it comes, keeping only its first and last
    `keep` bytes, so a job that prints gigabytes neither blocks nor fills
    the grader's memory."""

    def __init__(self, stream, keep: int = 20000):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._keep = keep
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream) -> None:
        while True:
            chunk = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
            if not chunk:
                break
            self.total += len(chunk)
            room = self._keep - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > 2 * self._keep:
                    del self.tail[:-self._keep]

    def finish(self, timeout: float = 5.0) -> str:
        self._thread.join(timeout)
        text = self.head.decode("utf-8", errors="replace")
        if self.dropped > 0:
            text += f"\n... [{self.dropped} bytes of output dropped] ...\n"
        return text + bytes(self.tail[-self._keep:]).decode("utf-8", errors="replace")

    @property
    def dropped(self) -> int:
        return max(0, self.total - len(self.head) - min(len(self.tail), self._keep))


def _start(launch: Launch, gtest_filter: str, results: str) -> subprocess.Popen:
    """`results`: the directory of the job's record channels."""
    cmd = launch.prefix + ["-n", str(launch.ranks), launch.binary,
                           f"--gtest_filter={gtest_filter}", f"--results={results}"]
    if launch.trace_dir:
        cmd.append(f"--trace-dir={launch.trace_dir}")
    if launch.scale() * launch.case_share != 1:
        cmd.append(f"--time-scale={launch.scale() * launch.case_share!r}")
    if not launch.syscall_filter:
        cmd.append("--no-syscall-filter")
    if launch.hidden_salt is not None:
        cmd.append(f"--hidden-salt={launch.hidden_salt}")
    cmd.append(f"--cpus={host_limits.cpus():.3g}")  # the watchdog's pace in a container with a CPU quota
    # No rank may read another's memory (tools/kitrun): a case's ranks are
    # one another's witnesses, and the system-call filter refuses it anyway.
    env = dict(launch.env if launch.env is not None else os.environ, KIT_SINGLE_COPY="none")
    return subprocess.Popen(
        cmd, env=env, cwd=launch.cwd, start_new_session=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if launch.capture else None,
        stderr=subprocess.STDOUT if launch.capture else None)


# Why a job was stopped when the grading's own time ran out (Launch.deadline).
OUT_OF_TIME = "the grading's time ran out"


def _wait(proc: subprocess.Popen, channels: Channels, launch: Launch) -> Optional[str]:
    """Waits for the job to end; returns why it had to be stopped, or None.
    Besides the job's time limit, a job that writes no record for too long
    is stuck where no watchdog reaches (before main, or with the watchdog
    itself blocked), and waiting out the whole limit would only cost time."""
    started = time.monotonic()
    last_size, last_change = 0, started
    startup, quiet, timeout = (table.STARTUP_SECONDS * launch.scale(), table.QUIET_SECONDS * launch.scale(),
                               launch.timeout)
    while True:
        elapsed = time.monotonic() - started
        try:
            proc.wait(timeout=min(0.1, 0.005 + elapsed / 20))
            return None
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        size = channels.bytes
        if size != last_size:
            last_size, last_change = size, now
        if size == 0 and now - started > startup:
            return (f"the test program did not start its cases within {startup:.0f} s "
                    "(code that runs before main and never returns?)")
        if now - last_change > quiet:
            return f"the job wrote no result for {quiet:.0f} s"
        if now - started > timeout:
            return f"the job reached its time limit of {timeout:.0f} s"
        if launch.deadline is not None and now > launch.deadline:
            return OUT_OF_TIME
        if launch.cancel is not None and launch.cancel.is_set():
            return "the run was cancelled"


@dataclass
class Job:
    """One finished job: its records, and how it ended."""
    records: rec.Records
    stopped: Optional[str]   # why the runner had to stop it, or None
    returncode: int
    seconds: float
    limit_scale: Optional[float] = None  # the factor on its cases' limits (Launch.scale x case_share)


def run_job(launch: Launch, gtest_filter: str, tally: JobTally) -> Job:
    """Starts one job on the cases `gtest_filter` selects and waits for it;
    nothing the job started outlives it."""
    channels = Channels(launch.results_dir, launch.ranks, shared=launch.results_dir is not None)
    lines = None
    try:
        started = time.monotonic()
        oom_before = host_limits.oom_kills()
        proc = _start(launch, gtest_filter, channels.dir)
        tap = OutputTap(proc.stdout) if launch.capture else None
        tally.launches += 1
        stopped = _wait(proc, channels, launch)
        kill_session(proc)
        if launch.after_job:
            launch.after_job()
        if tap:
            tally.output += tap.finish()
            tally.dropped += tap.dropped
        # Out of memory, whichever process the kernel chose, or the launcher
        # killed from outside (no handin code can signal it: the system-call
        # filter): the host's fault, never a case's.
        oom = host_limits.killed_by_oom(oom_before)
        if oom:
            raise host_limits.ResourceFailure(f"a test job was killed; what ran out: {oom}")
        if stopped is None and proc.returncode is not None and proc.returncode < 0:
            raise host_limits.ResourceFailure(
                f"the MPI launcher was killed by signal {-proc.returncode} from outside the grader (the platform's "
                f"time or memory limit?); {host_limits.RAISE['memory']}, or {host_limits.RAISE['time']}")
        lines = channels.close()
        records = rec.parse(lines)
        if tally.observed is not None:
            for case, values in records.values.items():
                tally.observed.setdefault(case, {}).update(values)
        if channels.dropped:
            tally.integrity.append(f"the job wrote {channels.bytes} bytes of records, past the {rec.MAX_FILE_BYTES} "
                                   "a job of the kit writes at most (written by code under test?); the rest was "
                                   "not kept")
        if records.malformed:
            tally.integrity.append(f"{records.malformed} line(s) the ranks wrote were no record of the kit's "
                                   "format (written by code under test?); they were ignored")
        for plan in records.plans:  # the harness's word, for the report: a job without the filter is noted
            state = str(plan.get("syscall_filter", "off: the test program does not say"))
            if state != "on" and state not in tally.unfiltered:
                tally.unfiltered.append(state)
        return Job(records, stopped, proc.returncode, time.monotonic() - started,
                   launch.scale() * launch.case_share)
    finally:
        if lines is None:
            channels.close()


def rank_label(ranks: List[int]) -> str:
    """"rank 2", "ranks 0,3": how the kit names ranks, in Python (C++: rank_list, comm_runtime.h)."""
    return ("rank " if len(ranks) == 1 else "ranks ") + ",".join(map(str, ranks))


def roll_call(case: str, answers: Dict[int, Dict], limit_scale: Optional[float] = None) -> str:
    """The roll-call of a case its watchdog stopped: the time limit it ran
    past, then what each rank was doing, in one sentence when every rank
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
        allowed = run.case_seconds * limit_scale if limit_scale is not None else table.limit(run.case_seconds)
        head += f" within its time limit of {allowed:g} s"
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


def outcomes_of(job: Job, done: Dict[str, CaseOutcome], expected: Optional[judge.Expected] = None,
                wanted: Optional[List[str]] = None) -> List[CaseOutcome]:
    """The job's records as outcomes of the cases of its plan that `done`
    does not hold yet: its results, then the case it died in, if it did.
    With `expected`, only the judge's cases (`wanted`) count, and a case the
    ranks' own checks pass must also satisfy the judge."""
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
        failures = [f for r in mine for f in r["failures"] if isinstance(f, dict)]
        ok = all(r["status"] == "pass" for r in mine) and not failures
        if ok and job.records.failures.get(case):  # a rank failed, yet the result says pass
            failures, ok = list(job.records.failures[case]), False
        if len(mine) > 1:
            failures.append({"rank": None, "message": f"integrity: {len(mine)} results for this case, where the "
                                                      "harness writes one (records written by code under test?)"})
            ok = False
        if expected is not None and (wanted is not None or case in expected.values):
            judged = judge.judge_case(case, job.records.values.get(case, {}), expected,
                                      job.records.doubled.get(case, 0))
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
            failures.append({"rank": None, "message": roll_call(in_flight, job.records.rollcalls[in_flight], job.limit_scale)})
        if job.stopped:
            failures.append({"rank": None, "message": f"{job.stopped}: stopped after {job.seconds:.0f} s without "
                                                      "finishing this case (a deadlock or an endless loop?)"})
        elif not failures:
            failures.append({"rank": None, "message": f"the job ended during this case with exit status "
                                                      f"{job.returncode} and no result (a rank exited early or "
                                                      "was killed?)"})
        new.append(CaseOutcome(in_flight, False, job.seconds, failures, ended_job=True))
    return new


# A job needs this much of the grading's time left to be worth starting: MPI's
# start-up and the first cases.
MIN_JOB_SECONDS = 3.0
# A case that takes over this share of its limit spends the grading's time
# as a hang does: correct code takes under a twentieth of it. The limit as
# the watchdog stretches it where the job has less than a CPU.
SLOW_SHARE = 0.2


def is_slow(outcome: CaseOutcome, scale: float) -> bool:
    run = next((r for r in table.all_runs() if table.matches(r.filter, outcome.case)), None)
    stretch = 1 / min(1.0, host_limits.cpus())
    return run is not None and outcome.seconds > SLOW_SHARE * run.case_seconds * scale * stretch


def split_off_part(pending: List[str], ended: CaseOutcome) -> tuple:
    """(the pending cases of other parts, those of the part whose case ended
    its job: a hang, a crash). The second go to a job after every other:
    under a time limit, one part's hangs must not cost the other parts their
    turn. (A job runs its cases in the binary's order, whatever the filter's.)"""
    part = next((p for p in table.ALL_PARTS if p.owns(ended.case)), None)
    if part is None:
        return pending, []
    return [c for c in pending if not part.owns(c)], [c for c in pending if part.owns(c)]


def run_cases(launch: Launch, gtest_filter: str, tally: Optional[JobTally] = None,
              on_outcome: Optional[Callable[[CaseOutcome], None]] = None,
              deferred: Optional[List[str]] = None) -> Dict[str, CaseOutcome]:
    """Runs every case the filter selects, in as many jobs as it takes, and
    returns case -> outcome. With the judge's expected values, every case
    of theirs that the filter selects has an outcome, reported or not. With
    a deadline, the cases it leaves unrun fail and are listed in
    `tally.out_of_time` (the caller says whose fault that was). With
    `deferred`, the cases of a part whose case ended a job are not run here
    but added to it, for the caller to run after everything else."""
    tally = tally if tally is not None else JobTally()
    wanted = None
    if launch.expected is not None and launch.judges_cases:
        wanted = [c for c in launch.expected.cases if table.matches(gtest_filter, c)]
    outcomes: Dict[str, CaseOutcome] = {}
    queue = [gtest_filter]  # the filters of the jobs to come, in order
    cancelled = lambda: launch.cancel is not None and launch.cancel.is_set()  # noqa: E731
    timed_out = False
    while queue and not cancelled():
        pending = queue.pop(0)
        if not pending:
            continue
        if launch.deadline is not None and time.monotonic() > launch.deadline - MIN_JOB_SECONDS:
            queue.insert(0, pending)
            timed_out = True
            break
        job = run_job(launch, pending, tally)
        tally.jobs.append({"seconds": round(job.seconds, 2), "planned": len(job.records.plan or []),
                           "reported": len(job.records.results), "stopped": job.stopped})
        if job.records.plan is None and job.stopped == OUT_OF_TIME:
            queue.insert(0, pending)
            timed_out = True
            break
        if job.records.plan is None:
            tally.error = job.stopped or f"the test program did not start its cases (exit status {job.returncode})"
            break
        plan = job.records.plan if wanted is None else [c for c in job.records.plan if c in set(wanted)]
        if wanted is not None:
            tally.unjudged += [c for c in job.records.plan if c not in set(wanted) and c not in tally.unjudged][:20]
        ended = None
        for outcome in outcomes_of(job, outcomes, launch.expected, wanted):
            if outcome.ended_job and job.stopped == OUT_OF_TIME:
                continue  # not the case's doing: it is listed with the unrun ones below
            outcomes[outcome.case] = outcome
            if outcome.ended_job:
                ended = outcome
                tally.hangs += bool(job.stopped or job.records.rollcalls.get(outcome.case))
            else:
                tally.slow += is_slow(outcome, launch.scale())
            if on_outcome:
                on_outcome(outcome)
        left = [c for c in plan if c not in outcomes]
        now, later = split_off_part(left, ended) if ended else (left, [])
        if deferred is not None:
            deferred += later
            queue = [":".join(now)] + queue
        else:
            queue = [":".join(now)] + queue + [":".join(later)]
        if job.stopped == OUT_OF_TIME:
            timed_out = True
            break
    if timed_out and not cancelled():
        unrun = [c for c in (wanted if wanted is not None else ":".join(queue).split(":"))
                 if c and "*" not in c and c not in outcomes and c not in (deferred or ())]
        tally.out_of_time += unrun
        for case in unrun:
            outcomes[case] = CaseOutcome(case, False, 0.0, [{"rank": None, "message": OUT_OF_TIME_MESSAGE}])
            if on_outcome:
                on_outcome(outcomes[case])
    if wanted is not None and outcomes and not cancelled():
        for case in wanted:
            if case not in outcomes and case not in (deferred or ()):
                outcomes[case] = CaseOutcome(case, False, 0.0, [{"rank": None, "message": (
                    "the test program never reported this case (its plan left it out: written by code under "
                    "test?)")}])
                if on_outcome:
                    on_outcome(outcomes[case])
    return outcomes


OUT_OF_TIME_MESSAGE = "not run: the grading's time on this platform ran out before this case"


@dataclass
class PartsRun:
    """What running some parts' cases gave: an outcome per case that ran,
    and why none ran if none did."""
    outcomes: Dict[str, CaseOutcome]
    error: Optional[str]   # the binary could not run its cases (the job's reason), else None
    keys: str = ""         # the parts run: "part1, part2"

    def labelled_error(self) -> Optional[str]:
        """The error, after the parts it cost: "part1, part2: why"."""
        return f"{self.keys}: {self.error}" if self.error else None


def run_parts(binary: str, chosen: List[table.Part], hidden: bool = False, launch_args: Optional[Dict] = None,
              tally: Optional[JobTally] = None,
              on_outcome: Optional[Callable[[CaseOutcome], None]] = None,
              settled: Optional[Callable[[str, Dict[str, CaseOutcome]], bool]] = None) -> PartsRun:
    """Runs the chosen parts' public cases in one job with as many ranks as
    the largest case needs, then, if asked, their hidden cases in jobs of
    their own: no process that ran a hidden case runs a public one, so
    nothing a rank saw of a hidden case can travel in a public case's
    records, which students see with their messages. A part whose case
    ended a job (a hang, a crash) runs its other cases, public then hidden,
    after every other part's, each at HUNG_PART_SHARE of its limit: under a
    platform's time limit, one part's hangs never cost the other parts their
    turn, and cost its own the same time everywhere. Without hidden cases,
    a put-off case for which `settled(case, outcomes so far)` holds is not
    run: the known-bug checks stop a part whose verdict is already certain."""
    tally = tally if tally is not None else JobTally()
    outcomes: Dict[str, CaseOutcome] = {}

    expected = (launch_args or {}).get("expected")

    def run(runs: List[table.Run], cases: Optional[List[str]] = None, later: Optional[List[str]] = None) -> None:
        if not runs or tally.error or (cases is not None and not cases):
            return
        share = table.HUNG_PART_SHARE if cases is not None else 1.0  # the cases of a part that hung
        salt = expected.salt if expected is not None and all(r.hidden for r in runs) else None
        launch = Launch(binary, max(r.ranks for r in runs), timeout=sum(r.job_seconds for r in runs),
                        **{"capture": on_outcome is None, "case_share": share, "hidden_salt": salt,
                           **(launch_args or {})})
        chosen_filter = ":".join(cases) if cases is not None else ":".join(r.filter for r in runs)
        outcomes.update(run_cases(launch, chosen_filter, tally, on_outcome, deferred=later))

    public = [run_ for part in chosen for run_ in part.public_runs()]
    put_off: List[str] = []
    run(public, later=put_off)
    if hidden:
        hung = [p for p in chosen if any(p.owns(c) for c in put_off)]
        run([r for p in chosen if p not in hung for r in p.runs if r.hidden], later=put_off)
        hung = [p for p in chosen if any(p.owns(c) for c in put_off)]
        later_hidden = [r for p in hung for r in p.runs if r.hidden]
        run(public, [c for c in put_off if not table.is_hidden(c)])
        run(later_hidden, [c for c in put_off if table.is_hidden(c)] +
            [r.filter for r in later_hidden if not any(table.matches(r.filter, c) for c in outcomes)])
    else:
        run(public, [c for c in put_off if not (settled and settled(c, outcomes))])
    return PartsRun(outcomes, tally.error, ", ".join(p.key for p in chosen))
