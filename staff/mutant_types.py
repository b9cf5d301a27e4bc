"""A known bug or a correct variant, as staff/mutants.py applies one to the
reference (staff/mutant_table.py and each extension part's
staff/part_mutants/KEY.py list them)."""
from typing import NamedTuple, Tuple


class Mutant(NamedTuple):
    name: str
    file: str
    find: str
    replace: str
    loses: Tuple[str, ...]    # parts that must lose points
    zero: Tuple[str, ...] = ()  # of those, parts that must score exactly 0
    says: Tuple[str, ...] = ()  # regular expressions each rank's first failure messages must match (what a report shows first)
    hangs: bool = False         # hangs case after case: run at kit.limits.HANG_SHARE of the limits
    hidden: bool = False        # shows only in the hidden cases: run with them, as the grader does
