"""Run test cases of the kit's test binary under MPI and collect one outcome
per case, whatever the student code does.

The binary appends JSON lines to a results file (tests/mpi_test_main.cpp):
a plan, then a result per case; a rank that fails writes its messages at
once, and a case that hangs, crashes or exits leaves an abort record. When a
job ends before its plan is done, the case in flight is failed with what the
ranks recorded, and a new job runs the cases after it. Outcomes come only
from that file, never from the program's output, and a plan or a result
counts only if it carries the seal of the job's key (tests/results_seal.h),
which this module writes to mpirun's standard input and nowhere else.
Failure and abort records need no seal: they can only fail a case.
"""
import hmac
import json
import os
import re
import secrets
import threading
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

KIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KITRUN = os.path.join(KIT_DIR, "tools", "kitrun")


@dataclass
class CaseOutcome:
    case: str
    passed: bool
    seconds: float = 0.0
    failures: List[Dict] = field(default_factory=list)  # {"rank": r or None, "message": text}
    ended_job: bool = False  # the job died in this case, so the binary never reported it

    def summary(self, max_lines: int = 12) -> List[str]:
        """The failure messages, one line each, identical ones merged across ranks."""
        grouped: Dict[str, List] = {}
        for f in self.failures:
            grouped.setdefault(str(f["message"]), []).append(f.get("rank"))
        lines: List[str] = []
        for message, ranks in grouped.items():
            known = sorted(r for r in ranks if r is not None)
            who = ("[rank %s] " if len(known) == 1 else "[ranks %s] ") % ",".join(map(str, known)) if known else ""
            for line in message.splitlines() or [""]:
                lines.append(who + line)
        if len(lines) > max_lines:
            lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"]
        return lines


@dataclass
class Launch:
    """How to start one job; the grader swaps in its sandboxed prefix."""
    binary: str
    ranks: int
    timeout: float
    prefix: List[str] = field(default_factory=lambda: [KITRUN])
    env: Optional[Dict[str, str]] = None
    capture: bool = False          # False: the job's output goes to ours
    extra_args: List[str] = field(default_factory=list)
    results_dir: Optional[str] = None  # where the job may write its results file
    cwd: Optional[str] = None
    after_job: Optional[Callable[[], None]] = None   # e.g. end every process of the sandbox user


@dataclass
class JobLog:
    output: str = ""               # captured stdout+stderr of all jobs (capture=True)
    launches: int = 0
    error: Optional[str] = None    # the binary could not run at all
    forged: int = 0                # plan or result records whose seal did not verify
    dropped: int = 0               # bytes of output not kept (see OutputTap)


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


SEAL = re.compile(r',"mac":"([0-9a-f]{64})"}$')
TRUSTED_EVENTS = ("plan", "result")


def unseal(line: str, key: bytes) -> Optional[str]:
    """The record without its seal if the seal verifies, else None."""
    m = SEAL.search(line)
    if not m:
        return None
    record = line[:m.start()] + "}"
    expected = hmac.new(key, record.encode("utf-8", errors="surrogateescape"), "sha256").hexdigest()
    return record if hmac.compare_digest(expected, m.group(1)) else None


def _read_records(path: str, key: bytes, log: JobLog) -> List[Dict]:
    records = []
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                line = line.rstrip("\n")
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a torn or foreign line proves nothing
                if not isinstance(record, dict):
                    continue
                if record.get("event") in TRUSTED_EVENTS:
                    sealed = unseal(line, key)
                    if sealed is None:
                        log.forged += 1
                        continue
                    record = json.loads(sealed)
                records.append(record)
    except OSError:
        pass
    return records


