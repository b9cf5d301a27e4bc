"""The five forms of a grade (grades.Grade): the table graders and
students read, the Autolab score line, Gradescope's results.json,
PrairieLearn's results.json and the full JSON report; what students see
of failing cases follows the visibility policy (policy.py).
"""
import json
from typing import Dict, List, Optional, Tuple

from grader import policy
from grader.grades import NOT_A_HANDIN, Grade, PartResult
from kit import parts as table
from kit.report import fmt


# How the top of a report says what happened to a file that was not compiled as handed in.
FILE_STATES = {"missing": "is missing", "does not compile": "does not compile",
               "refused by the static checks": "was refused by the static checks",
               "refused by the link check": "was refused by the link check"}


def stubbed(grade: Grade, part: PartResult) -> List[str]:
    """The part's files that were graded as their stubs."""
    files = next((x.files for x in table.PARTS if x.key == part.key), [])
    return [f for f in files if grade.files.get(f, {}).get("state", "compiled") != "compiled"]


def file_problems(grade: Grade) -> List[str]:
    """Each file that was not graded as handed in, said once: its state, the
    parts that ran with its stub instead, and its first errors or findings
    (the student's own file names and lines)."""
    out: List[str] = []
    for name, f in grade.files.items():
        state = f.get("state", "not graded")
        if state == "compiled":
            continue
        parts = [p.key for p in table.PARTS if name in p.files]
        out.append(f"{name} {FILE_STATES.get(state, state)}: graded as its stub, so every case of "
                   f"{', '.join(parts)} fails")
        details = f.get("findings") or (f.get("errors", "").splitlines() if state == "does not compile" else [])
        out += ["    " + line for line in details[:12]]
        if len(details) > 12:
            out.append(f"    ... ({len(details) - 12} more lines)")
    return out


def failure_text(part: PartResult, show_hidden: bool, grade: Optional[Grade] = None) -> List[str]:
    """A part's failing cases as the visibility policy (policy.py) lets
    students see them: names and messages, names, or counts only. A part
    that ran with a stub says so in one line (the top of the report says why)."""
    out: List[str] = []
    section = next(x.handout for x in table.PARTS if x.key == part.key)
    broken = stubbed(grade, part) if grade else []
    if broken and part.failures:
        return [f"  {part.key}: its cases ran with the stub of {', '.join(broken)} (see the top of the report)"
                f"   handout: {section}"]
    counted = {True: 0, False: 0}
    for f in part.failures:
        show = policy.for_case(f["hidden"], show_hidden).show
        if show in ("messages", "names"):
            out.append(f"  {part.key}: {f['case']}{' (hidden)' if f['hidden'] else ''}   handout: {section}")
            if show == "messages":
                out += [f"      {line}" for line in f["lines"]]
        elif show == "counts":
            counted[f["hidden"]] += 1
    for hidden, n in counted.items():
        if n:
            out.append(f"  {part.key}: {n} {'hidden' if hidden else 'public'} case{'s' if n > 1 else ''} failed"
                       f"   handout: {section}")
    return out


def case_counts(part: PartResult, show_hidden: bool) -> Tuple[int, int]:
    """(passed, cases) as the report shows them: without the hidden cases
    when the policy shows nothing of them."""
    if policy.for_case(True, show_hidden).show == "nothing":
        return part.passed - part.hidden_passed, part.cases - part.hidden_cases
    return part.passed, part.cases


def human_report(grade: Grade, show_hidden: bool = False) -> str:
    out = [f"handin: {grade.handin}   ({grade.status}, graded in {grade.seconds:.1f} s)"]
    for name, f in grade.files.items():
        if f.get("state") == "compiled":  # with what the checks only warned about
            out += [f"  {name}: compiled"] + ["      " + line for line in f.get("findings", [])[:12]]
    out += ["  " + line for line in file_problems(grade)]
    out += [f"  rejected: {r}" for r in grade.rejected]
    out += [f"  note: {n}" for n in grade.notes]
    out.append("")
    out.append(f"{'part':<16} {'points':>13}  {'cases':>7}  title")
    for p in grade.parts:
        passed, cases = case_counts(p, show_hidden)
        out.append(f"{p.key:<16} {fmt(p.points):>6} / {p.max_points:<4}  {passed:>3}/{cases:<3}  {p.title}")
    out.append(f"{'total':<16} {fmt(grade.total):>6} / {table.TOTAL_POINTS}")
    failing = [line for p in grade.parts for line in failure_text(p, show_hidden, grade)]
    if failing:
        out += ["", "failing cases:"] + failing
    return "\n".join(out)


