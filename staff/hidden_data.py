"""`make hidden-data` (staff): records what the reference's student functions
return in every case, public and hidden, of every part the build has: the
judge's values (kit/judge.py). The public cases' go to
tests/expected_values.txt, which ships with the handout; the hidden cases'
to grader/hidden/expected.txt, which never enters the test binary or the
sandbox. Then the Makefile grades the reference against the new values,
which must pass every case.

Run it after changing a case (tests/, grader/hidden/) or the reference, and
commit the new expected.txt with the change.
    python3 -m staff.hidden_data [BUILD_DIR]
"""
import os
import sys

from kit import judge
from kit import parts as table
from kit.jobs import JobTally, Launch, run_cases
from kit.paths import KIT_DIR as KIT, build_dir, test_binary

def record(binary: str) -> dict:
    """The files' texts, by path: the reference's values in every case its parts have."""
    runs = [run for part in table.built_parts() for run in part.runs]
    tally = JobTally(observed={})
    launch = Launch(binary, max(r.ranks for r in runs), timeout=sum(r.job_seconds for r in runs), capture=True)
    outcomes = run_cases(launch, ":".join(r.filter for r in runs), tally)
    failed = [c for c, o in outcomes.items() if not o.passed]
    if tally.error or failed or not outcomes:
        raise SystemExit(f"hidden-data: the reference does not pass its own cases ({tally.error or failed[:5]}); "
                         "nothing recorded")
    texts = {}
    for path, hidden in ((judge.PUBLIC, False), (judge.HIDDEN, True)):
        cases = [c for c in outcomes if c.startswith("Hidden") == hidden]
        texts[path] = judge.dump(cases, {c: v for c, v in tally.observed.items() if c in cases})
    return texts


def main() -> int:
    binary = test_binary(build_dir(sys.argv[1] if len(sys.argv) > 1 else None), "reference")
    for path, text in record(binary).items():
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