def processes(select: Callable[[str], bool], file: str = "stat") -> List[int]:
    """Pids whose /proc/<pid>/<file> text `select` accepts."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/{file}") as f:
                if select(f.read()):
                    found.append(int(entry))
        except (OSError, ValueError, IndexError, StopIteration):
            continue
    return found


def _session_members(sid: int) -> List[int]:
    """Processes of session `sid` (mpirun puts each rank in a process group
    of its own, but all stay in the session the job was started in)."""
    return processes(lambda stat: int(stat.rsplit(")", 1)[1].split()[3]) == sid)  # state, ppid, pgrp, session


def kill_all(find: Callable[[], List[int]], rounds: int = 100) -> None:
    """SIGKILLs what `find` lists until it lists nothing: a process may start
    another while we look."""
    for attempt in range(rounds):
        pids = find()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01 if attempt < 20 else 0.05)


def kill_job(proc: subprocess.Popen) -> None:
    """Ends the job: mpirun, every rank, and anything they started in its session."""
    sid = proc.pid  # start_new_session=True: the job's session id is mpirun's pid

    def members() -> List[int]:
        found = _session_members(sid)
        return found + [proc.pid] if proc.poll() is None and proc.pid not in found else found

    kill_all(members)
    proc.wait()


def _start(launch: Launch, gtest_filter: str, results: str, key: bytes) -> subprocess.Popen:
    cmd = launch.prefix + ["-n", str(launch.ranks), launch.binary,
                           f"--gtest_filter={gtest_filter}", f"--results={results}"] + launch.extra_args
    env = dict(launch.env if launch.env is not None else os.environ, KIT_RESULTS_KEY="stdin")
    proc = subprocess.Popen(
        cmd, env=env, cwd=launch.cwd, start_new_session=True, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if launch.capture else None,
        stderr=subprocess.STDOUT if launch.capture else None)
    try:
        proc.stdin.write(key.hex().encode() + b"\n")
        proc.stdin.close()
    except OSError:
        pass  # the job died at once; its missing plan says so
    proc.stdin = None
    return proc


STARTUP_SECONDS = 30.0   # from launch to the plan record: MPI start-up and static initializers
QUIET_SECONDS = 150.0    # with no record at all: longer than any case's own limit (120 s)


def _wait(proc: subprocess.Popen, results: str, launch: Launch) -> Optional[str]:
    """Waits for the job to end; returns why it had to be stopped, or None.
    Besides the job's time limit, a job that writes no record for too long
    is stuck where no watchdog reaches (before main, or with the watchdog
    itself blocked), and waiting out the whole limit would only cost time."""
    started = time.monotonic()
    last_size, last_change = 0, started
    while True:
        elapsed = time.monotonic() - started
        try:
            proc.wait(timeout=min(0.1, 0.005 + elapsed / 20))
            return None
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        try:
            size = os.path.getsize(results)
        except OSError:
            size = last_size
        if size != last_size:
            last_size, last_change = size, now
        if size == 0 and now - started > STARTUP_SECONDS:
            return (f"the test program did not start its cases within {STARTUP_SECONDS:.0f} s "
                    "(code that runs before main and never returns?)")
        if now - last_change > QUIET_SECONDS:
            return f"the job wrote no result for {QUIET_SECONDS:.0f} s"
        if now - started > launch.timeout:
            return f"the job reached its time limit of {launch.timeout:.0f} s"


def run_cases(launch: Launch, gtest_filter: str, log: Optional[JobLog] = None,
              on_outcome=None) -> Dict[str, CaseOutcome]:
    """Runs every case the filter selects and returns case -> outcome."""
    log = log if log is not None else JobLog()
    outcomes: Dict[str, CaseOutcome] = {}
    pending_filter = gtest_filter
    plan_seen: Optional[List[str]] = None
    while pending_filter:
        fd, results = tempfile.mkstemp(prefix="kit-results-", suffix=".jsonl", dir=launch.results_dir)
        os.close(fd)
        if launch.results_dir:
            os.chmod(results, 0o666)  # the sandbox user's job writes it
        try:
            started = time.monotonic()
            key = secrets.token_bytes(32)  # a fresh key per job: no record can be replayed into another
            proc = _start(launch, pending_filter, results, key)
            tap = OutputTap(proc.stdout) if launch.capture else None
            log.launches += 1
            stopped = _wait(proc, results, launch)
            timed_out = stopped is not None
            kill_job(proc)  # nothing the job started may outlive it
            if launch.after_job:
                launch.after_job()
            if tap:
                log.output += tap.finish()
                log.dropped += tap.dropped
            records = _read_records(results, key, log)
        finally:
            try:
                os.unlink(results)
            except OSError:
                pass  # the job may have removed it; its cases then have no result

        plans = [r for r in records if r.get("event") == "plan"]
        if not plans:
            log.error = stopped or f"the test program did not start its cases (exit status {proc.returncode})"
            break
        plan = [str(c) for c in plans[0].get("cases", [])]
        if plan_seen is None:
            plan_seen = plan
        failures_by_case: Dict[str, List[Dict]] = {}
        for r in records:
            if r.get("event") in ("rank_failure", "abort"):
                text = r.get("message") if r.get("event") == "rank_failure" else r.get("why")
                failures_by_case.setdefault(str(r.get("case")), []).append(
                    {"rank": r.get("rank"), "message": str(text)})
        for r in records:
            if r.get("event") == "result" and r.get("case") in plan and r.get("case") not in outcomes:
                ok = r.get("status") == "pass" and not r.get("failures")
                outcome = CaseOutcome(r["case"], ok, float(r.get("seconds", 0.0)),
                                      [] if ok else list(r.get("failures", [])))
                outcomes[outcome.case] = outcome
                if on_outcome:
                    on_outcome(outcome)
        missing = [c for c in plan if c not in outcomes]
        if not missing:
            break
        in_flight = missing[0]
        failures = failures_by_case.get(in_flight, [])
        elapsed = time.monotonic() - started
        if timed_out:
            failures.append({"rank": None, "message":
                             f"{stopped}: stopped after {elapsed:.0f} s without finishing this case "
                             "(a deadlock or an endless loop?)"})
        elif not failures:
            failures.append({"rank": None, "message":
                             f"the job ended during this case with exit status {proc.returncode} "
                             "and no result (a rank exited early or was killed?)"})
        outcome = CaseOutcome(in_flight, False, elapsed, failures, ended_job=True)
        outcomes[in_flight] = outcome
        if on_outcome:
            on_outcome(outcome)
        pending_filter = ":".join(missing[1:])
    return outcomes


def default_build_dir() -> str:
    return os.environ.get("KIT_BUILD", os.path.join(KIT_DIR, "build"))


def test_binary(build_dir: str, impl: str) -> str:
    return os.path.join(build_dir, impl, "kit_tests")


if __name__ == "__main__":
    sys.exit("partrun.py is a library; use tools/run_parts.py")
