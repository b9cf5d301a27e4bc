"""Re-scoring a batch's gradebook under the course as it is now: its points
and what students see (course.toml), from the results a batch keeps beside
its gradebook, in seconds and without running any handin:

  grader/grade --rescore out/gradebook.csv [--canvas out/canvas.csv --roster export.csv]

A batch keeps, per handin (out/gradebook.results/NAME.json), each part's
case counts (public and hidden, passed and run) and its failing cases with
their messages: all that a part's score (Part.score_counts, kit/part_table.py)
and a report need. A re-score rewrites each result's scores, its maximum
and its course stamp, its report beside the gradebook, the gradebook, and
Canvas's import when --canvas and --roster are given. A part the course no
longer grades leaves the scores, the total and the report, its file with it.
A result it can't re-score (kept by an older kit, or missing a part the
course now grades, whose cases never ran) keeps its row, and the command
that grades it again is named. Every gradebook row carries its maximum and
stamps, and a batch that finds rows of another scale says so
(scale_note), so a gradebook never mixes scales silently.
"""
import glob
import json
import os
import shlex
import sys
import time
from dataclasses import asdict
from fnmatch import fnmatchcase
from typing import Dict, List, Optional, Tuple

from grader import reports
from grader.gradebook import write_all_atomically, write_canvas, write_gradebook
from grader.grades import Grade, PartResult
from kit import parts as table
from kit.report import fmt

GRADER = os.path.join("grader", "grade")
NOT_RESULTS = ("regrade.json",)  # a batch's own files beside the results


def kept(grade: Grade, handin: str) -> Dict:
    """What a batch keeps of a grade besides its scores, for a re-score: the
    scale it was scored on, each part's counts and failures, the report's
    other facts, and where the handin was (to name the command that grades
    it again)."""
    return {"max": table.TOTAL_POINTS, "course": table.COURSE_STAMP, "path": os.path.abspath(handin),
            "parts": [asdict(p) for p in grade.parts], "files": grade.files, "rejected": grade.rejected}


def results_of(gradebook: str) -> List[Tuple[str, Dict]]:
    state_dir = os.path.splitext(os.path.abspath(gradebook))[0] + ".results"
    found = []
    for path in sorted(glob.glob(os.path.join(state_dir, "*.json"))):
        if os.path.basename(path) in NOT_RESULTS:
            continue
        try:
            with open(path) as f:
                state = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and "handin" in state:
            found.append((path, state))
    return found


def regrade_command(gradebook: str, states: List[Dict]) -> str:
    folders = sorted({os.path.dirname(s["path"]) for s in states if s.get("path")})
    batch = folders[0] if len(folders) == 1 else "HANDINS"
    return shlex.join([GRADER, "--batch", batch, "--csv", gradebook, "--regrade"])


def why_not(state: Dict) -> Optional[str]:
    """Why a result can't be re-scored, or None."""
    if "parts" not in state:
        return "kept by an older kit, without its case counts"
    missing = [p.key for p in table.PARTS if p.key not in {k["key"] for k in state["parts"]}]
    if missing and state.get("status") == "graded":
        return f"the course now grades {', '.join(missing)}, whose cases never ran for it"
    return None


def scored(state: Dict) -> Grade:
    """The grade of a kept result under this course's parts and points."""
    kept_parts = {k["key"]: k for k in state["parts"]}
    parts = []
    for part in table.PARTS:
        k = kept_parts.get(part.key, {"passed": 0, "cases": 0, "hidden_passed": 0, "hidden_cases": 0,
                                      "failures": [], "unconfirmed": False})
        gated = any(fnmatchcase(f["case"], g) for f in k["failures"] for g in part.gates)
        points = part.score_counts(k["passed"] - k["hidden_passed"], k["cases"] - k["hidden_cases"],
                                   k["hidden_passed"], k["hidden_cases"], gated)
        parts.append(PartResult(part.key, part.title, points, part.points, k["passed"], k["cases"],
                                failures=k["failures"], hidden_cases=k["hidden_cases"],
                                hidden_passed=k["hidden_passed"], unconfirmed=k["unconfirmed"]))
    # A file of a part the course no longer grades was not graded under this
    # course: the report names only the graded parts' files.
    files = {name: f for name, f in state.get("files", {}).items() if name in table.IMPL_FILES}
    return Grade(state["handin"], status=state["status"], parts=parts, files=files,
                 rejected=state.get("rejected", []), notes=list(state.get("notes", [])),
                 seconds=state.get("seconds", 0.0))


