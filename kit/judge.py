"""The judge: decides cases from what student functions returned, in a
process that runs no student code.

The test binary's ranks hand over, as value records (tests/harness/records.h), what
each student function returned (framework/calls/observe.h). The expected values
were recorded from the reference by `make hidden-data`, in files of each
part's own (Part.values_paths, kit/part_types.py): the public cases' beside
its tests (tests/KEY/expected_values.txt; they ship with the handout, so
`make test` judges as the grader does), the hidden cases' beside its hidden
cases (grader/hidden/KEY/expected.txt), which never enter the sandbox or
the test binary, and the salt of the hidden inputs in grader/hidden/salt.txt.
A platform's bundle holds the graded parts' hidden values and the salt in one
file instead (staff/bundles.py), which the grader is given or finds at
grader/hidden/expected.txt. A case with recorded values passes only if every rank returned,
under every recorded label, a value of the recorded shape within the kit's
tolerance (absolute plus relative 1e-9, as tests/harness/kit_test.cpp), and nothing
more. So a handin can offer wrong values but never a verdict.

Each file has one line per case the reference ran and one per value:
    case <Suite.Case>
    value <Suite.Case> <label> <rank> <rows> <cols> <stride> <v0> <v1> ...
and, for the parts whose rules are about traffic, one per rank of a case
with what its MPI side carried (kit/traffic.py):
    traffic <Suite.Case> <rank> <op>:<elements>:<ranks>:<times> ...
and the salt's file (or a bundle's one file) a line with the salt of the hidden cases'
inputs (tests/harness/kit_test.h, salted), which the runner hands to jobs of hidden
cases only:
    salt <whole number>
"""
import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from kit import traffic as traffic_accounts
from kit.part_table import TABLE
from kit.records import Observed

MAX_DIFFERENCES_SHOWN = 1


def tolerance(e: float) -> float:
    return 1e-9 + 1e-9 * abs(e)


@dataclass
class Expected:
    cases: List[str] = field(default_factory=list)
    values: Dict[str, Dict[Tuple[str, int], Observed]] = field(default_factory=dict)
    salt: Optional[int] = None  # of the hidden cases' inputs; None: unsalted
    # case -> rank -> the reference's traffic, as its MPI side accounted it (kit/traffic.py)
    traffic: Dict[str, Dict[int, traffic_accounts.Account]] = field(default_factory=dict)


def load(path: str) -> Expected:
    out = Expected()
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words:
                continue
            if words[0] == "case" and len(words) == 2:
                out.cases.append(words[1])
            elif words[0] == "salt" and len(words) == 2 and words[1].isdigit() and int(words[1]) < 1 << 64:
                out.salt = int(words[1])
            elif words[0] == "value" and len(words) >= 7:
                case, label, rank, rows, cols, stride = words[1], words[2], int(words[3]), int(words[4]), \
                    int(words[5]), int(words[6])
                out.values.setdefault(case, {})[(label, rank)] = Observed(rows, cols, stride,
                                                                          [float(v) for v in words[7:]])
            elif words[0] == "traffic":
                try:
                    traffic_accounts.load_line(words, out.traffic)
                except ValueError as e:
                    raise ValueError(f"{path}:{number}: {e}") from None
            else:
                raise ValueError(f"{path}:{number}: not a line of the expected-values file")
    return out


def dump(cases: List[str], values: Dict[str, Dict[Tuple[str, int], Observed]], salt: Optional[int] = None,
         traffic: Optional[Dict[str, Dict[int, traffic_accounts.Account]]] = None) -> str:
    """The file's text for the reference's run (`make hidden-data`), sorted so a change reads as a diff."""
    lines = ([f"salt {salt}"] if salt is not None else []) + [f"case {c}" for c in sorted(set(cases))]
    for case in sorted(traffic or {}):
        lines += traffic_accounts.dump_lines(case, traffic[case])
    for case in sorted(values):
        for (label, rank), v in sorted(values[case].items(), key=lambda kv: (kv[0][0], kv[0][1])):
            numbers = " ".join(repr(x) for x in v.values)
            lines.append(f"value {case} {label} {rank} {v.rows} {v.cols} {v.stride} {numbers}".rstrip())
    return "\n".join(lines) + "\n"


def _shown(x: Optional[float]) -> str:
    return "nothing (not a finite number)" if x is None else repr(x) if x != int(x) or abs(x) > 1e15 else str(int(x))


