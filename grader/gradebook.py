"""A batch's files, each written whole: the gradebook (one row per handin)
and the results and reports beside it, which a kill at any moment leaves
with their old or their new content (grader/batches.py grades into them,
grader/rescore.py scores them again).
"""
import csv
import io
import json
import os
import threading
from typing import Dict, List

from kit import parts as table
from kit.report import fmt


def write_atomically(path: str, text: str) -> None:
    """The file has either its old or its new content, whenever the grader
    is killed: a temporary file, flushed to disk, then renamed over it."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_gradebook(path: str, states: List[Dict]) -> None:
    """One row per handin: its parts, total and status, the maximum it was
    scored out of, and the stamps of the kit that ran it and of the course
    that scored it (kit/parts.py, COURSE_STAMP); "?" where a result kept none."""
    keys = [p.key for p in table.PARTS]
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["handin"] + keys + ["total", "max", "status", "kit", "course"])
    for state in sorted(states, key=lambda s: s["handin"]):
        writer.writerow([state["handin"]] + [fmt(state["scores"].get(k, 0.0)) for k in keys] +
                        [fmt(state["total"]), state.get("max", "?"), state["status"], state.get("kit", "?"),
                         state.get("course", "?")])
    write_atomically(path, text.getvalue())


def write_json_atomically(path: str, data) -> None:
    write_atomically(path, json.dumps(data, indent=2) + "\n")