def merged(old: Optional[Dict], grade: Grade, keys: List[str]) -> Grade:
    """A grading of only the parts `keys` (a batch's regrade after their
    cases changed) put together with the kept result of the other parts, and
    scored as one grade under this course. Without a kept result to join,
    the grading as it is."""
    if not old or "parts" not in old:
        return grade
    parts = {k["key"]: k for k in old["parts"]}
    parts.update({p.key: asdict(p) for p in grade.parts if p.key in keys})
    note = (f"only the cases of {', '.join(keys)} ran again (their cases changed since this handin was graded); "
            "the other parts' results are kept")
    state = dict(old, parts=[parts[p.key] for p in table.PARTS if p.key in parts], files=grade.files,
                 rejected=grade.rejected, status=grade.status, notes=grade.notes + [note], seconds=grade.seconds)
    g = scored(state)
    g.limits, g.steps, g.sandbox, g.output, g.jobs = grade.limits, grade.steps, grade.sandbox, grade.output, grade.jobs
    return g


def rescore(gradebook: str, show_hidden: bool = False, canvas: Optional[str] = None, roster: Optional[str] = None,
            assignment: str = "Distributed training") -> int:
    """Every output a gradebook's results make, under the course as it is
    now: the results' scores, the reports, the gradebook and, given `canvas`
    and `roster`, Canvas's import. Runs no handin."""
    started = time.monotonic()
    found = results_of(gradebook)
    if not found:
        print(f"grade: no results kept beside {gradebook} ({os.path.splitext(gradebook)[0]}.results/*.json): a "
              "batch (grader/grade --batch) keeps them; nothing to re-score", file=sys.stderr)
        return 2
    out_dir = os.path.dirname(os.path.abspath(gradebook))
    refused = [(state, why_not(state)) for _, state in found if why_not(state)]
    changed, same, texts = 0, 0, {}
    for path, state in found:
        if why_not(state):
            continue
        g = scored(state)
        new = {"scores": g.scores(), "total": g.total, "max": table.TOTAL_POINTS, "course": table.COURSE_STAMP}
        if all(state.get(k) == v for k, v in new.items()):
            same += 1
        else:
            changed += 1
        state.update(new)
        g.notes.append(f"re-scored under course {table.COURSE_STAMP} (grader/grade --rescore): no case ran again")
        stem = os.path.splitext(os.path.basename(path))[0]
        texts[os.path.join(out_dir, stem + ".report.txt")] = \
            reports.human_report(g, show_hidden) + "\n" + reports.autolab_line(g) + "\n"
        texts[path] = json.dumps(state, indent=2) + "\n"
    write_all_atomically(texts)
    states = [s for _, s in found]
    orphans = write_gradebook(os.path.abspath(gradebook), states)
    status = write_canvas(states, roster, canvas, assignment) if canvas else 0
    print(f"grade: re-scored {changed + same} handin(s) out of {table.TOTAL_POINTS} (course {table.COURSE_STAMP}): "
          f"{changed} changed, {same} unchanged; no handin ran; {time.monotonic() - started:.1f} s. Gradebook "
          f"{gradebook}, reports beside it" + (f", Canvas's import {canvas}" if canvas and not status else ""))
    if orphans:
        print(f"grade: {len(orphans)} row(s) of {gradebook} have no kept result and stay as they were: "
              f"{', '.join(orphans)}")
    if status:
        return status
    if refused:
        for state, why in refused:
            print(f"grade: {state['handin']} keeps its row ({fmt(state.get('total', 0))} / {state.get('max', '?')}): "
                  f"{why}")
        print(f"grade: {len(refused)} handin(s) could not be re-scored; grade them again: "
              f"{regrade_command(gradebook, [s for s, _ in refused])}")
        return 1
    return 0


def scale_note(gradebook: str, states: List[Dict]) -> Optional[str]:
    """What a batch says when its gradebook holds rows of another scale
    than this course's, with the commands that make it one scale again."""
    other = [s for s in states if s.get("course") != table.COURSE_STAMP]
    if not other:
        return None
    maxima = sorted({str(s.get("max", "unknown")) for s in other})
    return (f"grade: {len(other)} of {len(states)} row(s) of {gradebook} were scored under another course (out of "
            f"{' or '.join(maxima)}), not this one ({table.TOTAL_POINTS} points, course {table.COURSE_STAMP}): "
            f"re-score them in seconds, running no handin: {shlex.join([GRADER, '--rescore', gradebook])}; or "
            f"grade them again: {regrade_command(gradebook, states)}")
