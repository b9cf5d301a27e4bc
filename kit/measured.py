"""Running a command measured: its CPU time (the compiler's back end
included), a CPU limit, a wall-clock limit, and a stall limit, past which
a command that takes no CPU (it waits for a pipe, a device) is stopped. The compiles
of kit/build.py and the calibration's probe (kit/calibration.py) run so.
"""
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import List, Optional

from kit.processes import kill_all, session_members

OUTPUT_BYTES = 1 << 20  # of a tool's messages, kept; the rest is read and dropped


@dataclass
class Ran:
    """A command that ended: its status, its messages, and the CPU seconds
    it and every process it waited for took."""
    status: int
    output: str
    cpu: float


class RanPastCpu(Exception):
    """The command's processes took their CPU limit and were ended here,
    by the same measure as `Ran.cpu` (the kernel's own limit is a backstop
    behind it: under load its tick-sampled clock ran ahead, and the driver
    reports its back end's signal only in words, which a handin can write)."""
    def __init__(self, cpu: float):
        super().__init__(f"ran past its CPU limit ({cpu:.2f} s)")
        self.cpu = cpu


CPU_LOOK_SECONDS = 0.1  # how often a command's CPU is read against its limit
def session_cpu(sid: int) -> float:
    """CPU seconds the live processes of session `sid` have taken, with
    what their reaped children took (the compiler driver waits for cc1plus)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in session_members(sid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15]) / tick  # utime, stime, cutime, cstime
        except (OSError, ValueError, IndexError):
            continue
    return total


def run_measured(cmd: List[str], timeout: float, stall: Optional[float] = None, cpu_limit: Optional[float] = None,
                 **popen) -> Ran:
    """Runs `cmd` in a session of its own; past `timeout` s, or after
    `stall` s in which its processes took no CPU (it waits for something:
    a pipe, a device), every process of that session is killed (nothing
    else: a compile beside it goes on) and TimeoutExpired is raised; once
    they took `cpu_limit` s of CPU, they are killed and RanPastCpu is
    raised. The CPU time comes from wait4, so it counts the compiler's
    back end (cc1plus), which the driver waits for."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, **popen)
    kept = bytearray()

    def drain() -> None:
        while True:
            chunk = proc.stdout.read(1 << 16)
            if not chunk:
                return
            kept.extend(chunk[:max(0, OUTPUT_BYTES - len(kept))])

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    begun = time.monotonic()
    end, pause = begun + timeout, 0.002
    look_every = CPU_LOOK_SECONDS if cpu_limit is not None else 1.0
    progress_at, progress_cpu, next_look = begun, 0.0, begun + look_every
    timed_out, past_cpu = False, None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if (stall is not None or cpu_limit is not None) and now >= next_look:
            next_look = now + look_every
            cpu = session_cpu(proc.pid)
            if cpu > progress_cpu + 0.05:
                progress_at, progress_cpu = now, cpu
            if cpu_limit is not None and cpu >= cpu_limit:
                past_cpu = cpu
        if past_cpu is not None or now > end or (stall is not None and now - progress_at > stall):
            timed_out = True
            kill_all(lambda: session_members(proc.pid))
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(pause)
        pause = min(0.05, pause * 2)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    reader.join(5)
    proc.stdout.close()
    if past_cpu is not None:
        raise RanPastCpu(max(past_cpu, usage.ru_utime + usage.ru_stime))
    if timed_out:
        raise subprocess.TimeoutExpired(cmd, time.monotonic() - begun)
    return Ran(proc.returncode, kept.decode("utf-8", errors="replace"), usage.ru_utime + usage.ru_stime)
