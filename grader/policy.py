"""What students see of the cases they fail, as the course sets it
(course.toml, [visibility]; kit/course.py checks the values).

For public and hidden cases separately, `show` says what the human report,
the Autolab output and Gradescope's visible fields contain for a failing
case:
  "messages"  the case's name and its failure messages
  "names"     the case's name only
  "counts"    how many cases of the part failed, nothing more
  "nothing"   not even that
and `after_due_date` whether Gradescope also gets the full messages in an
entry students see only after the due date. `grader/grade --show-hidden`
(staff) shows everything everywhere; the --json report always does.

A hidden case's name, messages and inputs never reach a student: its
level is "counts" or "nothing", with no after-due-date entry (its messages
hold the hidden values the judge compared). Hidden cases run in jobs of
their own (kit/jobs.py, run_parts), so nothing of them travels in a public
case's messages either.
"""
from dataclasses import dataclass

from kit.course import LEVELS
from kit import parts as table


@dataclass(frozen=True)
class Visibility:
    show: str
    after_due_date: bool


# kit/course.py refuses a course file that breaks the asserts; a policy that
# did would show hidden values to students.
def public_cases() -> Visibility:
    course = table.COURSE
    assert course.public in LEVELS
    return Visibility(show=course.public, after_due_date=course.public_after_due_date)


def hidden_cases() -> Visibility:
    shown = Visibility(show=table.COURSE.hidden, after_due_date=False)
    assert shown.show in ("counts", "nothing") and not shown.after_due_date
    return shown


def stdout_visibility() -> str:
    """Gradescope's own setting for the autograder's whole output (its stdout):
    "visible", "hidden", "after_due_date" or "after_published"."""
    return table.COURSE.gradescope_stdout


EVERYTHING = Visibility(show="messages", after_due_date=False)


def for_case(hidden: bool, show_hidden: bool = False) -> Visibility:
    if show_hidden:
        return EVERYTHING
    return hidden_cases() if hidden else public_cases()