def _what(label: str) -> str:
    """"forward#2" -> "the 2nd forward" (a student sees the function, not the label)."""
    name, _, n = label.partition("#")
    name = name[len("recorded."):] if name.startswith("recorded.") else name
    nth = {"1": "", "2": "2nd ", "3": "3rd "}.get(n, f"{n}th ")
    return f"{name} ({nth}call)" if nth else name


def compare(label: str, got: Observed, want: Observed) -> Optional[str]:
    what = _what(label)
    if (got.rows, got.cols) != (want.rows, want.cols):
        return f"{what} has shape ({got.rows}, {got.cols}), expected ({want.rows}, {want.cols})"
    if got.stride != want.stride or len(got.values) != len(want.values):
        return f"{what}: the values recorded do not match the shape ({len(got.values)} given)"
    wrong, first = 0, None
    for i, (a, e) in enumerate(zip(got.values, want.values)):
        if a is not None and math.isfinite(a) and abs(a - e) <= tolerance(e):
            continue
        wrong += 1
        if first is None:
            first = i
    if first is None:
        return None
    at = first * want.stride
    cols = max(want.cols, 1)
    e, a = want.values[first], got.values[first]
    diff = "" if a is None else f" (difference {a - e:.3g}, tolerance {tolerance(e):.3g})"
    checked = f"{len(want.values)} checked" if want.stride > 1 else f"{len(want.values)}"
    return (f"{what} differs at ({at // cols}, {at % cols}): expected {_shown(e)}, got {_shown(a)}{diff}; "
            f"{wrong} of {checked} elements differ")


def judge_case(case: str, observed: Dict[Tuple[str, int], Observed], expected: Expected,
               doubled: int = 0) -> List[Dict]:
    """The failures the judge finds in one case ({"rank", "message"}); none if it agrees."""
    want = expected.values.get(case, {})
    failures: List[Dict] = []
    for (label, rank), value in sorted(want.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        got = observed.get((label, rank))
        if got is None:
            failures.append({"rank": rank, "message": f"{_what(label)} returned nothing here, where the reference "
                                                      "returned a value (the call did not finish?)"})
            continue
        why = compare(label, got, value)
        if why:
            failures.append({"rank": rank, "message": why})
    extra = sorted(k for k in observed if k not in want)
    if extra:  # the label is not quoted: code under test wrote it, and the message is the student's to read
        failures.append({"rank": extra[0][1], "message": f"integrity: {len(extra)} value(s) the reference never "
                                                         "returned in this case (records written by code under "
                                                         "test?)"})
    if doubled:
        failures.append({"rank": None, "message": f"integrity: {doubled} value(s) given twice for one call "
                                                  "(records written by code under test?)"})
    return failures


# The public cases' values ship with the handout (they tell nothing the
# public tests don't), so `make test` judges as the grader does; the hidden
# cases' stay with the grader.
SALT = os.path.join("grader", "hidden", "salt.txt")
# A platform's one file of hidden values (staff/bundles.py): the salt and the graded parts'.
BUNDLED = os.path.join("grader", "hidden", "expected.txt")


def public_files() -> List[str]:
    """Each part's public values, relative to the kit (Part 8's halves share theirs)."""
    return list(dict.fromkeys(p.values_paths()[0] for p in TABLE))


def hidden_files() -> List[str]:
    """The salt, and each part's hidden values, relative to the kit."""
    return [SALT] + list(dict.fromkeys(p.values_paths()[1] for p in TABLE))


def files(kit_dir: str, hidden: Optional[str] = None) -> Tuple[List[str], List[str]]:
    """(the public values' files, the hidden values' files) that exist: the
    hidden ones from `hidden` where given (from elsewhere than the kit, such
    as PrairieLearn's serverFilesCourse), else a bundle's one file, else the
    salt and each part's."""
    public = [os.path.join(kit_dir, f) for f in public_files() if os.path.isfile(os.path.join(kit_dir, f))]
    if hidden:
        return public, [hidden] if os.path.isfile(hidden) else []
    if os.path.isfile(os.path.join(kit_dir, BUNDLED)):
        return public, [os.path.join(kit_dir, BUNDLED)]
    return public, [os.path.join(kit_dir, f) for f in hidden_files() if os.path.isfile(os.path.join(kit_dir, f))]


def load_all(paths: List[str]) -> Expected:
    out = Expected()
    for path in paths:
        one = load(path)
        out.cases += one.cases
        out.values.update(one.values)
        out.traffic.update(one.traffic)
        out.salt = one.salt if one.salt is not None else out.salt
    return out
