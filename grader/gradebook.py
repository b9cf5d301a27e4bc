"""A batch's files, each written whole: the gradebook (one row per handin),
the results and reports beside it and Canvas's import, which a kill at any
moment leaves with their old or their new content (grader/batches.py grades
into them, grader/rescore.py scores them again).
"""
import csv
import io
import json
import os
import re
import sys
import threading
from typing import Dict, List, Tuple

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


def holds(path: str, text: str) -> bool:
    try:
        with open(path, newline="") as f:
            return f.read() == text
    except (OSError, UnicodeDecodeError):
        return False


def write_all_atomically(texts: Dict[str, str]) -> None:
    """Many files (a class's results and reports), each with its old or its
    new content whenever the grader is killed, as write_atomically leaves
    one: every new file written, then all flushed to disk by one sync (a
    sync each took seconds for a class), then each renamed over its old
    one. A file that holds its text already is left alone."""
    pending = []
    for path, text in texts.items():
        if holds(path, text):
            continue
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", newline="") as f:
            f.write(text)
        pending.append((tmp, path))
    if pending:
        os.sync()
    for tmp, path in pending:
        os.replace(tmp, path)


def rows_on_disk(path: str) -> List[Dict[str, str]]:
    """The gradebook's rows as it is now; none when there is no readable one."""
    try:
        with open(path, newline="") as f:
            return [r for r in csv.DictReader(f) if r.get("handin")]
    except (OSError, csv.Error, UnicodeDecodeError):
        return []


def write_gradebook(path: str, states: List[Dict]) -> List[str]:
    """One row per handin: its parts, total and status, the maximum it was
    scored out of, and the stamps of the kit that ran it and of the course
    that scored it (kit/parts.py, COURSE_STAMP); "?" where a result kept none.
    A row of the gradebook on disk that no result holds (the results folder
    lost or pruned by hand) is written again as it was, never dropped: its
    handins are returned, for the caller to name."""
    keys = [p.key for p in table.PARTS]
    columns = ["handin"] + keys + ["total", "max", "status", "kit", "course"]
    graded = {s["handin"] for s in states}
    orphans = [r for r in rows_on_disk(path) if r["handin"] not in graded]
    rows = [[state["handin"]] + [fmt(state["scores"].get(k, 0.0)) for k in keys] +
            [fmt(state["total"]), state.get("max", "?"), state["status"], state.get("kit", "?"),
             state.get("course", "?")] for state in states]
    rows += [[r.get(c) or "" for c in columns] for r in orphans]
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(columns)
    writer.writerows(sorted(rows, key=lambda r: r[0]))
    write_atomically(path, text.getvalue())
    return [r["handin"] for r in orphans]


def write_json_atomically(path: str, data) -> None:
    write_atomically(path, json.dumps(data, indent=2) + "\n")


# ---- Canvas ----

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def write_canvas(states: List[Dict], roster_path: str, out: str, assignment: str) -> int:
    """A CSV that Canvas's gradebook import takes: the student columns of
    Canvas's own gradebook export (the roster), then one assignment column
    with the total. A handin is matched to a student by its name (the file's
    stem) against SIS Login ID, SIS User ID or ID, in that order; a handin
    that matches no student is listed (and written to OUT.unmatched.txt),
    never dropped silently. `states`: every result the gradebook holds."""
    try:
        with open(roster_path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except (OSError, csv.Error) as e:
        print(f"grade: cannot read the roster {roster_path}: {e}", file=sys.stderr)
        return 2
    if not rows or "Student" not in rows[0] or not any(c in rows[0] for c in CANVAS_IDENTITY[1:4]):
        print(f"grade: {roster_path} is not a Canvas gradebook export (it needs the columns Student and one of "
              "ID, SIS User ID, SIS Login ID)", file=sys.stderr)
        return 2
    students = [r for r in rows if r.get("Student", "").strip() and "Points Possible" not in r.get("Student", "")]
    index: Dict[str, Dict] = {}
    for column in ("ID", "SIS User ID", "SIS Login ID"):  # later columns win: login first
        for r in students:
            if r.get(column, "").strip():
                index[r[column].strip().lower()] = r
    text = io.StringIO()
    writer = csv.writer(text)
    present = [c for c in CANVAS_IDENTITY if c in rows[0]]
    if assignment not in rows[0]:
        # Canvas's import makes a new assignment of a column it does not know.
        known = [c for c in rows[0] if re.search(r"\(\d+\)$", c or "")]
        print(f"grade: the roster has no column {assignment!r}: Canvas will make a new assignment of that name; to "
              f"fill an existing one, name its column as the export does (--assignment)" +
              (f", one of: {', '.join(known)}" if known else ""))
    writer.writerow(present + [assignment])
    unmatched: List[Tuple[str, str]] = []
    errors: List[str] = []
    matched = set()
    for state in sorted(states, key=lambda s: s["handin"]):
        stem = os.path.splitext(state["handin"])[0].lower()
        student = index.get(stem)
        if student is None:
            unmatched.append((state["handin"], fmt(state["total"])))
            continue
        matched.add(id(student))
        # A grader error is never a grade: its cell stays empty, and it is named below.
        failed = state.get("status") == "grader error"
        if failed:
            errors.append(state["handin"])
        writer.writerow([student.get(c, "") for c in present] + ["" if failed else fmt(state["total"])])
    write_atomically(out, text.getvalue())
    no_handin = [s["Student"] for s in students if id(s) not in matched]
    print(f"grade: Canvas import {out}: {len(matched)} student(s); {len(no_handin)} on the roster without a handin")
    if errors:
        print(f"grade: {len(errors)} handin(s) ended in a grader error, their cells left empty (grade them again: "
              f"grader/grade --errors GRADEBOOK says why): " + ", ".join(errors))
    if not unmatched and os.path.exists(out + ".unmatched.txt"):
        os.unlink(out + ".unmatched.txt")  # an earlier run's list, which no longer holds
    if unmatched:
        write_atomically(out + ".unmatched.txt", "".join(f"{h},{t}\n" for h, t in unmatched))
        print(f"grade: {len(unmatched)} handin(s) match no student of the roster, listed in {out}.unmatched.txt: "
              + ", ".join(h for h, _ in unmatched))
    return 0


def list_errors(gradebook: str) -> int:
    """Every grader error of a batch, with why (grader/grade --errors)."""
    state_dir = os.path.splitext(os.path.abspath(gradebook))[0] + ".results"
    try:
        with open(gradebook, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("status") == "grader error"]
    except OSError as e:
        print(f"grade: cannot read {gradebook}: {e}", file=sys.stderr)
        return 2
    for r in rows:
        print(r["handin"])
        try:
            with open(os.path.join(state_dir, os.path.splitext(r["handin"])[0] + ".json")) as f:
                for note in json.load(f).get("notes", []):
                    print(f"    {note.splitlines()[0]}")
        except (OSError, ValueError):
            print("    (no saved result beside the gradebook)")
    print(f"{len(rows)} grader error(s) in {gradebook}")
    return 0
