"""`make hidden-data` (staff): records what the reference's student functions
return in every case, public and hidden, of every part the build has, each
part's cases run as a grading runs them (kit/jobs.py, run_parts: the driven
parts in the driven harness's jobs, so each call's account is the one a
handin's is compared with): the
judge's values (kit/judge.py), and, for the parts whose rules are about
traffic (kit/part_table.py, `traffic`), what the ranks' MPI sides carried in
each case (kit/traffic.py). The public cases' go to
tests/expected_values.txt, which ships with the handout; the hidden cases'
to grader/hidden/expected.txt, which never enters the test binary or the
sandbox. Then the Makefile grades the reference against the new values,
which must pass every case.

Run it after changing a case (tests/, grader/hidden/) or the reference, and
commit the new expected.txt with the change.
    python3 -m staff.hidden_data [BUILD_DIR] [--new-salt]

The hidden cases' inputs are salted (tests/harness/kit_test.h, salted) with the salt
the hidden values' file holds; the first recording, or --new-salt, draws a
new one, which changes every hidden input and value.
"""
import os
import secrets
import sys

from kit import judge
from kit import parts as table
from kit.jobs import Driven, run_parts
from kit.launch import JobTally
from kit.paths import KIT_DIR as KIT, build_dir, test_binary

def record(build: str, salt: int) -> dict:
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
    ruled = [part for part in table.built_parts() if part.traffic]
    texts = {}
    for path, hidden in ((judge.PUBLIC, False), (judge.HIDDEN, True)):
        cases = [c for c in outcomes if c.startswith("Hidden") == hidden]
        traffic = {c: a for c, a in tally.observed_traffic.items()
                   if c in cases and any(part.owns(c) for part in ruled)}
        texts[path] = judge.dump(cases, {c: v for c, v in tally.observed.items() if c in cases},
                                 salt if hidden else None, traffic)
    return texts


def course_salt(new: bool) -> int:
    """The salt the hidden values' file holds, or a new random one (the
    first recording, or --new-salt: every hidden input changes)."""
    path = os.path.join(KIT, judge.HIDDEN)
    old = judge.load(path).salt if os.path.isfile(path) else None
    return secrets.randbits(63) + 1 if new or old is None else old


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--new-salt"]
    for path, text in record(build_dir(args[0] if args else None), course_salt("--new-salt" in sys.argv[1:])).items():
        full = os.path.join(KIT, path)
        with open(full + ".tmp", "w") as f:
            f.write(text)
        os.replace(full + ".tmp", full)
        values = sum(1 for line in text.splitlines() if line.startswith("value "))
        cases = sum(1 for line in text.splitlines() if line.startswith("case "))
        print(f"hidden-data: {values} recorded values of {cases} cases in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
