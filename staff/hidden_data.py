"""`make hidden-data` (staff): records what the reference's student functions
return in every case, public and hidden, of every part the build has, into
grader/hidden/expected.txt: the judge's values (kit/judge.py). The file never
enters the test binary or the sandbox; the grader's judge reads it outside.
Then it grades the reference against the new file, which must pass every case.

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

EXPECTED = os.path.join(KIT, "grader", "hidden", "expected.txt")


def record(binary: str) -> str:
    """The file's text: the reference's values in every case its parts have."""
    runs = [run for part in table.built_parts() for run in part.runs]
    tally = JobTally(observed={})
    launch = Launch(binary, max(r.ranks for r in runs), timeout=sum(r.job_seconds for r in runs), capture=True)
    outcomes = run_cases(launch, ":".join(r.filter for r in runs), tally)
    failed = [c for c, o in outcomes.items() if not o.passed]
    if tally.error or failed or not outcomes:
        raise SystemExit(f"hidden-data: the reference does not pass its own cases ({tally.error or failed[:5]}); "
                         "nothing recorded")
    return judge.dump(list(outcomes), tally.observed)


def main() -> int:
    binary = test_binary(build_dir(sys.argv[1] if len(sys.argv) > 1 else None), "reference")
    text = record(binary)
    with open(EXPECTED + ".tmp", "w") as f:
        f.write(text)
    os.replace(EXPECTED + ".tmp", EXPECTED)
    values = sum(1 for line in text.splitlines() if line.startswith("value "))
    cases = sum(1 for line in text.splitlines() if line.startswith("case "))
    print(f"hidden-data: {values} recorded values of {cases} cases in {os.path.relpath(EXPECTED, KIT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
