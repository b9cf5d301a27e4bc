"""A grade: each part's result, scored from the cases' outcomes by the parts
table (kit/part_table.py), and what a grade says when nothing was graded. The
grading steps fill it in (grader/grading.py); reports.py writes it out and
rescore.py scores it again from its stored counts.
"""
import os
from dataclasses import dataclass, field
from typing import Dict, List

from kit import parts as table
from kit.outcomes import CaseOutcome


@dataclass
class PartResult:
    key: str
    title: str
    points: float
    max_points: int
    passed: int
    cases: int
    failures: List[Dict] = field(default_factory=list)  # case, hidden, lines
    hidden_cases: int = 0
    hidden_passed: int = 0
    # Every public case passes, every hidden one fails (kit/part_table.py,
    # unconfirmed): staff see the flag; the public cases earned nothing.
    unconfirmed: bool = False


@dataclass
class Grade:
    handin: str
    status: str = "graded"  # graded | not a readable handin | grader error
    parts: List[PartResult] = field(default_factory=list)
    files: Dict[str, Dict] = field(default_factory=dict)  # name -> {state, errors}
    rejected: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    seconds: float = 0.0
    output: str = ""
    sandbox: Dict = field(default_factory=dict)  # uid, namespaces, root, precompiled header
    traceback: str = ""  # of a grader error
    limits: Dict = field(default_factory=dict)   # the machine's (kit/host_limits.py: CPUs, memory, ...)
    steps: Dict[str, float] = field(default_factory=dict)  # seconds each step took
    jobs: List[Dict] = field(default_factory=list)         # each test job's seconds and cases (kit/jobs.py)

    @property
    def total(self) -> float:
        return sum(p.points for p in self.parts)

    def scores(self) -> Dict[str, float]:
        got = {p.key: round(p.points, 2) for p in self.parts}
        return {p.key: got.get(p.key, 0.0) for p in table.PARTS}


NOT_A_HANDIN = "not a readable handin"


def not_readable_sentence(handin: str, why: str) -> str:
    """The one sentence a student reads about an upload that is no handin."""
    return (f"{os.path.basename(handin)} is not a readable tar archive ({why}): upload the handin.tar that "
            "`make handin` writes in your copy of the kit.")


def nothing_graded() -> List[PartResult]:
    """Every part at 0 with no case run: the handin never reached the tests."""
    return [PartResult(p.key, p.title, 0.0, p.points, 0, 0) for p in table.PARTS]


def score_part(part: table.Part, outcomes: Dict[str, CaseOutcome], files: Dict[str, Dict]) -> PartResult:
    mine = {c: o for c, o in outcomes.items() if part.owns(c)}
    result = PartResult(part.key, part.title, part.score({c: o.passed for c, o in mine.items()}), part.points,
                        sum(o.passed for o in mine.values()), len(mine),
                        hidden_cases=sum(c.startswith("Hidden") for c in mine),
                        hidden_passed=sum(o.passed for c, o in mine.items() if c.startswith("Hidden")),
                        unconfirmed=part.unconfirmed({c: o.passed for c, o in mine.items()}))
    broken = [f for f in part.files if files.get(f, {}).get("state") != "compiled"]
    for case, outcome in mine.items():
        if outcome.passed:
            continue
        hidden = case.startswith("Hidden")
        lines = outcome.summary(max_lines=6)
        if broken:
            lines = [f"{', '.join(broken)} {files[broken[0]]['state']}: graded with the stub"] + lines[:1]
        result.failures.append({"case": case, "hidden": hidden, "lines": lines})
    for gate in part.gate_failed({c: o.passed for c, o in mine.items()}):
        result.failures.append({"case": gate, "hidden": gate.startswith("Hidden"),
                                "lines": [f"this case gates {part.key}: the part scores 0"]})
    return result
