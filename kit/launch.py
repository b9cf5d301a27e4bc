"""Launching one job: one mpirun of the kit's test binary on the cases a
filter selects. Its ranks write records (tests/harness/records.h), each
through a channel of its own that this process drains as they arrive
(kit/channels.py); the job is stopped when it runs past its time limit,
writes nothing for too long, or the grading's time runs out, and nothing
it started outlives it. What the records say of its cases is
kit/outcomes.py's to read; which jobs run, kit/jobs.py's.
"""
import json
import os
import select
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from kit import calibration, facts, host_limits
from kit import judge
from kit.channels import Channels
from kit import limits
from kit import parts as table
from kit import records as rec
from kit import traffic as side_traffic
from kit.paths import KITRUN
from kit.processes import kill_session
from kit import overrides


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
    time_scale: Optional[float] = None  # the limits' factor, if not KIT_TIME_SCALE's (kit.limits.time_scale)
    case_share: float = 1.0  # a further factor on the cases' own limits (a hung part's: kit.limits.HUNG_PART_SHARE)
    hidden_salt: Optional[int] = None  # for jobs of hidden cases only: their inputs' salt (judge.Expected.salt)
    expected: Optional[judge.Expected] = None  # the judge's values; a case it has none for: the ranks' checks
    judges_cases: bool = False  # grading: the judge's cases alone count, and each of them has an outcome
    # The system-call filter defends the grade; the student's own runs go
    # without it, so a shape error can still quote the line (addr2line).
    # KIT_SYSCALL_FILTER=on (the kit's own checks) or off (staff) decides.
    syscall_filter: bool = field(default_factory=lambda: overrides.SYSCALL_FILTER == "on")
    # time.monotonic() by which the last job must have ended (the grading
    # platform's time limit, less what the reports take), or None.
    deadline: Optional[float] = None
    # The case limits calibrated on this machine (kit/calibration.py); None:
    # those of the build the environment names.
    limits: Optional[calibration.Limits] = None

    def scale(self) -> float:
        return self.time_scale if self.time_scale is not None else limits.time_scale()

    def calibrated(self) -> calibration.Limits:
        if self.limits is None:
            self.limits = calibration.limits()
        return self.limits


@dataclass
class JobTally:
    """What the jobs of one run_cases call add up to, besides the outcomes."""
    output: str = ""               # captured stdout+stderr of all jobs (capture=True)
    launches: int = 0
    error: Optional[str] = None    # the binary could not run at all
    integrity: List[str] = field(default_factory=list)  # what in the results files no honest run writes
    observed: Optional[Dict] = None  # set to {} to collect every value record (make hidden-data)
    observed_traffic: Optional[Dict] = None  # set to {} to collect the sides' accounts (make hidden-data)
    unjudged: List[str] = field(default_factory=list)  # planned cases the judge has no values for
    unfiltered: List[str] = field(default_factory=list)  # why a job ran without the system-call filter
    dropped: int = 0               # bytes of output not kept (see OutputTap)
    hangs: int = 0                 # cases stopped for time (the watchdog, or the runner's job limit)
    ended_parts: set = field(default_factory=set)  # keys of the parts a case of which ended its job (their rest runs last)
    slow: int = 0                  # cases that finished, but took over SLOW_SHARE of their limits
    out_of_time: List[str] = field(default_factory=list)  # cases the deadline left unrun or unfinished
    jobs: List[Dict] = field(default_factory=list)  # each job's seconds, cases run, and why it was stopped
    lingered: int = 0              # jobs stopped after their last case's result (the handin's code ran on)
    stalled: List[str] = field(default_factory=list)  # cases run again: their first run stalled (diagnosis.stalled)


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
    for run_filter, seconds in launch.calibrated().overridden_runs().items():
        cmd.append(f"--case-limit={run_filter}={seconds:.3f}")
    if not launch.syscall_filter:
        cmd.append("--no-syscall-filter")
    cmd.append(f"--cpus={host_limits.cpus():.3g}")  # the watchdog's pace in a container with a CPU quota
    # No rank may read another's memory (tools/kitrun): a case's ranks are
    # one another's witnesses, and the system-call filter refuses it anyway.
    env = dict(launch.env if launch.env is not None else os.environ, KIT_SINGLE_COPY="none")
    return subprocess.Popen(
        cmd, env=env, cwd=launch.cwd, start_new_session=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if launch.capture else None,
        stderr=subprocess.STDOUT if launch.capture else None)


