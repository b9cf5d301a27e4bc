"""Run test cases of the kit's test binary under MPI and collect one outcome
per case, whatever the student code does.

The binary appends JSON lines to a results file (tests/mpi_test_main.cpp):
a plan, then a result per case; a rank that fails writes its messages at
once, and a case that hangs, crashes or exits leaves an abort record. When a
job ends before its plan is done, the case in flight is failed with what the
ranks recorded, and a new job runs the cases after it. Outcomes come only
from that file, never from the program's output.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

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


@dataclass
class JobLog:
    output: str = ""               # captured stdout+stderr of all jobs (capture=True)
    launches: int = 0
    error: Optional[str] = None    # the binary could not run at all


def _read_records(path: str) -> List[Dict]:
    records = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue  # a torn or foreign line proves nothing
    except OSError:
        pass
    return records


def _session_members(sid: int) -> List[int]:
    """Processes of session `sid` (mpirun puts each rank in a process group
    of its own, but all stay in the session the job was started in)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # state, ppid, pgrp, session, ...
            members.append(int(entry))
    return members


def kill_job(proc: subprocess.Popen) -> None:
    """Ends the job: mpirun, every rank, and anything they started in its session."""
    sid = proc.pid  # start_new_session=True: the job's session id is mpirun's pid
    for attempt in range(50):
        members = _session_members(sid) if os.path.isdir("/proc") else []
        if proc.poll() is None and proc.pid not in members:
            members.append(proc.pid)
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02 if attempt < 10 else 0.1)
    proc.wait()


def _start(launch: Launch, gtest_filter: str, results: str) -> subprocess.Popen:
    cmd = launch.prefix + ["-n", str(launch.ranks), launch.binary,
                           f"--gtest_filter={gtest_filter}", f"--results={results}"] + launch.extra_args
    return subprocess.Popen(
        cmd, env=launch.env, start_new_session=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if launch.capture else None,
        stderr=subprocess.STDOUT if launch.capture else None)


def run_cases(launch: Launch, gtest_filter: str, log: Optional[JobLog] = None,
              on_outcome=None) -> Dict[str, CaseOutcome]:
    """Runs every case the filter selects and returns case -> outcome."""
    log = log if log is not None else JobLog()
    outcomes: Dict[str, CaseOutcome] = {}
    pending_filter = gtest_filter
    plan_seen: Optional[List[str]] = None
    while pending_filter:
        fd, results = tempfile.mkstemp(prefix="kit-results-", suffix=".jsonl")
        os.close(fd)
        try:
            started = time.monotonic()
            proc = _start(launch, pending_filter, results)
            log.launches += 1
            try:
                out, _ = proc.communicate(timeout=launch.timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                kill_job(proc)
                out, _ = proc.communicate()
                timed_out = True
            kill_job(proc)  # nothing the job started may outlive it
            if out:
                log.output += out.decode("utf-8", errors="replace")
            records = _read_records(results)
        finally:
            os.unlink(results)

        plans = [r for r in records if r.get("event") == "plan"]
        if not plans:
            log.error = (f"the test program did not start its cases (exit status {proc.returncode}"
                         + (", killed after the time limit" if timed_out else "") + ")")
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
                             f"the job was stopped after {elapsed:.0f} s without finishing this case "
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
