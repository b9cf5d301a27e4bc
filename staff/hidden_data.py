"""`make hidden-data` (staff): records what the reference's student functions
return in every case, public and hidden, of every part the build has, each
part's cases run as a grading runs them (kit/jobs.py, run_parts: the driven
parts in the driven harness's jobs, so each call's account is the one a
handin's is compared with): the
judge's values (kit/judge.py), and, for the parts whose rules are about
traffic (kit/part_table.py, `traffic`), what the ranks' MPI sides carried in
each case (kit/traffic.py). Each part's go to files of its own
(Part.values_paths): the public cases' to tests/KEY/expected_values.txt,
which ships with the handout; the hidden cases' to
grader/hidden/KEY/expected.txt, which never enters the test binary or the
sandbox; the salt to grader/hidden/salt.txt. Then the Makefile grades the
reference against the new values, which must pass every case.

Run it after changing a case (tests/, grader/hidden/) or the reference, and
commit the new files of values with the change.
    python3 -m staff.hidden_data [BUILD_DIR] [--new-salt]

The hidden cases' inputs are salted (tests/harness/kit_test.h, salted) with the salt
grader/hidden/salt.txt holds; the first recording, or --new-salt, draws a
new one, which changes every hidden input and value.
"""
import os
import secrets
import sys
from typing import Dict, List

from kit import judge
from kit import parts as table
from kit.jobs import Driven, run_parts
from kit.launch import JobTally
from kit.part_types import Part
from kit.paths import KIT_DIR as KIT, build_dir, test_binary

def record(build: str, salt: int) -> Dict[str, str]:
    """The files' texts, by path: the reference's values in every case its
    parts have, the hidden cases' with their inputs salted by `salt`, each
    part's cases run as a grading runs them (the driven parts driven)."""
    tally = JobTally(observed={}, observed_traffic={})
    outcomes = run_parts(test_binary(build, "reference"), table.built_parts(), hidden=True, tally=tally,
                         launch_args={"capture": True}, driven=Driven.of_build(build, "reference"),
                         hidden_salt=salt).outcomes
    failed = [c for c, o in outcomes.items() if not o.passed]
    if tally.error or failed or not outcomes:
        raise SystemExit(f"hidden-data: the reference does not pass its own cases ({tally.error or failed[:5]}); "
                         "nothing recorded")
    return texts(list(outcomes), tally.observed, tally.observed_traffic, salt, table.built_parts())


def texts(cases: List[str], values: Dict, traffic: Dict, salt: int, parts: List[Part]) -> Dict[str, str]:
    """Each part's files of values (Part.values_paths: the public cases' and
    the hidden cases'; Part 8's halves share theirs), the traffic of the
    parts whose rules are about it, and the salt's file."""
    out = {judge.SALT: judge.dump([], {}, salt)}
    for hidden in (False, True):
        for path in dict.fromkeys(p.values_paths()[hidden] for p in parts):
            owners = [p for p in parts if p.values_paths()[hidden] == path]
            mine = [c for c in cases if c.startswith("Hidden") == hidden and any(p.owns(c) for p in owners)]
            ruled = [p for p in owners if p.traffic]
            out[path] = judge.dump(mine, {c: v for c, v in values.items() if c in mine}, None,
                                   {c: a for c, a in traffic.items() if c in mine and any(p.owns(c) for p in ruled)})
    return out


def course_salt(new: bool) -> int:
    """The salt of the hidden inputs (grader/hidden/salt.txt), or a new random
    one (the first recording, or --new-salt: every hidden input changes)."""
    path = os.path.join(KIT, judge.SALT)
    old = judge.load(path).salt if os.path.isfile(path) else None
    return secrets.randbits(63) + 1 if new or old is None else old


def write(files: Dict[str, str]) -> None:
    for path, text in files.items():
        full = os.path.join(KIT, path)
        with open(full + ".tmp", "w") as f:
            f.write(text)
        os.replace(full + ".tmp", full)
        values = sum(1 for line in text.splitlines() if line.startswith("value "))
        cases = sum(1 for line in text.splitlines() if line.startswith("case "))
        if cases:
            print(f"hidden-data: {values} recorded values of {cases} cases in {path}")


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--new-salt"]
    write(record(build_dir(args[0] if args else None), course_salt("--new-salt" in sys.argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