# Why a job was stopped when its cases were all reported (the handin's time, not the grading's).
AFTER_LAST_CASE = "the job was stopped"
# Why a job was stopped when the grading's own time ran out (Launch.deadline).
OUT_OF_TIME = "the grading's time ran out"


class _LastCase:
    """Whether rank 0 has reported every case of its plan, read from the
    lines as they arrive (only plans and results are parsed)."""
    def __init__(self, channels: Channels):
        self.channels, self.read = channels, 0
        self.plan: Optional[set] = None
        self.reported: set = set()

    def done(self) -> bool:
        new = self.channels.lines_since(self.read)
        self.read += len(new)
        for rank, line in new:
            if rank != 0 or not line.startswith((b'{"event":"plan"', b'{"event":"result"')):
                continue
            try:
                record = json.loads(line)
                if record["event"] == "plan" and self.plan is None:
                    self.plan = set(map(str, record["cases"]))
                elif record["event"] == "result":
                    self.reported.add(str(record["case"]))
            except (ValueError, KeyError, TypeError, RecursionError):
                continue  # kit/records.py judges it
        return self.plan is not None and self.plan <= self.reported


class _JobClock:
    """The seconds a job could have run since it started, as the ranks'
    watchdog counts a case's (kit.facts.time_share): a busy host (CPU hogs,
    other gradings, the kit's own checks side by side) or a container's
    quota stretches the clock's seconds, never a limit. Each limit is also
    met at MOST_STRETCH times its length on the clock."""
    def __init__(self, ranks: int, now: float):
        self.ranks, self.cores, self.cpus = ranks, host_limits.cores(), host_limits.cpus()
        self.started = self.last = now
        self.counted = 0.0

    def look(self, now: float) -> float:
        share = facts.time_share(self.ranks, self.cores, host_limits.runnable_tasks(), self.cpus)
        self.counted += (now - self.last) * share
        self.last = now
        return self.counted

    def past(self, limit: float, since: Tuple[float, float]) -> bool:
        """Whether `limit` seconds have passed since `since` (a moment and
        the count then: (clock, counted))."""
        return self.counted - since[1] > limit or self.last - since[0] > limit * facts.MOST_STRETCH


class _ExitWatch:
    """Whether a process has ended, waiting at most so long: on Linux its
    pidfd wakes the wait the moment it ends, where Popen.wait's own polling
    sleeps up to 50 ms past it (two jobs a grading)."""

    def __init__(self, proc: subprocess.Popen):
        self._proc = proc
        self._poll = None
        try:
            fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # no pidfd (Python < 3.9, a kernel before 5.3): Popen's polling
            return
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def within(self, seconds: float) -> bool:
        if self._poll is not None:
            self._poll.poll(max(1, int(seconds * 1000)))
            seconds = 0  # ended or not, Popen learns which without waiting
        try:
            self._proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        if self._poll is not None:
            os.close(self._fd)
            self._poll = None


def _wait(proc: subprocess.Popen, channels: Channels, launch: Launch) -> Optional[str]:
    """Waits for the job to end; returns why it had to be stopped, or None.
    Besides the job's time limit, a job that writes no record for too long
    is stuck where no watchdog reaches (before main, or with the watchdog
    itself blocked), and waiting out the whole limit would only cost time.
    The start-up, quiet and job limits count the time the job could have
    run (_JobClock); the time after the last case and the grading's
    deadline are the clock's."""
    clock = _JobClock(launch.ranks, time.monotonic())
    start = last_change = (clock.started, 0.0)
    last_size = 0
    startup, quiet, timeout = (limits.STARTUP_SECONDS * launch.scale(), limits.QUIET_SECONDS * launch.scale(),
                               launch.timeout)
    last_case, all_reported = _LastCase(channels), None  # when rank 0 reported its plan's last case
    exited = _ExitWatch(proc)
    try:
        while True:
            elapsed = time.monotonic() - clock.started
            if exited.within(min(0.1, 0.005 + elapsed / 20)):
                return None
            now = time.monotonic()
            clock.look(now)
            size = channels.bytes
            if size != last_size:
                last_size, last_change = size, (now, clock.counted)
                if all_reported is None and last_case.done():
                    all_reported = last_change
            # The time after the last case is the handin's own, and its threads
            # could stretch a counted clock: this limit is the clock's.
            if all_reported is not None and now - all_reported[0] > limits.EXIT_SECONDS * launch.scale():
                return (f"{AFTER_LAST_CASE}: it still ran {now - all_reported[0]:.0f} s after its last case's result "
                        "(code that runs after the cases, such as a static object's destructor, that does not end?)")
            if size == 0 and clock.past(startup, start):
                return (f"the test program did not start its cases within {startup:.0f} s "
                        "(code that runs before main and never returns?)")
            if clock.past(quiet, last_change):
                return f"the job wrote no result for {quiet:.0f} s"
            if clock.past(timeout, start):
                return f"the job reached its time limit of {timeout:.0f} s"
            if launch.deadline is not None and now > launch.deadline:
                return OUT_OF_TIME
            if launch.cancel is not None and launch.cancel.is_set():
                return "the run was cancelled"
    finally:
        exited.close()


