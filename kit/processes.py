"""Finding and ending processes by what /proc says of them: the part runner
ends a job's whole session, the grader's sandbox every process of its user."""
import os
import signal
import subprocess
import time
from typing import Callable, List


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


def session_members(sid: int) -> List[int]:
    """Live processes of session `sid` (mpirun puts each rank in a process
    group of its own, but all stay in the session the job was started in).
    A zombie is left out: it runs nothing and holds nothing, and its reaper
    may be a slow init (one here takes seconds), which no kill can hurry."""
    def member(stat: str) -> bool:
        state, _ppid, _pgrp, session = stat.rsplit(")", 1)[1].split()[:4]
        return int(session) == sid and state != "Z"
    return processes(member)


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


def kill_session(proc: subprocess.Popen) -> None:
    """Ends a process started with start_new_session=True and everything it
    started in its session (mpirun, every rank, what they started)."""
    sid = proc.pid

    def members() -> List[int]:
        found = session_members(sid)
        return found + [proc.pid] if proc.poll() is None and proc.pid not in found else found

    kill_all(members)
    proc.wait()
