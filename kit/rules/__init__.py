"""Rules a part adds to the judge's comparison of a case's traffic.

kit/traffic.py compares what every part shares: each rank's calls, its kit
requests and its student calls' returns, against the reference's. Some
parts rule more: where each request was made, or how much memory the
program held when a call returned. Each such rule is a module here, named
by its part's row (kit/part_table.py, `rules`), with

    problems(got: Account, want: Account) -> List[str]

which says, in words, how one rank's account breaks it (kit/traffic.py's
Account: the side's marks of student calls are facts.CALL_MARKS entries,
facts.mark(...) names them); HEADING, if it has one, goes before them, and
JOINT (else "; ") between them. And optionally

    CPP_FACTS = {"kName": value, ...}

numbers the part's C++ reads too: kit/facts.py writes them into the
generated header as dtrain::facts::<module>::kName.

The judge loads a module only for the cases of a part whose row names it,
so a course's copy without the part has no need of its file.
"""
import importlib
from types import ModuleType
from typing import List


def load(name: str) -> ModuleType:
    """The rules module `name` (kit/rules/NAME.py)."""
    return importlib.import_module(f"kit.rules.{name}")


def modules(names) -> List[ModuleType]:
    """The rules `names`, in order."""
    return [load(n) for n in names]