@dataclass
class Job:
    """One finished job: its records, and how it ended."""
    records: rec.Records
    stopped: Optional[str]   # why the runner had to stop it, or None
    returncode: int
    seconds: float
    limit_scale: Optional[float] = None  # the factor on its cases' limits (Launch.scale x case_share)
    limits: Optional[calibration.Limits] = None  # the cases' limits on this machine, before that factor
    traffic: side_traffic.Traffic = field(default_factory=side_traffic.Traffic)  # the MPI sides' accounts
    anomalies: List[str] = field(default_factory=list)  # what no honest job writes: each fails its every case


def _anomalies(records: rec.Records, traffic: side_traffic.Traffic, channels: Channels,
               stopped: Optional[str] = None) -> List[str]:
    """What the job wrote that no job of the kit writes: lines that are no
    record, accounts of cases it never planned, more than a job writes.
    Only code under test writes them, so each fails every case of the job.
    The words never quote what was written: it may be anything the handin
    learned (a hidden case's name or input), and the report is the
    student's to read."""
    out = []
    if traffic.malformed:
        out.append(f"{traffic.malformed} line(s) on the MPI sides' channels were no account of theirs")
    if len(records.plans) > 1:
        out.append(f"rank 0 wrote {len(records.plans)} plans, where the harness writes one")
    planned = list(records.plan or [])
    stray = side_traffic.unplanned(traffic, planned)
    if stray:
        out.append(f"the MPI sides gave accounts of {len(stray)} case(s) the job never planned (the side names the "
                   "cases its program tells it of)")
    if channels.dropped:
        out.append(f"the job wrote {channels.bytes} bytes of records, past the {rec.MAX_FILE_BYTES} a job of the kit "
                   "writes at most")
    if records.malformed:
        out.append(f"{records.malformed} line(s) the ranks wrote were no record of the kit's format")
    plan = records.plan or []
    ranks_of = {case: run.ranks for case in planned for run in table.all_runs() if table.matches(run.filter, case)}
    out += side_traffic.job_problems(traffic, plan, ranks_of, complete=stopped is None and reported_all(records))
    return out


def reported_all(records: rec.Records) -> bool:
    """Whether every case of the job's plan has a result."""
    reported = {r["case"] for r in records.results}
    return records.plan is not None and all(c in reported for c in records.plan)


def run_job(launch: Launch, gtest_filter: str, tally: JobTally) -> Job:
    """Starts one job on the cases `gtest_filter` selects and waits for it;
    nothing the job started outlives it."""
    channels = Channels(launch.results_dir, launch.ranks, shared=launch.results_dir is not None)
    lines = None
    try:
        started = time.monotonic()
        oom_before = host_limits.oom_kills()
        if launch.hidden_salt is not None:  # to the ranks' MPI sides, never to the programs
            channels.offer_salt(launch.hidden_salt)
        proc = _start(launch, gtest_filter, channels.dir)
        tap = OutputTap(proc.stdout) if launch.capture else None
        tally.launches += 1
        stopped = _wait(proc, channels, launch)
        kill_session(proc)
        tally.lingered += bool(stopped and stopped.startswith(AFTER_LAST_CASE))
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
        traffic = side_traffic.parse(channels.side_lines)
        if tally.observed_traffic is not None:
            for case, accounts in traffic.accounts.items():
                tally.observed_traffic.setdefault(case, {}).update(accounts)
        if tally.observed is not None:
            for case, values in records.values.items():
                tally.observed.setdefault(case, {}).update(values)
        anomalies = _anomalies(records, traffic, channels, stopped)
        tally.integrity += anomalies
        for plan in records.plans[:1]:  # the harness's code, in the kit's words: a job without the filter is noted
            code = plan.get("syscall_filter", "on")
            if code != "on" and rec.FILTER_STATES[code] not in tally.unfiltered:
                tally.unfiltered.append(rec.FILTER_STATES[code])
        return Job(records, stopped, proc.returncode, time.monotonic() - started,
                   launch.scale() * launch.case_share, launch.calibrated(), traffic, anomalies)
    finally:
        if lines is None:
            channels.close()
