"""`make hidden-data` (staff): records the expected values of the hidden
cases from the reference into grader/hidden/expected.txt. The values are
compiled into the test binary, so `make hidden-data` then rebuilds and grades
the reference, which must pass every hidden case against the new file.

Run it after changing grader/hidden/hidden_cases.cpp or the reference, and
commit the new expected.txt with the change.
"""
import os
import subprocess
import sys
import tempfile

from kit import parts as table
from kit.paths import KIT_DIR as KIT, KITRUN, build_dir, test_binary

EXPECTED = os.path.join(KIT, "grader", "hidden", "expected.txt")


def main() -> int:
    binary = test_binary(build_dir(sys.argv[1] if len(sys.argv) > 1 else None), "reference")
    by_ranks = {}
    for part in table.PARTS:
        for run in part.runs:
            if run.hidden:
                by_ranks.setdefault(run.ranks, []).append(run.filter)
    fd, raw = tempfile.mkstemp(prefix="kit-hidden-")
    os.close(fd)
    try:
        for ranks, filters in sorted(by_ranks.items()):
            cmd = [KITRUN, "-n", str(ranks), binary, "--gtest_filter=" + ":".join(filters), f"--record={raw}"]
            if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
                print(f"generate: recording failed: {' '.join(cmd)}")
                return 1
        with open(raw) as f:
            lines = sorted(f.readlines())
    finally:
        os.unlink(raw)
    out = EXPECTED
    with open(out, "w") as f:
        f.writelines(lines)
    print(f"generate: {len(lines)} recorded values in {os.path.relpath(out, KIT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
