"""What every row of `make bench` (staff/bench.py) is made with: a command
run and timed, and the table of rows with their medians.
"""
import statistics
import subprocess
import time
from typing import Dict, List, Optional, Tuple

from kit.paths import KIT_DIR as KIT


class BenchError(Exception):
    pass


def run(cmd: List[str], timeout: float = 600, env: Optional[Dict] = None, cwd: str = KIT) -> Tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, env=env)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise BenchError(f"`{' '.join(cmd)}` failed with status {proc.returncode}:\n{tail}")
    return seconds, proc.stdout


class Table:
    def __init__(self, repeat: int):
        self.repeat = repeat
        self.rows: List[Dict] = []
        self.targets: List[Tuple[str, str, float]] = []  # (row, "<=" or ">=", bound) found while measuring

    def add(self, what: str, values: List[float], unit: str, note: str = "") -> float:
        med = statistics.median(values)
        self.rows.append({"row": what, "median": med, "min": min(values), "max": max(values), "unit": unit,
                          "note": note})
        print(f"  {what:<40} {med:>10.3f} {min(values):>10.3f} {max(values):>10.3f}  {unit:<11} {note}", flush=True)
        return med

    def timed(self, what: str, cmd: List[str], note: str = "", **kw) -> float:
        return self.add(what, [run(cmd, **kw)[0] for _ in range(self.repeat)], "s", note)