def autolab_line(grade: Grade) -> str:
    return json.dumps({"scores": grade.scores(), "scoreboard": [round(grade.total, 2)]})


def gradescope_results(grade: Grade, show_hidden: bool = False) -> Dict:
    """Gradescope's results.json: per part a visible test with what the
    policy shows, and the failures' full messages in an after_due_date test
    where the policy defers them."""
    tests = []
    for p in grade.parts:
        passed, cases = case_counts(p, show_hidden)
        text = [f"{passed}/{cases} cases passed"] + [line.strip() for line in failure_text(p, show_hidden, grade)]
        tests.append({"name": f"{p.key}: {p.title}", "score": round(p.points, 2), "max_score": p.max_points,
                      "output": "\n".join(text), "visibility": "visible"})
        deferred = [f for f in p.failures if policy.for_case(f["hidden"], show_hidden).after_due_date
                    and not stubbed(grade, p)]
        if deferred:
            tests.append({"name": f"{p.key}: details of failing cases", "score": 0, "max_score": 0,
                          "output": "\n".join(f"FAIL {f['case']}\n" + "\n".join(f"    {l}" for l in f["lines"])
                                              for f in deferred),
                          "visibility": "after_due_date"})
    return {"score": round(grade.total, 2), "output": "\n".join(top_lines(grade)),
            "execution_time": round(grade.seconds, 1), "stdout_visibility": policy.stdout_visibility(), "tests": tests}


def top_lines(grade: Grade) -> List[str]:
    """The platforms' overall output: the status, each file's problem (once), notes, refusals."""
    return [f"status: {grade.status}"] + file_problems(grade) + grade.notes + grade.rejected


def not_a_handin(grade: Grade) -> List[str]:
    """Why the upload is no handin at all (so the student keeps the attempt),
    or [] when it is one. Only a file that is no readable tar is none: a tar
    without the files (an empty one, say) is a handin with every file
    missing, graded 0 here as in a batch and on Gradescope; its report
    names the files it lacks."""
    return list(grade.notes) if grade.status == NOT_A_HANDIN else []


def prairielearn_results(grade: Grade, show_hidden: bool = False) -> Dict:
    """PrairieLearn's results.json: score in [0, 1], a test per part with
    points and max_points and what the policy shows of its failures. An
    upload that is no handin, and a grade the grader can't vouch for, are
    `gradable: false`, so the student loses no attempt for either."""
    if grade.status == "grader error":
        return {"gradable": False, "format_errors": [
            "The autograder could not grade this submission, and it is not your files' fault: "
            + "; ".join(grade.notes[-2:]) + ". Submit again later; if it persists, tell the course staff."]}
    problems = not_a_handin(grade)
    if problems:
        return {"gradable": False, "format_errors": problems}
    tests = []
    for p in grade.parts:
        passed, cases = case_counts(p, show_hidden)
        failing = [line.strip() for line in failure_text(p, show_hidden, grade)]
        tests.append({"name": f"{p.key}: {p.title}", "description": f"{passed}/{cases} cases passed",
                      "points": round(p.points, 2), "max_points": p.max_points,
                      "message": failing[0] if failing else "all cases passed",
                      "output": "\n".join(failing)[:PL_TEST_OUTPUT]})
    return {"gradable": True, "score": round(grade.total / table.TOTAL_POINTS, 4),
            "message": f"{fmt(grade.total)} / {table.TOTAL_POINTS} points",
            "output": "\n".join(top_lines(grade))[:PL_TEST_OUTPUT],
            "tests": tests}


# PrairieLearn refuses a results.json over 1 MB: each text field stays far below.
PL_TEST_OUTPUT = 50000


def full_json(grade: Grade) -> Dict:
    return {"handin": grade.handin, "status": grade.status, "total": round(grade.total, 2),
            "max_total": table.TOTAL_POINTS, "seconds": round(grade.seconds, 2), "files": grade.files,
            "rejected": grade.rejected, "notes": grade.notes,
            "parts": [p.__dict__ for p in grade.parts], "sandbox": grade.sandbox, "limits": grade.limits,
            "steps": grade.steps, "jobs": grade.jobs, "output": grade.output, "traceback": grade.traceback}
